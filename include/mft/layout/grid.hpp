// The 2-D process grid (head groups x token groups) and the nodes it runs on.
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
//               (NodeSharing); MPI_COMM_NULL otherwise
// All are the grid's own communicators, freed by GridDestroy.
#pragma once

#include "mft/kernels/shape.hpp"

#include <petscsys.h>

#include <algorithm>

namespace mft {

// Even split of n items into parts; part p gets [begin, end) (Range: shape.hpp).
// Not collective.
Range split(PetscInt n, PetscInt parts, PetscInt part);
// The part of that split that holds item i (0 <= i < n).
// Not collective.
PetscInt split_part(PetscInt n, PetscInt parts, PetscInt i);

// A node's token groups share the rows from other nodes (tokens form only):
// with node_ranks ranks a node in rank order and Ph dividing it, a node holds
// C = node_ranks / Ph consecutive token groups, S = C Ph ranks (the last node
// may hold fewer). Where a sequence is held in part by every group of a node
// (it spans the node), each part of it from another node is cut into S
// shares: the node's rank u = (b mod C) Ph + a receives share u from the
// part's rank of its place a, and the node completes them by one allgather
// over its S ranks. A row then crosses into a node once, not C times; the
// gradients go back summed over the node's ranks likewise. C = 1 (node_ranks
// 0, not a multiple of Ph, or Ph alone) is the group sharing alone.
struct NodeSharing {
  PetscInt M = 0, N = 0, Pt = 1, Ph = 1, C = 1;
  NodeSharing() = default;
  NodeSharing(PetscInt M, PetscInt N, PetscInt P, PetscInt Ph, PetscInt node_ranks);
  PetscInt node(PetscInt b) const { return b / C; }
  Range groups(PetscInt n) const { return Range{n * C, std::min((n + 1) * C, Pt)}; }
  PetscInt ranks(PetscInt n) const { return groups(n).size() * Ph; } // S of node n
  PetscInt place(PetscInt b, PetscInt a) const { return (b % C) * Ph + a; } // u
  // Whether group `to` receives group `from`'s rows of sequence m in node shares.
  bool shared(PetscInt m, PetscInt to, PetscInt from) const;
};

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
// Collective on comm (it splits and duplicates comm).
PetscErrorCode GridCreate(MPI_Comm comm, PetscInt head_groups, PetscInt H, PetscInt node_ranks, Grid *g);

// Ranks a node in rank order: `given` when positive (parallel.node_ranks),
// else the ranks that share memory (MPI_COMM_TYPE_SHARED) when every node
// holds the same number of consecutive ranks (the last may hold fewer), else
// 0 (treated as one node: no node sharing). Collective on comm; the same on
// every rank. GridDestroy is collective on the grid's comm (it frees its
// communicators).
PetscErrorCode NodeRanks(MPI_Comm comm, PetscInt given, PetscInt *node_ranks);
PetscErrorCode GridDestroy(Grid *g);

// The memory this rank's node can still give (bytes: MemAvailable, or the
// physical memory), and how many ranks of comm share the node.
// Collective on comm (MPI_Comm_split_type).
PetscErrorCode NodeMemory(MPI_Comm comm, double *available, PetscMPIInt *node_ranks);

} // namespace mft
