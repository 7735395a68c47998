// The token state and its layout across ranks.
//
// The state x (and the adjoint p) is one PETSc Vec of M*N*d entries in the
// natural order (m, i, c): tokens x[m,i] in R^d, sequence-major. Token group b
// of the grid owns the contiguous tokens `group`, split among its Ph ranks
// (`owned`, whole tokens). The group computes the velocity at its tokens, so
// each rank of the group gathers the group's tokens into a sequential `local`
// Vec (an allgather over the Ph ranks, exchange.hpp: log2 Ph messages), and
// the contributions to them go back to their owners and add up (the reverse,
// a reduce-scatter).
//
// Attention also needs every key of a query's sequence. A sequence held whole
// by the group is projected there. For a sequence cut across token groups
// (`cuts`), rank (a, b) exchanges rows point to point with rank (a, b') of
// every other group b' that holds part of it (TokensShareCutRowsBegin/End), in one of
// two forms (CutForm): the group's tokens (d numbers a token; every group
// then projects the whole sequence, as if it held it), or the projections of the
// group's tokens onto the keys and values of the head group's heads
// (Hl (k + dv) numbers a token; no group projects another's tokens). In the
// reverse, the gradients with respect to the rows go back to the tokens'
// group and add up there (TokensReturnCutRows). The cost model picks the form
// whose step is predicted shorter: projections save the compute, tokens the
// bytes when Hl (k + dv) is much larger than d.
// The plans are made from the layout alone (CutSequencesFor: a cut's peers
// are exactly the other groups holding part of its sequence, in order, as
// its unit test checks; the cost model counts them so, without building the
// plans); the additions are in a fixed order: bitwise repeatable on the same
// ranks.
#pragma once

#include "mft/layout/grid.hpp"

#include <petscvec.h>

#include <algorithm>
#include <vector>

namespace mft {

// What a group sends the others of a cut sequence: its tokens (d numbers a
// token; each group then projects the whole sequence) or the projections.
enum class CutForm { tokens, projections };
// Not collective.
const char *to_string(CutForm f);

// Tokens [begin, end) (flat m*N+i) that this rank exchanges with peer.
struct TokenPiece {
  PetscInt peer, begin, end;
};

// A sequence m that the token group holds only part of: the group's tokens
// `mine` of it, and every other group's part held by rank (a, b') (`peers`,
// in group order).
struct CutSequence {
  PetscInt m = 0;
  Range mine;
  std::vector<TokenPiece> peers;
};

// Ownership on a grid of P ranks, Ph head groups (rank r: head group r % Ph,
// token group r / Ph), M sequences of N tokens. Not collective: pure
// arithmetic, the same on every rank for the same rank argument.
Range GroupTokens(PetscInt P, PetscInt Ph, PetscInt M, PetscInt N, PetscInt rank);
Range OwnedTokens(PetscInt P, PetscInt Ph, PetscInt M, PetscInt N, PetscInt rank);
Range GroupSequences(PetscInt P, PetscInt Ph, PetscInt M, PetscInt N, PetscInt rank);
std::vector<CutSequence> CutSequencesFor(PetscInt P, PetscInt Ph, PetscInt M, PetscInt N, PetscInt rank);

struct TokenLayout {
  PetscInt M = 0, N = 0, d = 0;
  PetscInt a = 0, b = 0;              // this rank's head group and token group
  NodeSharing nodes;                  // the node sharing of the tokens form's rows
  MPI_Comm node_comm = MPI_COMM_NULL; // the S ranks of this rank's node when nodes.C > 1
  MPI_Comm peer_comm = MPI_COMM_NULL; // the grid's private communicator of the cut rows
  Range group;  // tokens (flat m*N+i) of this rank's token group: the queries it computes
  Range owned;  // tokens whose entries this rank owns in the state Vec
  Range seqs;   // sequences that hold the group's tokens
  std::vector<PetscInt> counts;   // entries owned by each rank of head_comm (allgather, reduce-scatter)
  std::vector<CutSequence> cuts;  // the sequences in seqs the group holds only part of
  Vec state = nullptr;            // template of the distributed state
  Vec local = nullptr;            // template of the group's tokens (sequential)
  MPI_Comm head_comm = MPI_COMM_NULL;   // the Ph ranks of the token group
  mutable std::vector<double> incoming; // receive buffer of the returned key gradients
  // The tokens' masses (docs/model.md, 'Token measures'): (M, N), sequence by
  // sequence, each row positive and summing to 1, the same on every rank;
  // empty: 1/N each (the unweighted model, bitwise).
  std::vector<double> weights;

