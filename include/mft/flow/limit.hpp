// The mean-field reference (docs/model.md, 'Depth as time'): for a parameter law that does
// not depend on depth (i.i.d. initialisation), the limit velocity
// E_theta[Attn_theta(x)] is approximated by one ensemble of H_ref heads shared
// by every depth, and the token ODE is integrated adaptively (TSRK 5dp) to a
// tight tolerance. The adjoint p(0) is that of the per-token quantity
// 1/2 |x_i(1)|^2 (p(1) = x(1)), integrated back along the same steps.
#pragma once

#include "mft/flow/problem.hpp"
#include "mft/flow/samples.hpp"

#include <vector>

namespace mft {

// The adaptive reference's price in layers: its solver's evaluations of the
// velocity (TSRK 5dp: 6 stages a step) over a typical solve and its adjoint,
// fitted to the shipped studies at initialisation (docs/scaling.md).
constexpr double kLimitEvaluations = 90;


struct LimitResult {
  std::vector<double> tokens;  // x(1), (M, N, d)
  std::vector<double> adjoint; // p(0), (M, N, d); with weighted tokens per unit of mass (M dR/dx_i / w_i)
  std::vector<double> weights; // the probes' weights (M, N); empty: 1/N each
  PetscInt steps = 0, rejected = 0;
};

// Settings for the reference (or, with limit.scheme = euler, the Euler model
// with the same shared ensemble) built from s: model.H = limit.heads, one
// layer of heads, zero targets.
// Not collective.
Settings LimitSettingsFor(const Settings &s);

// x(1) and p(0) of the probes (the data of s) under the scheme of s, which
// LimitSettingsFor or a discrete model's settings (with zero_targets) made;
// with `params`, at those heads (and neurons) instead of the initial ones.
// With a trajectory and output.trajectory = S > 0, also x(s) and the per-token
// adjoint p(s) at the S + 1 depths k / S (the caller destroys it).
// Collective on comm.
PetscErrorCode LimitSolve(MPI_Comm comm, const Settings &s, LimitResult *r, const ModelParams *params = nullptr,
                          Trajectory *trajectory = nullptr);

// The diffusive limit (docs/model.md, 'The diffusive limit'): with a = c =
// 1/2 and centred value maps, x(1) is random, the end of the Ito SDE
// dX_i = W(ds, X_i; mu(s)) whose Gaussian field W (covariance C of one head)
// all tokens of all sequences share. Its weak Euler scheme of n steps draws
// step_heads heads afresh at every step, queries and keys of the model's law
// and value maps of the same covariance sigma^2/d I as the model's A (qkv
// heads, V of gain sigma): an increment of mean zero, covariance C h and
// odd moments zero, hence weak order 1 for any number of heads. It is the
// n x step_heads model at a = c = 1/2, and its paths are that model's samples.
//
// The extrapolation's pair can share its heads (limit.coupling): path p at n
// steps takes step j's heads from steps 2j and 2j + 1 of path p at 2n steps
// (CoarseHeads). With `halves`, half from each: distinct i.i.d. heads, so the
// n-step paths have exactly the n x step_heads scheme's law and the
// extrapolation today's bias, and the pair shares half of its noise. With
// `merged`, all of them: the n-step paths are the n x 2 step_heads scheme,
// which shares all of its noise with the fine paths but whose weak error
// constant differs (docs/model.md, 'Coupled estimators').
struct LimitPaths {
  Samples fine;   // the paths at 2n steps (at n without the extrapolation); each rank its block
  Samples coarse; // with the extrapolation: the paths at n steps
  bool coupled = false; // coarse path p made of fine path p's heads (limit.coupling)
  std::vector<double> gram_mean, gram_stderr; // (M, N, N): 2 E_2n - E_n (or E_n) and its standard error
};

// The law of paths: the Gram means' weighted sets, 2 fine - coarse (one
// coupled set, or two independent ones), or the fine paths alone when
// coarse is null or empty.
// Not collective.
Law PathsLaw(const Samples &fine, const Samples *coarse, bool coupled);

// sigma^2 with E A^T A = sigma^2 I for one head's value map: v_gain^2 (qkv), o_gain^2 v_gain^2 (qkvo).
// Not collective.
double ValueVariance(const Settings &s);

// The settings of the weak scheme of n steps for the model of s.
// Not collective.
Settings DiffusiveSchemeFor(const Settings &s, PetscInt n);

// Collective on comm. limit.paths paths of the SDE of the model of s (the
// data of s as probes) with limit.steps steps (and twice as many, with
// limit.richardson); path p is drawn from seed init.seed + p (the fine
// paths; uncoupled, the n-step ones from init.seed + paths + p). Each rank
// holds its block of the paths, and every rank the Gram means.
PetscErrorCode LimitPathsSolve(MPI_Comm comm, const Settings &s, LimitPaths *r);

} // namespace mft
