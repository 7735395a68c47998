// The token state and its layout across ranks.
//
// The state x (and the adjoint p) is one PETSc Vec of M*N*d entries in the
// natural order (m, i, c): tokens x[m,i] in R^d, sequence-major. Token group b
// of the grid owns the contiguous tokens `group`, split among its Ph ranks
// (`owned`, whole tokens). Attention needs every key of a query's sequence, so
// each rank gathers the sequences its group touches (`seqs`, whole sequences,
// possibly cut by neighbouring groups) into a sequential `local` Vec, and the
// contributions to them (as keys and queries) go back to their owners and add
// up.
//
// The gather is two stages, so that a rank sends few messages however many
// ranks share a sequence: (A) rank (a, b) receives from rank (a, b') of every
// other token group b' the tokens of its sequences that (a, b') owns (none
// when the token groups hold whole sequences); (B) the Ph ranks of token group
// b allgather what each owns or received (exchange.hpp: log2 Ph messages).
// The way back is the reverse: a reduce-scatter over the group, then each
// piece back to its owner. The plan is made from the layout alone
// (TokenPlanFor), so that the cost model counts exactly what is sent; the
// additions are in a fixed order: bitwise repeatable on the same ranks.
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
  std::vector<TokenPiece> receive;           // stage A: pieces of `seqs` from (a, b'), b' != b
  std::vector<TokenPiece> give;              // stage A: owned tokens to (a, b''), b'' != b
  std::vector<std::vector<Range>> segments;  // stage B: per rank a' of the group, its token ranges in order
  std::vector<PetscInt> counts;              // stage B: tokens of each segment (entries in TokenLayout)
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
  MPI_Comm head_comm = MPI_COMM_NULL;   // the Ph ranks of the token group (stage B)
  mutable std::vector<double> staging;  // stage B's vector: the group's segments in order
  mutable std::vector<double> incoming; // stage A's receive buffer of the additions

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
