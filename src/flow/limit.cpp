// The mean-field reference: one shared ensemble, an adaptive solve, its adjoint.
#include "mft/flow/limit.hpp"

namespace mft {

Settings LimitSettingsFor(const Settings &in) {
  Settings s = in;
  s.model.H = s.limit.heads;
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

PetscErrorCode LimitSolve(MPI_Comm comm, const Settings &s, LimitResult *r, const std::vector<double> *heads,
                          Trajectory *trajectory) {
  Problem p;
  PetscFunctionBeginUser;
  PetscCall(ProblemCreate(comm, s, &p));
  if (heads) {
    PetscCall(SetFromAll(p.heads.theta, *heads));
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

} // namespace mft
