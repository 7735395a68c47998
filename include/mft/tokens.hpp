// The token state and its layout across ranks.
//
// The state x (and the adjoint p) is one PETSc Vec of M*N*d entries in the
// natural order (m, i, c): tokens x[m,i] in R^d, sequence-major. Token group b
// of the grid owns the contiguous tokens `group`, split among its Ph ranks
// (`owned`, whole tokens). Attention needs every key of a query's sequence, so
// each rank gathers the sequences its group touches (`seqs`, whole sequences,
// possibly cut by neighbouring groups) into a sequential `local` Vec, and the
// contributions to them (as keys and queries) go back to their owners and add
// up. The gather follows a plan of point-to-point messages made from the
// layout alone (TokenPlanFor), so that the cost model counts exactly what is
// sent; the additions on the way back are in a fixed order (the own part,
// then the peers by rank): bitwise repeatable on the same ranks.
#pragma once

#include "mft/grid.hpp"

#include <petscvec.h>

#include <vector>

namespace mft {

// Tokens [begin, end) (flat m*N+i) that this rank exchanges with peer.
struct TokenPiece {
  PetscInt peer, begin, end;
};

struct TokenPlan {
  std::vector<TokenPiece> gather; // the pieces of `seqs` and their owners (this rank's own piece included)
  std::vector<TokenPiece> give;   // the owned tokens other ranks gather, by peer
};

// Ownership on a grid of P ranks, Ph head groups (rank r: head group r % Ph,
// token group r / Ph), M sequences of N tokens.
Range GroupTokens(PetscInt P, PetscInt Ph, PetscInt M, PetscInt N, PetscInt rank);
Range OwnedTokens(PetscInt P, PetscInt Ph, PetscInt M, PetscInt N, PetscInt rank);
Range GroupSequences(PetscInt P, PetscInt Ph, PetscInt M, PetscInt N, PetscInt rank);
TokenPlan TokenPlanFor(PetscInt P, PetscInt Ph, PetscInt M, PetscInt N, PetscInt rank);

struct TokenLayout {
  PetscInt M = 0, N = 0, d = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  Range group;  // tokens (flat m*N+i) of this rank's token group: the queries it computes
  Range owned;  // tokens whose entries this rank owns in the state Vec
  Range seqs;   // sequences that hold the group's tokens
  std::vector<PetscInt> counts;     // entries owned by each rank of head_comm (reduce-scatter)
  Vec state = nullptr;              // template of the distributed state
  Vec local = nullptr;              // template of the gathered sequences (sequential)
  TokenPlan plan;
  mutable std::vector<double> incoming; // receive buffer of the additions

  // Query range [i0, i1) of sequence m (in seqs) that this group computes.
  Range queries(PetscInt m) const;
};

PetscErrorCode TokenLayoutCreate(const Grid &g, PetscInt M, PetscInt N, PetscInt d, TokenLayout *t);
PetscErrorCode TokenLayoutDestroy(TokenLayout *t);

// local <- the sequences `seqs` of the distributed state.
PetscErrorCode TokensGather(const TokenLayout &t, Vec state, Vec local);

// state <- the sum, over every rank that gathered them, of the contributions
// in local to each owned token (state is overwritten).
PetscErrorCode TokensScatterAdd(const TokenLayout &t, Vec local, Vec state);

} // namespace mft