  // Query range [i0, i1) of sequence m (in seqs) that this group computes.
  Range queries(PetscInt m) const;
  // Index in cuts of sequence m, or -1 when the group holds it whole.
  PetscInt cut(PetscInt m) const;
  bool weighted() const { return !weights.empty(); }
  // Sequence m's N weights (null: unweighted).
  const double *sequence_weights(PetscInt m) const { return weighted() ? weights.data() + m * N : nullptr; }
  // Token tok's (flat m N + i) weight: its mass, or 1/N.
  double weight(PetscInt tok) const { return weighted() ? weights[tok] : 1.0 / (double)N; }
};

// The layout of M sequences of N tokens of d numbers on grid g. Create and
// Destroy are collective on g.comm (the scatters between state and group).
PetscErrorCode TokenLayoutCreate(const Grid &g, PetscInt M, PetscInt N, PetscInt d, TokenLayout *t);
PetscErrorCode TokenLayoutDestroy(TokenLayout *t);

// local <- the group's tokens of the distributed state. Collective on
// state's comm (the grid's: a VecScatter).
PetscErrorCode TokensGather(const TokenLayout &t, Vec state, Vec local);

// state <- the sum, over the ranks of the group, of the contributions in local
// to each owned token (state is overwritten; local is used as scratch).
// Collective on state's comm (the grid's: a VecScatter with ADD_VALUES).
PetscErrorCode TokensScatterAdd(const TokenLayout &t, Vec local, Vec state);

// The rows the cut sequences' keys are made from (tokens or key projections):
// `keys` holds, for each cut c, N rows of `width` numbers (row i: token i of
// the sequence), at keys + c N width.
// Share: the rows of `mine` (filled by the caller) go to every peer, and the
// peers' rows come in. With `identical` (the tokens form: every rank of the
// head group holds the same rows) each rank of the group sends only its
// share of them (split over the Ph ranks) to its peer, and each group then
// allgathers what its ranks received: the rows cross between groups once,
// not Ph times; and where a node's groups share the sequence (NodeSharing)
// the rows from other nodes come in the node's S shares, which its ranks
// allgather: they cross into the node once, not once a group. The share goes in two halves, so that the kernels of the
// sequences the group holds whole run while the rows travel: Begin posts the
// rows' messages; Progress asks MPI to move them (from the main thread,
// between kernels; MPI moves a large message only while it is asked); End
// waits for them and, with `identical`, completes them within the group.
// Counted in Traffic::in_flight and inside (exchange.hpp).
// Return: the rows of each peer's part go back to it, and the rows of `mine`
// become the sum of every group's, own part first, then the peers' in group
// order. With `identical` the group first sums its ranks' rows of the peers'
// parts (a reduce-scatter over its Ph ranks, in the same shares), and each
// rank returns its share of the sums to its peer: the gradients too cross
// between groups once, not Ph times; rank a's rows of `mine` then hold the
// peers' sums in its share only, which the group's own sum over its ranks
// (TokensScatterAdd) completes. The parts shared over a node are summed
// over the node's S ranks likewise (a reduce-scatter over node_comm).
// Collective on the grid's comm: every rank takes part in Begin, Progress
// and End and in Return, with or without cut sequences of its own (the
// messages go to peers on peer_comm, and within head_comm and node_comm).
struct CutRowsInFlight {
  std::vector<MPI_Request> req;
  double *keys = nullptr;
  PetscInt width = 0;
  bool identical = false, active = false;
  double posted = 0, done = -1;
};
PetscErrorCode TokensShareCutRowsBegin(const TokenLayout &t, double *keys, PetscInt width, bool identical,
                                       CutRowsInFlight *x);
PetscErrorCode TokensShareCutRowsProgress(CutRowsInFlight *x);
PetscErrorCode TokensShareCutRowsEnd(const TokenLayout &t, CutRowsInFlight *x);
PetscErrorCode TokensReturnCutRows(const TokenLayout &t, double *keys, PetscInt width, bool identical);


} // namespace mft
