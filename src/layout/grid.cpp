// The 2-D process grid, its communicators, and the nodes it runs on.
#include "mft/layout/grid.hpp"

#include <fstream>
#include <string>
#include <unistd.h>

namespace mft {

Range split(PetscInt n, PetscInt parts, PetscInt part) {
  const PetscInt q = n / parts, r = n % parts;
  Range out;
  out.begin = part * q + (part < r ? part : r);
  out.end = out.begin + q + (part < r ? 1 : 0);
  return out;
}

PetscInt split_part(PetscInt n, PetscInt parts, PetscInt i) {
  const PetscInt q = n / parts, r = n % parts; // parts [0, r) hold q + 1 items, the others q
  return i < r * (q + 1) ? i / (q + 1) : r + (i - r * (q + 1)) / q;
}

NodeSharing::NodeSharing(PetscInt M_, PetscInt N_, PetscInt P, PetscInt Ph_, PetscInt node_ranks)
    : M(M_), N(N_), Pt(P / Ph_), Ph(Ph_) {
  if (node_ranks > 0 && node_ranks < P && node_ranks % Ph == 0) C = node_ranks / Ph;
}

bool NodeSharing::shared(PetscInt m, PetscInt to, PetscInt from) const {
  if (C == 1 || node(to) == node(from)) return false;
  const Range gs = groups(node(to));
  return gs.size() > 1 && split_part(M * N, Pt, m * N) <= gs.begin &&
         split_part(M * N, Pt, (m + 1) * N - 1) >= gs.end - 1;
}

PetscErrorCode GridCreate(MPI_Comm comm, PetscInt head_groups, PetscInt H, PetscInt node_ranks, Grid *g) {
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
  g->node_ranks = node_ranks;
  // The node's ranks exchange the rows that come from other nodes only when
  // it holds several token groups: every rank takes part in the split.
  const bool nodes = NodeSharing(1, 1, g->size, Ph, node_ranks).C > 1;
  PetscCallMPI(MPI_Comm_split(comm, nodes ? (int)(g->rank / node_ranks) : MPI_UNDEFINED, g->rank, &g->node_comm));
  PetscFunctionReturn(0);
}

PetscErrorCode NodeRanks(MPI_Comm comm, PetscInt given, PetscInt *node_ranks) {
  MPI_Comm node;
  PetscMPIInt rank, size, first, last, n, most;
  PetscFunctionBeginUser;
  if (given > 0) {
    *node_ranks = given;
    PetscFunctionReturn(0);
  }
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  PetscCallMPI(MPI_Comm_size(node, &n));
  PetscCallMPI(MPI_Allreduce(&rank, &first, 1, MPI_INT, MPI_MIN, node));
  PetscCallMPI(MPI_Allreduce(&rank, &last, 1, MPI_INT, MPI_MAX, node));
  PetscCallMPI(MPI_Comm_free(&node));
  PetscCallMPI(MPI_Allreduce(&n, &most, 1, MPI_INT, MPI_MAX, comm));
  // In rank order: consecutive ranks from a multiple of the most, and only the last node holds fewer.
  int regular = last - first + 1 == n && first % most == 0 && (n == most || last + 1 == size), all;
  PetscCallMPI(MPI_Allreduce(&regular, &all, 1, MPI_INT, MPI_LAND, comm));
  *node_ranks = all ? most : 0;
  PetscFunctionReturn(0);
}

PetscErrorCode GridDestroy(Grid *g) {
  PetscFunctionBeginUser;
  if (g->head_comm != MPI_COMM_NULL) PetscCallMPI(MPI_Comm_free(&g->head_comm));
  if (g->token_comm != MPI_COMM_NULL) PetscCallMPI(MPI_Comm_free(&g->token_comm));
  if (g->peer_comm != MPI_COMM_NULL) PetscCallMPI(MPI_Comm_free(&g->peer_comm));
  if (g->node_comm != MPI_COMM_NULL) PetscCallMPI(MPI_Comm_free(&g->node_comm));
  PetscFunctionReturn(0);
}

PetscErrorCode NodeMemory(MPI_Comm comm, double *available, PetscMPIInt *node_ranks) {
  MPI_Comm node;
  PetscFunctionBeginUser;
  *available = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  double kb;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") {
      *available = kb * 1024.0;
      break;
    }
  PetscCallMPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  PetscCallMPI(MPI_Comm_size(node, node_ranks));
  PetscCallMPI(MPI_Comm_free(&node));
  PetscFunctionReturn(0);
}

} // namespace mft
