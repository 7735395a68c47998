// The heads' diversity (docs/model.md, 'The heads' diversity'): how
// differently a layer's heads attend, at the tokens that enter the layer,
//   D = mean over layers l and sequences m of (1/H) sum_h |A_lhm - Abar_lm|_F^2,
// A_lhm head h's N x N attention matrix over sequence m (plain_attention:
// the softmax of beta k^-g x_i^T Q^T K x_j over the keys row i sees, keys
// weighted by their mass) and Abar_lm the mean of layer l's H of them. D
// is 0 when every head of a layer attends alike (one head, beta = 0, heads
// that collapsed to one) and below 2 N (each row is a probability vector).
#pragma once

#include "mft/flow/trajectory.hpp"
#include "mft/settings/settings.hpp"

#include <vector>

namespace mft {

// heads: all of theta (natural order), on every rank; t: the slices of the
// model's forward at the L + 1 depths l / L (LimitSolve with
// output.trajectory = model.L), slice l the tokens entering layer l;
// weights: the sequences' key masses (M, N), or empty.
// Collective on comm: each rank forms the matrices of its share of every
// layer's heads, and the sums are reduced over the ranks.
PetscErrorCode HeadDiversity(MPI_Comm comm, const ModelSettings &m, const std::vector<double> &heads,
                             const Trajectory &t, const std::vector<double> &weights, double *D);

} // namespace mft
