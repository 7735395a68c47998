// The mean-field reference: one shared ensemble, an adaptive solve, its adjoint.
#include "mft/limit.hpp"

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
  // dR/dx(0) of R = 1/(M N) sum 1/2 |x_i(1)|^2, times M N: the per-token adjoint.
  PetscCall(VecScale(p.adjoint, (PetscScalar)(p.tokens.M * p.tokens.N)));
  if (trajectory)
    for (Vec a : trajectory->adjoint)
      if (a) PetscCall(VecScale(a, (PetscScalar)(p.tokens.M * p.tokens.N)));
  PetscCall(GatherAll(p.x1, &r->tokens));
  PetscCall(GatherAll(p.adjoint, &r->adjoint));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(0);
}

} // namespace mft
