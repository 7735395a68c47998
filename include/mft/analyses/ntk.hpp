// The neural tangent kernel of attention (docs/model.md, 'The NTK').
//
// For the outputs F (pooled: W xbar[m](1), M*c of them; token: x[m,i](1),
// M*N*d of them) and J[l,h] = dF/dtheta[l,h],
//     NTK = (1/(L H)) sum_{l,h} (L H J[l,h]) (L H J[l,h])^T = L H J J^T,
// over every block (`full`) or the value blocks only (`value`: V, and O for
// qkvo heads: the blocks of the value map A). Row o of J is one adjoint solve
// seeded with dF_o/dx(1); only F_o's sequence is integrated (sequences do not
// interact). The rows stay where the heads live; the Gram matrix is one local
// product reduced over all ranks, and its spectrum comes from LAPACK.
#pragma once

#include "mft/flow/problem.hpp"

#include <cmath>
#include <vector>

namespace mft {

struct Ntk {
  PetscInt n = 0;                  // outputs
  std::vector<double> matrix;      // n x n, row-major, on every rank
  std::vector<double> eigenvalues; // ascending
};

// Outputs of the problem's output map.
// Not collective.
PetscInt NtkOutputs(const Problem &p);

// The NTK at the current heads, over `part` (full or value). Refuses, with
// the sizes named, a request whose rows and matrix exceed ntk.max_gb per rank.
// Collective on the problem's comm.
PetscErrorCode NtkCompute(Problem *p, NtkPart part, Ntk *k);

// The NTK at the start predicts the linearised rate of the risk (docs/model.md,
// 'The NTK'): in training time, R decays at least like exp(-2 lambda_min tau / n),
// n = M (pooled) or M N (token), while the heads stay near their start.
struct NtkRate {
  double lambda_min = NAN, lambda_max = NAN;
  double predicted = NAN; // 2 lambda_min / n
  double discrete = NAN;  // for gd steps of lr: the slowest mode shrinks by (1 - lr lambda_min / n) a step
  double fitted = NAN, fit_rms = NAN; // the rate of log R in training time, after training
  size_t from = 0, to = 0;            // the steps it was fitted on
};

// The prediction at the heads of p (train.ntk's part), printed.
// Collective on the problem's comm.
PetscErrorCode NtkRatePredict(Problem *p, const TrainSettings &t, NtkRate *r);

// The measured rate: log R against training time tau (the sum of the learning
// rates) over the second half of the steps before the risk reaches round-off
// (R > 1e-24 R_0); false when there are fewer than 4 steps.
// Not collective.
bool NtkRateFit(const std::vector<double> &loss, const TrainSettings &t, NtkRate *r);

} // namespace mft
