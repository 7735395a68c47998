// Token trajectories: the depth slices, their memory check and their output.
#include "mft/flow/trajectory.hpp"


#include <string>

namespace mft {

bool Trajectory::complete(const std::vector<char> &have) const {
  for (char h : have)
    if (!h) return false;
  return !have.empty();
}

PetscErrorCode TrajectoryCheck(MPI_Comm comm, const Settings &s, bool with_adjoint) {
  const PetscInt S = s.output.trajectory;
  PetscFunctionBeginUser;
  if (S == 0) PetscFunctionReturn(0);
  PetscCheck(s.scheme.adaptive || s.model.L % S == 0, comm, PETSC_ERR_USER_INPUT,
             "output.trajectory = %" PetscInt_FMT " does not divide model.L = %" PetscInt_FMT
             ": the depths k/S must fall on layers",
             S, s.model.L);
  // Every rank keeps its rows of each slice; the adaptive solve's time span
  // keeps one more copy of the tokens.
  const double copies = 1.0 + (with_adjoint ? 1.0 : 0.0) + (s.scheme.adaptive ? 1.0 : 0.0);
  const double bytes = copies * (double)(S + 1) * (double)s.data.M * (double)s.data.N * (double)s.model.d * 8.0;
  PetscMPIInt size, node_size;
  double available, worst[2];
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(NodeMemory(comm, &available, &node_size));
  const double need = bytes * (double)node_size / (double)size;
  double mine[2] = {need - available, need};
  PetscCallMPI(MPI_Allreduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, comm));
  PetscCheck(worst[0] <= 0, comm, PETSC_ERR_USER_INPUT,
             "output.trajectory = %" PetscInt_FMT " needs %.3g GiB on a node (%" PetscInt_FMT
             " slices of %.3g GiB%s), more than its %.3g GiB available: use a smaller S or more nodes",
             S, worst[1] / 1073741824.0, S + 1, bytes / copies / (double)(S + 1) / 1073741824.0,
             with_adjoint ? ", tokens and adjoint" : "", (worst[1] - worst[0]) / 1073741824.0);
  PetscFunctionReturn(0);
}

PetscErrorCode TrajectoryCreate(Vec state, PetscInt M, PetscInt N, PetscInt d, PetscInt S, Trajectory *t) {
  PetscInt lo, hi;
  PetscFunctionBeginUser;
  t->S = S, t->M = M, t->N = N, t->d = d;
  PetscCall(VecGetOwnershipRange(state, &lo, &hi));
  t->owned = {lo / d, hi / d};
  t->tokens.assign((size_t)(S + 1), nullptr);
  t->adjoint.assign((size_t)(S + 1), nullptr);
  for (PetscInt k = 0; k <= S; ++k) PetscCall(VecDuplicate(state, &t->tokens[k])); // the adjoint's when recorded
  t->have_tokens.assign((size_t)(S + 1), 0);
  t->have_adjoint.assign((size_t)(S + 1), 0);
  PetscFunctionReturn(0);
}

PetscErrorCode TrajectoryDestroy(Trajectory *t) {
  PetscFunctionBeginUser;
  for (auto &v : t->tokens) PetscCall(VecDestroy(&v));
  for (auto &v : t->adjoint) PetscCall(VecDestroy(&v));
  t->tokens.clear(), t->adjoint.clear(), t->have_tokens.clear(), t->have_adjoint.clear();
  PetscFunctionReturn(0);
}

PetscErrorCode TrajectoryRecord(Trajectory *t, PetscInt k, Vec x, bool adjoint) {
  PetscFunctionBeginUser;
  PetscCheck(k >= 0 && k <= t->S, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
             "depth slice %" PetscInt_FMT " of a trajectory of %" PetscInt_FMT, k, t->S);
  Vec &slice = adjoint ? t->adjoint[k] : t->tokens[k];
  if (!slice) PetscCall(VecDuplicate(x, &slice));
  PetscCall(VecCopy(x, slice));
  (adjoint ? t->have_adjoint : t->have_tokens)[k] = 1;
  PetscFunctionReturn(0);
}

// One dataset of S + 1 slices from their owned rows.
static PetscErrorCode WriteSlices(h5::File &f, const std::string &name, const Trajectory &t, const std::vector<Vec> &v) {
  std::vector<const PetscScalar *> a(v.size());
  PetscFunctionBeginUser;
  for (size_t k = 0; k < v.size(); ++k) PetscCall(VecGetArrayRead(v[k], &a[k]));
  const std::vector<hsize_t> dims{(hsize_t)t.M, (hsize_t)t.N, (hsize_t)t.d};
  PetscCall(h5::WriteSlices(f, name, dims, 2, t.owned, std::vector<const double *>(a.begin(), a.end())));
  for (size_t k = 0; k < v.size(); ++k) PetscCall(VecRestoreArrayRead(v[k], &a[k]));
  PetscFunctionReturn(0);
}

PetscErrorCode TrajectoryWrite(h5::File &f, const Trajectory &t) {
  PetscMPIInt rank;
  PetscFunctionBeginUser;
  PetscCheck(t.complete(t.have_tokens), f.comm, PETSC_ERR_PLIB, "the solve did not pass every depth of the trajectory");
  std::vector<double> depth((size_t)(t.S + 1));
  for (PetscInt k = 0; k <= t.S; ++k) depth[k] = t.depth(k);
  PetscCallMPI(MPI_Comm_rank(f.comm, &rank));
  const Range all = rank == 0 ? Range{0, t.S + 1} : Range{0, 0};
  PetscCall(h5::WriteRows(f, "/trajectory/depth", {(hsize_t)(t.S + 1)}, 1, all, depth.data()));
  PetscCall(WriteSlices(f, "/trajectory/tokens", t, t.tokens));
  if (t.complete(t.have_adjoint)) PetscCall(WriteSlices(f, "/trajectory/adjoint", t, t.adjoint));
  PetscFunctionReturn(0);
}

} // namespace mft
