// The mean-field reference (docs/model.md, 'Depth as time'): for a parameter law that does
// not depend on depth (i.i.d. initialisation), the limit velocity
// E_theta[Attn_theta(x)] is approximated by one ensemble of H_ref heads shared
// by every depth, and the token ODE is integrated adaptively (TSRK 5dp) to a
// tight tolerance. The adjoint p(0) is that of the per-token quantity
// 1/2 |x_i(1)|^2 (p(1) = x(1)), integrated back along the same steps.
#pragma once

#include "mft/flow/problem.hpp"

#include <vector>

namespace mft {

struct LimitResult {
  std::vector<double> tokens;  // x(1), (M, N, d)
  std::vector<double> adjoint; // p(0), (M, N, d); with weighted tokens per unit of mass (M dR/dx_i / w_i)
  std::vector<double> weights; // the probes' weights (M, N); empty: 1/N each
  PetscInt steps = 0, rejected = 0;
};

// Settings for the reference (or, with limit.scheme = euler, the Euler model
// with the same shared ensemble) built from s: model.H = limit.heads, one
// layer of heads, zero targets.
Settings LimitSettingsFor(const Settings &s);

// x(1) and p(0) of the probes (the data of s) under the scheme of s, which
// LimitSettingsFor or a discrete model's settings (with zero_targets) made;
// with `heads` (all of theta, natural order), at those heads instead of the initial ones.
// With a trajectory and output.trajectory = S > 0, also x(s) and the per-token
// adjoint p(s) at the S + 1 depths k / S (the caller destroys it).
PetscErrorCode LimitSolve(MPI_Comm comm, const Settings &s, LimitResult *r, const std::vector<double> *heads = nullptr,
                          Trajectory *trajectory = nullptr);

} // namespace mft
