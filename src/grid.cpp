// The 2-D process grid and its communicators.
#include "mft/grid.hpp"

namespace mft {

Range split(PetscInt n, PetscInt parts, PetscInt p) {
  const PetscInt q = n / parts, r = n % parts;
  Range out;
  out.begin = p * q + (p < r ? p : r);
  out.end = out.begin + q + (p < r ? 1 : 0);
  return out;
}

PetscInt split_part(PetscInt n, PetscInt parts, PetscInt i) {
  const PetscInt q = n / parts, r = n % parts; // parts [0, r) hold q + 1 items, the others q
  return i < r * (q + 1) ? i / (q + 1) : r + (i - r * (q + 1)) / q;
}

PetscErrorCode GridCreate(MPI_Comm comm, PetscInt head_groups, PetscInt H, Grid *g) {
  PetscFunctionBeginUser;
  g->comm = comm;
  PetscCallMPI(MPI_Comm_rank(comm, &g->rank));
  PetscCallMPI(MPI_Comm_size(comm, &g->size));
  const PetscInt Ph = head_groups;
  PetscCheck(g->size % Ph == 0 && Ph <= H, comm, PETSC_ERR_USER_INPUT,
             "parallel.head_groups = %" PetscInt_FMT " must divide the %d ranks and be at most model.H", Ph, g->size);
  g->Ph = Ph;
  g->Pt = g->size / Ph;
  g->a = g->rank % Ph;
  g->b = g->rank / Ph;
  PetscCallMPI(MPI_Comm_split(comm, (int)g->b, (int)g->a, &g->head_comm));
  PetscCallMPI(MPI_Comm_split(comm, (int)g->a, (int)g->b, &g->token_comm));
  PetscCallMPI(MPI_Comm_dup(comm, &g->peer_comm));
  PetscFunctionReturn(0);
}

PetscErrorCode GridDestroy(Grid *g) {
  PetscFunctionBeginUser;
  if (g->head_comm != MPI_COMM_NULL) PetscCallMPI(MPI_Comm_free(&g->head_comm));
  if (g->token_comm != MPI_COMM_NULL) PetscCallMPI(MPI_Comm_free(&g->token_comm));
  if (g->peer_comm != MPI_COMM_NULL) PetscCallMPI(MPI_Comm_free(&g->peer_comm));
  PetscFunctionReturn(0);
}

} // namespace mft
