// Token layout: ownership ranges and the gather of whole sequences.
#include "mft/tokens.hpp"

#include <algorithm>

namespace mft {

Range TokenLayout::queries(PetscInt m) const {
  Range r;
  r.begin = std::max(group.begin - m * N, (PetscInt)0);
  r.end = std::min(group.end - m * N, N);
  if (r.end < r.begin) r.end = r.begin;
  return r;
}

PetscErrorCode TokenLayoutCreate(const Grid &g, PetscInt M, PetscInt N, PetscInt d, TokenLayout *t) {
  PetscFunctionBeginUser;
  t->M = M;
  t->N = N;
  t->d = d;
  t->group = split(M * N, g.Pt, g.b);
  t->owned = split(t->group.size(), g.Ph, g.a);
  t->owned.begin += t->group.begin;
  t->owned.end += t->group.begin;
  if (t->group.size() > 0) {
    t->seqs.begin = t->group.begin / N;
    t->seqs.end = (t->group.end + N - 1) / N;
  }
  t->counts.resize(g.Ph);
  for (PetscInt a = 0; a < g.Ph; ++a) t->counts[a] = (PetscMPIInt)(split(t->group.size(), g.Ph, a).size() * d);

  PetscCall(VecCreateMPI(g.comm, t->owned.size() * d, M * N * d, &t->state));
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, t->seqs.size() * N * d, &t->local));
  IS from;
  PetscCall(ISCreateStride(PETSC_COMM_SELF, t->seqs.size() * N * d, t->seqs.begin * N * d, 1, &from));
  PetscCall(VecScatterCreate(t->state, from, t->local, nullptr, &t->gather));
  PetscCall(ISDestroy(&from));
  PetscFunctionReturn(0);
}

PetscErrorCode TokenLayoutDestroy(TokenLayout *t) {
  PetscFunctionBeginUser;
  PetscCall(VecScatterDestroy(&t->gather));
  PetscCall(VecDestroy(&t->state));
  PetscCall(VecDestroy(&t->local));
  PetscFunctionReturn(0);
}

} // namespace mft
