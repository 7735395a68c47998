// The token state and its layout across ranks.
//
// The state x (and the adjoint p) is one PETSc Vec of M*N*d entries in the
// natural order (m, i, c): tokens x[m,i] in R^d, sequence-major. Token group b
// of the grid owns the contiguous tokens `group`, split among its Ph ranks
// (`owned`, whole tokens). Attention needs every key of a query's sequence, so
// each rank gathers the sequences its group touches (`seqs`, whole sequences,
// possibly cut by neighbouring groups) with one VecScatter.
#pragma once

#include "mft/grid.hpp"

#include <petscvec.h>

#include <vector>

namespace mft {

struct TokenLayout {
  PetscInt M = 0, N = 0, d = 0;
  Range group;  // tokens (flat m*N+i) of this rank's token group: the queries it computes
  Range owned;  // tokens whose entries this rank owns in the state Vec
  Range seqs;   // sequences that hold the group's tokens
  std::vector<PetscMPIInt> counts;  // entries owned by each rank of head_comm (reduce-scatter)
  Vec state = nullptr;              // template of the distributed state
  Vec local = nullptr;              // template of the gathered sequences (sequential)
  VecScatter gather = nullptr;      // state -> local copy of `seqs`

  // Query range [i0, i1) of sequence m (in seqs) that this group computes.
  Range queries(PetscInt m) const;
};

PetscErrorCode TokenLayoutCreate(const Grid &g, PetscInt M, PetscInt N, PetscInt d, TokenLayout *t);
PetscErrorCode TokenLayoutDestroy(TokenLayout *t);

} // namespace mft
