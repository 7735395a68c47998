// The 2-D process grid: head groups x token groups.
//
// Rank r of `comm` sits at head group a = r % Ph and token group b = r / Ph.
// The ranks of one token group are consecutive, so that the token state, in
// its natural (m, i, c) order, is owned by token group 0, then 1, ... Every
// rank of head group a holds the heads [h0, h1) of every layer.
//   head_comm:  the Ph ranks of one token group (reduce the velocity over heads)
//   token_comm: the Pt ranks of one head group (reduce head gradients over tokens)
//   peer_comm:  a private duplicate of comm for the point-to-point messages
//               of the cut sequences (tokens.hpp), so that no message of the
//               program can meet one of the caller's or of PETSc's
//   node_comm:  the ranks of this rank's node (node_ranks of them in rank
//               order), when a node holds several token groups
//               (NodeSharing, tokens.hpp); MPI_COMM_NULL otherwise
// All are the grid's own communicators, freed by GridDestroy.
#pragma once

#include <petscsys.h>

namespace mft {

// Even split of n items into parts; part p gets [begin, end).
struct Range {
  PetscInt begin = 0, end = 0;
  PetscInt size() const { return end - begin; }
};
Range split(PetscInt n, PetscInt parts, PetscInt p);
// The part of that split that holds item i (0 <= i < n).
PetscInt split_part(PetscInt n, PetscInt parts, PetscInt i);

struct Grid {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm head_comm = MPI_COMM_NULL;
  MPI_Comm token_comm = MPI_COMM_NULL;
  MPI_Comm peer_comm = MPI_COMM_NULL;
  MPI_Comm node_comm = MPI_COMM_NULL;
  PetscMPIInt rank = 0, size = 1;
  PetscInt Ph = 1, Pt = 1;  // head groups, token groups
  PetscInt a = 0, b = 0;    // this rank's head group and token group
  PetscInt node_ranks = 0;  // ranks a node, in rank order (0: all on one node)
};

// Creates the grid of Ph = head_groups head groups on comm (Ph divides the
// rank count and is at most H; problem.cpp chooses it with the cost model
// when the user does not), its nodes node_ranks ranks each in rank order.
PetscErrorCode GridCreate(MPI_Comm comm, PetscInt head_groups, PetscInt H, PetscInt node_ranks, Grid *g);

// Ranks a node in rank order: `given` when positive (parallel.node_ranks),
// else the ranks that share memory (MPI_COMM_TYPE_SHARED) when every node
// holds the same number of consecutive ranks (the last may hold fewer), else
// 0 (treated as one node: no node sharing). Collective; the same on every rank.
PetscErrorCode NodeRanks(MPI_Comm comm, PetscInt given, PetscInt *node_ranks);
PetscErrorCode GridDestroy(Grid *g);

} // namespace mft
