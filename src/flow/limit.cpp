// The mean-field reference: one shared ensemble, an adaptive solve, its adjoint.
#include "mft/flow/limit.hpp"

#include "mft/settings/options.hpp"

#include <cmath>

namespace mft {

Settings LimitSettingsFor(const Settings &in) {
  Settings s = in;
  s.model.H = s.limit.heads;
  s.scheme.expected_mlp = s.model.mlp(); // the neurons' law's drift itself
  s.scheme.shared = true;
  s.scheme.adaptive = s.limit.scheme == LimitScheme::rk;
  s.scheme.rtol = s.limit.rtol;
  s.scheme.atol = s.limit.atol;
  s.scheme.zero_targets = true;
  s.loss.kind = LossKind::token;
  // The ensemble is the run's record too.
  s.update("model.H", std::to_string(s.model.H));
  s.update("loss.kind", "token");
  return s;
}

// A token adjoint dR/dx per unit of mass, times M: M N dR/dx_i, or M dR/dx_i / w_i.
static PetscErrorCode PerMass(const TokenLayout &t, Vec adjoint) {
  PetscScalar *a;
  PetscFunctionBeginUser;
  if (!t.weighted()) {
    PetscCall(VecScale(adjoint, (PetscScalar)(t.M * t.N)));
    PetscFunctionReturn(0);
  }
  PetscCall(VecGetArray(adjoint, &a));
  for (PetscInt tok = t.owned.begin; tok < t.owned.end; ++tok)
    for (PetscInt c = 0; c < t.d; ++c) a[(tok - t.owned.begin) * t.d + c] *= (double)t.M / t.weights[tok];
  PetscCall(VecRestoreArray(adjoint, &a));
  PetscFunctionReturn(0);
}

PetscErrorCode LimitSolve(MPI_Comm comm, const Settings &s, LimitResult *r, const ModelParams *params,
                          Trajectory *trajectory) {
  Problem p;
  PetscFunctionBeginUser;
  PetscCall(ProblemCreate(comm, s, &p));
  if (params) {
    PetscCall(SetFromAll(p.heads.theta, params->heads));
    if (p.neurons.theta) PetscCall(SetFromAll(p.neurons.theta, params->neurons));
    PetscCall(ProblemSetHeads(&p));
  }
  if (trajectory) PetscCall(ProblemRecordTrajectory(&p, trajectory));
  PetscCall(ProblemEvaluate(&p, PETSC_TRUE));
  r->steps = p.flow.steps;
  r->rejected = p.flow.rejected;
  // dR/dx(0) of R = 1/(M N) sum 1/2 |x_i(1)|^2, times M N: the per-token
  // adjoint (with weighted tokens R = 1/M sum w_i 1/2 |x_i(1)|^2, times M /
  // w_i: the gradient per unit of mass, which a repeated token's copies share).
  PetscCall(PerMass(p.tokens, p.adjoint));
  if (trajectory)
    for (Vec a : trajectory->adjoint)
      if (a) PetscCall(PerMass(p.tokens, a));
  PetscCall(GatherAll(p.x1, &r->tokens));
  PetscCall(GatherAll(p.adjoint, &r->adjoint));
  r->weights = p.tokens.weights;
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(0);
}

double ValueVariance(const Settings &s) {
  const double v = s.init.v_gain * s.init.v_gain;
  return s.model.head_kind == HeadKind::qkv ? v : s.init.o_gain * s.init.o_gain * v;
}

Settings DiffusiveSchemeFor(const Settings &s, PetscInt n) {
  Settings q = s;
  q.model.L = n;
  q.model.H = s.limit.step_heads;
  q.model.head_kind = HeadKind::qkv; // A itself: only its covariance enters the SDE
  q.model.depth_exponent = q.model.head_exponent = 0.5;
  q.init.v_gain = std::sqrt(ValueVariance(s));
  q.init.v_mean = 0;
  if (q.model.mlp()) { // step_heads fresh neurons a step: the noise of w's covariance times sigma's kernel
    q.model.mlp_width = s.limit.step_heads;
    q.model.mlp_depth_exponent = q.model.mlp_width_exponent = 0.5;
    q.init.mlp_w_mean = 0;
  }
  return q;
}

PetscErrorCode LimitPathsSolve(MPI_Comm comm, const Settings &s, LimitPaths *r) {
  const PetscInt S = s.limit.paths, n = s.limit.steps;
  PetscFunctionBeginUser;
  PetscCheck(s.model.diffusive(), comm, PETSC_ERR_USER_INPUT,
             "the diffusive limit is that of model.depth_exponent = model.head_exponent = 0.5 (given %s and %s)",
             format_real(s.model.depth_exponent).c_str(), format_real(s.model.head_exponent).c_str());
  PetscCheck(s.init.v_mean == 0 && (s.model.head_kind == HeadKind::qkv || s.init.o_mean == 0), comm,
             PETSC_ERR_USER_INPUT,
             "the diffusive limit needs value maps of mean zero and covariance sigma^2/d I: init.v_mean = 0%s (given "
             "init.v_mean = %s, init.o_mean = %s); with a drift the 1/sqrt(L) model has no limit",
             s.model.head_kind == HeadKind::qkvo ? " and init.o_mean = 0" : "", format_real(s.init.v_mean).c_str(),
             format_real(s.init.o_mean).c_str());
  PetscCheck(!s.model.mlp() || (s.model.mlp_depth_exponent == 0.5 && s.model.mlp_width_exponent == 0.5 &&
                                 s.init.mlp_w_mean == 0),
             comm, PETSC_ERR_USER_INPUT,
             "the diffusive limit's MLP sublayers are those of model.mlp_depth_exponent = model.mlp_width_exponent = "
             "0.5 and init.mlp_w_mean = 0 (given %s, %s and %s): their noise has the kernel of centred w",
             format_real(s.model.mlp_depth_exponent).c_str(), format_real(s.model.mlp_width_exponent).c_str(),
             format_real(s.init.mlp_w_mean).c_str());
  const LimitCoupling coupling = s.limit.richardson ? s.limit.coupling : LimitCoupling::independent;
  PetscCheck(coupling != LimitCoupling::halves || s.limit.step_heads % 2 == 0, comm, PETSC_ERR_USER_INPUT,
             "limit.coupling = halves (the default) takes half of each fine step's heads into a coarse step: "
             "limit.step_heads must be even (given %" PetscInt_FMT "), or give limit.coupling independent",
             s.limit.step_heads);
  r->coupled = coupling != LimitCoupling::independent;
  if (!s.limit.richardson)
    PetscCall(SamplesForward(comm, DiffusiveSchemeFor(s, n), S, &r->fine));
  else if (r->coupled) {
    Settings coarse = DiffusiveSchemeFor(s, n);
    if (coupling == LimitCoupling::merged) coarse.model.H = 2 * s.limit.step_heads;
    PetscCall(SamplesForwardPair(comm, DiffusiveSchemeFor(s, 2 * n), coarse, S, &r->fine, &r->coarse));
  } else {
    PetscCall(SamplesForward(comm, DiffusiveSchemeFor(s, 2 * n), S, &r->fine));
    PetscCall(SamplesForward(comm, DiffusiveSchemeFor(s, n), S, &r->coarse, (std::uint64_t)S));
  }
  PetscCall(GramOf(comm, PathsLaw(r->fine, &r->coarse, r->coupled), r->fine.M, r->fine.N, r->fine.d, &r->gram_mean,
                   &r->gram_stderr));
  PetscFunctionReturn(0);
}

Law PathsLaw(const Samples &fine, const Samples *coarse, bool coupled) {
  if (!coarse || coarse->S == 0) return {SamplesSet(fine)};
  if (!coupled) return {SamplesSet(fine, 2.0), SamplesSet(*coarse, -1.0)};
  return {SampleSet({{fine.tokens.data(), 2.0}, {coarse->tokens.data(), -1.0}}, fine.S, fine.block.size())};
}

} // namespace mft
