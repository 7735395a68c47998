// The log-sum-exp independence test (docs/model.md, 'The NTK'; seed 1).
//
// For the M token distributions of the data (mu_m: sequence m's N tokens, or
// with lse.mode = closed the family's law itself), evaluate
// f_m(a) = lse_{mu_m}(a) = log integral exp(<a, y>) dmu_m(y) at `points`
// points a drawn uniformly in the ball of radius `radius`, remove from each
// column its least-squares affine part (1, a_1 .. a_d), and report the Gram
// matrix of what remains, G = R^T R / points, and its eigenvalues. Seed 1:
// the V-part of the NTK is positive definite iff the f_m are linearly
// independent modulo affine functions, i.e. iff lambda_min(G) > 0.
// The points are split over the ranks; the sums are reduced.
#pragma once

#include "mft/settings/settings.hpp"

#include <vector>

namespace mft {

struct LseResult {
  PetscInt M = 0;
  std::vector<double> gram;        // M x M
  std::vector<double> eigenvalues; // ascending
  double relative_min = 0;         // lambda_min / lambda_max
};

// Collective on comm.
PetscErrorCode LseTest(MPI_Comm comm, const Settings &s, LseResult *r);

} // namespace mft
