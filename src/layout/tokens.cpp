// Token layout: ownership ranges, the group's gather, the key projections of cut sequences.
#include "mft/layout/tokens.hpp"

#include "mft/layout/exchange.hpp"

#include <algorithm>

namespace mft {

namespace {
constexpr PetscMPIInt kRowsTag = 7152;
}

const char *to_string(CutForm f) { return f == CutForm::tokens ? "tokens" : "projections"; }

Range GroupTokens(PetscInt P, PetscInt Ph, PetscInt M, PetscInt N, PetscInt rank) {
  return split(M * N, P / Ph, rank / Ph);
}

Range OwnedTokens(PetscInt P, PetscInt Ph, PetscInt M, PetscInt N, PetscInt rank) {
  const Range g = GroupTokens(P, Ph, M, N, rank);
  Range o = split(g.size(), Ph, rank % Ph);
  o.begin += g.begin;
  o.end += g.begin;
  return o;
}

Range GroupSequences(PetscInt P, PetscInt Ph, PetscInt M, PetscInt N, PetscInt rank) {
  const Range g = GroupTokens(P, Ph, M, N, rank);
  Range s;
  if (g.size() > 0) s.begin = g.begin / N, s.end = (g.end + N - 1) / N;
  return s;
}

std::vector<CutSequence> CutSequencesFor(PetscInt P, PetscInt Ph, PetscInt M, PetscInt N, PetscInt rank) {
  const PetscInt Pt = P / Ph, a = rank % Ph, b = rank / Ph;
  auto part = [&](PetscInt group, PetscInt m) { // group's tokens of sequence m, which it holds part of
    const Range g = split(M * N, Pt, group);
    return Range{std::max(g.begin, m * N), std::min(g.end, (m + 1) * N)};
  };
  std::vector<CutSequence> cuts;
  const Range s = GroupSequences(P, Ph, M, N, rank);
  for (PetscInt m = s.begin; m < s.end; ++m) {
    CutSequence c;
    c.m = m;
    c.mine = part(b, m);
    if (c.mine.size() == N) continue;
    // The groups holding sequence m: those of its first and last tokens and all between.
    for (PetscInt g = split_part(M * N, Pt, m * N); g <= split_part(M * N, Pt, (m + 1) * N - 1); ++g)
      if (g != b) c.peers.push_back({g * Ph + a, part(g, m).begin, part(g, m).end});
    cuts.push_back(c);
  }
  return cuts;
}

Range TokenLayout::queries(PetscInt m) const {
  Range r;
  r.begin = std::max(group.begin - m * N, (PetscInt)0);
  r.end = std::min(group.end - m * N, N);
  if (r.end < r.begin) r.end = r.begin;
  return r;
}

PetscInt TokenLayout::cut(PetscInt m) const {
  for (size_t c = 0; c < cuts.size(); ++c)
    if (cuts[c].m == m) return (PetscInt)c;
  return -1;
}

PetscErrorCode TokenLayoutCreate(const Grid &g, PetscInt M, PetscInt N, PetscInt d, TokenLayout *t) {
  PetscFunctionBeginUser;
  t->M = M;
  t->N = N;
  t->d = d;
  t->a = g.a, t->b = g.b;
  t->nodes = NodeSharing(M, N, g.size, g.Ph, g.node_ranks);
  t->node_comm = g.node_comm;
  t->peer_comm = g.peer_comm;
  t->head_comm = g.head_comm;
  t->group = GroupTokens(g.size, g.Ph, M, N, g.rank);
  t->owned = OwnedTokens(g.size, g.Ph, M, N, g.rank);
  t->seqs = GroupSequences(g.size, g.Ph, M, N, g.rank);
  t->counts.resize(g.Ph);
  for (PetscInt a = 0; a < g.Ph; ++a) t->counts[a] = split(t->group.size(), g.Ph, a).size() * d;
  t->cuts = CutSequencesFor(g.size, g.Ph, M, N, g.rank);
  PetscCall(VecCreateMPI(g.comm, t->owned.size() * d, M * N * d, &t->state));
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, t->group.size() * d, &t->local));
  PetscFunctionReturn(0);
}

PetscErrorCode TokenLayoutDestroy(TokenLayout *t) {
  PetscFunctionBeginUser;
  PetscCall(VecDestroy(&t->state));
  PetscCall(VecDestroy(&t->local));
  PetscFunctionReturn(0);
}

PetscErrorCode TokensGather(const TokenLayout &t, Vec state, Vec local) {
  const PetscScalar *xs;
  PetscScalar *xl;
  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(state, &xs));
  PetscCall(VecGetArray(local, &xl));
  std::copy(xs, xs + t.owned.size() * t.d, xl + (t.owned.begin - t.group.begin) * t.d);
  PetscCall(AllgatherSegments(t.head_comm, xl, t.counts));
  PetscCall(VecRestoreArray(local, &xl));
  PetscCall(VecRestoreArrayRead(state, &xs));
  PetscFunctionReturn(0);
}

PetscErrorCode TokensScatterAdd(const TokenLayout &t, Vec local, Vec state) {
  PetscScalar *xl, *xs;
  PetscFunctionBeginUser;
  PetscCall(VecGetArray(local, &xl));
  PetscCall(VecGetArray(state, &xs));
  PetscCall(ReduceScatterSum(t.head_comm, xl, t.counts, xs));
  PetscCall(VecRestoreArray(state, &xs));
  PetscCall(VecRestoreArray(local, &xl));
  PetscFunctionReturn(0);
}

namespace {

// Posts a send or a receive of the rows of tokens [p.begin, p.end) at `base`.
PetscErrorCode Post(const TokenLayout &t, bool send, const TokenPiece &p, double *base, PetscInt width,
                    std::vector<MPI_Request> &req) {
  PetscMPIInt n = 0, peer = 0; // (set below; zero for the compiler, which cannot see MessageCount set n)
  PetscFunctionBeginUser;
  PetscCall(MessageCount(t.peer_comm, (std::int64_t)(p.end - p.begin) * width, &n));
  PetscCall(PetscMPIIntCast(p.peer, &peer));
  req.emplace_back();
  if (send) {
    PetscCallMPI(MPI_Isend(base, n, MPI_DOUBLE, peer, kRowsTag, t.peer_comm, &req.back()));
    ++traffic().messages;
    traffic().bytes += 8 * (long long)n;
  } else {
    PetscCallMPI(MPI_Irecv(base, n, MPI_DOUBLE, peer, kRowsTag, t.peer_comm, &req.back()));
  }
  PetscFunctionReturn(0);
}

// The row of flat token j (in cut c's sequence) in the key projections.
double *KeyRow(const TokenLayout &t, double *keys, PetscInt width, size_t c, PetscInt j) {
  return keys + ((std::ptrdiff_t)c * t.N + j - t.cuts[c].m * t.N) * (std::ptrdiff_t)width;
}

// A rank's place among the ranks that split a part's rows into shares
// (parts of them; alone: one part), and its share of a part.
struct Place {
  PetscInt parts = 1, at = 0;
  Range share(Range part) const {
    const Range s = split(part.size(), parts, at);
    return Range{part.begin + s.begin, part.begin + s.end};
  }
};

// Rank (a, b)'s places for cut c's peer p: `in`, where it receives (and
// returns the gradients of) share of p's part; `out`, the share of its own
// part p's rank receives from it. Without `identical` it sends all its rows
// and receives all of theirs; with it, the Ph ranks of a group split them,
// or the S ranks of a node where the rows cross between nodes in node shares
// (NodeSharing).
struct Places {
  const TokenLayout &t;
  bool identical;
  bool node(size_t c, const TokenPiece &p) const {
    return identical && t.nodes.shared(t.cuts[c].m, t.b, p.peer / t.nodes.Ph);
  }
  Place group() const { return identical ? Place{t.nodes.Ph, t.a} : Place{}; }
  Place in(size_t c, const TokenPiece &p) const {
    return node(c, p) ? Place{t.nodes.ranks(t.nodes.node(t.b)), t.nodes.place(t.b, t.a)} : group();
  }
  Place out(size_t c, const TokenPiece &p) const {
    const PetscInt pb = p.peer / t.nodes.Ph;
    return identical && t.nodes.shared(t.cuts[c].m, pb, t.b)
               ? Place{t.nodes.ranks(t.nodes.node(pb)), t.nodes.place(pb, t.a)}
               : group();
  }
};

// The peers' parts of the cut rows that `node` selects (those shared over
// the node, or over the group) in `parts` shares (share x of a part: split(part,
// parts, x) of its rows), laid out for one exchange over the node or the
// group: segment x of the buffer is share x of every selected part, in cut
// and peer order. each(x, move) calls move(rows in keys, entries, offset in
// the buffer) for share x of each selected part.
struct PeerShares {
  const TokenLayout &t;
  const Places &places;
  double *keys;
  PetscInt width, parts;
  bool node;
  std::vector<PetscInt> counts, begin;
  PeerShares(const Places &places_, double *keys_, PetscInt width_, bool node_)
      : t(places_.t), places(places_), keys(keys_), width(width_),
        parts(node_ ? t.nodes.ranks(t.nodes.node(t.b)) : places_.group().parts), node(node_),
        counts((size_t)parts, 0), begin((size_t)parts + 1, 0) {
    for (PetscInt x = 0; x < parts; ++x) {
      each(x, [&](double *, PetscInt n, PetscInt) { counts[x] += n; });
      begin[x + 1] = begin[x] + counts[x];
    }
  }
  PetscInt total() const { return begin[parts]; }
  template <class Move> void each(PetscInt x, Move move) const {
    PetscInt at = begin[x];
    for (size_t c = 0; c < t.cuts.size(); ++c)
      for (const TokenPiece &p : t.cuts[c].peers) {
        if (places.node(c, p) != node) continue;
        const Range sx = split(p.end - p.begin, parts, x);
        move(KeyRow(t, keys, width, c, p.begin + sx.begin), sx.size() * width, at);
        at += sx.size() * width;
      }
  }
  // The shares gathered by every rank of comm: this rank's (at) from keys, then all into keys.
  PetscErrorCode Allgather(MPI_Comm comm, PetscInt at) const {
    PetscFunctionBeginUser;
    if (total() == 0) PetscFunctionReturn(0);
    t.incoming.resize((size_t)total());
    double *buf = t.incoming.data();
    each(at, [&](double *rows, PetscInt n, PetscInt o) { std::copy(rows, rows + n, buf + o); });
    PetscCall(AllgatherSegments(comm, buf, counts));
    for (PetscInt x = 0; x < parts; ++x)
      if (x != at) each(x, [&](double *rows, PetscInt n, PetscInt o) { std::copy(buf + o, buf + o + n, rows); });
    PetscFunctionReturn(0);
  }
  // summed <- share `at` of the sum over comm's ranks of the selected parts' rows in keys.
  PetscErrorCode ReduceScatter(MPI_Comm comm, PetscInt at, std::vector<double> *summed) const {
    PetscFunctionBeginUser;
    summed->assign((size_t)counts[at], 0.0);
    if (total() == 0) PetscFunctionReturn(0);
    std::vector<double> buf((size_t)total());
    for (PetscInt x = 0; x < parts; ++x)
      each(x, [&](double *rows, PetscInt n, PetscInt o) { std::copy(rows, rows + n, buf.data() + o); });
    PetscCall(ReduceScatterSum(comm, buf.data(), counts, summed->data()));
    PetscFunctionReturn(0);
  }
};

} // namespace

PetscErrorCode TokensShareCutRowsBegin(const TokenLayout &t, double *keys, PetscInt width, bool identical,
                                       CutRowsInFlight *x) {
  InsideExchange inside;
  PetscFunctionBeginUser;
  PetscCheck(!x->active, PETSC_COMM_SELF, PETSC_ERR_ORDER, "the cut rows are already being shared");
  *x = CutRowsInFlight{};
  x->keys = keys, x->width = width, x->identical = identical, x->active = true, x->posted = MPI_Wtime();
  const Places places{t, identical};
  for (size_t c = 0; c < t.cuts.size(); ++c) {
    const CutSequence &cs = t.cuts[c];
    for (const TokenPiece &p : cs.peers) {
      const Range in = places.in(c, p).share({p.begin, p.end}), out = places.out(c, p).share(cs.mine);
      if (in.size() > 0)
        PetscCall(Post(t, false, {p.peer, in.begin, in.end}, KeyRow(t, keys, width, c, in.begin), width, x->req));
      if (out.size() > 0)
        PetscCall(Post(t, true, {p.peer, out.begin, out.end}, KeyRow(t, keys, width, c, out.begin), width, x->req));
    }
  }
  PetscFunctionReturn(0);
}

PetscErrorCode TokensShareCutRowsProgress(CutRowsInFlight *x) {
  InsideExchange inside;
  int arrived = 0;
  PetscFunctionBeginUser;
  if (!x->active || x->done >= 0) PetscFunctionReturn(0);
  PetscCallMPI(MPI_Testall((int)x->req.size(), x->req.data(), &arrived, MPI_STATUSES_IGNORE));
  if (arrived) x->done = MPI_Wtime();
  PetscFunctionReturn(0);
}

PetscErrorCode TokensShareCutRowsEnd(const TokenLayout &t, CutRowsInFlight *x) {
  InsideExchange inside;
  Place at;
  PetscFunctionBeginUser;
  if (!x->active) PetscFunctionReturn(0);
  double *keys = x->keys;
  const PetscInt width = x->width;
  if (x->done < 0) {
    PetscCallMPI(MPI_Waitall((int)x->req.size(), x->req.data(), MPI_STATUSES_IGNORE));
    x->done = MPI_Wtime();
  }
  traffic().in_flight += x->done - x->posted;
  x->active = false;
  if (!x->identical) PetscFunctionReturn(0);
  // The peers' rows, received in shares, completed within the group and the node by one allgather each.
  const Places places{t, true};
  if (t.nodes.Ph > 1) PetscCall(PeerShares(places, keys, width, false).Allgather(t.head_comm, t.a));
  if (t.node_comm != MPI_COMM_NULL)
    PetscCall(PeerShares(places, keys, width, true).Allgather(t.node_comm, t.nodes.place(t.b, t.a)));
  PetscFunctionReturn(0);
}

PetscErrorCode TokensReturnCutRows(const TokenLayout &t, double *keys, PetscInt width, bool identical) {
  std::vector<MPI_Request> req;
  PetscFunctionBeginUser;
  const Places places{t, identical};
  // With identical rows, the group first sums its ranks' gradients of the
  // peers' rows (one reduce-scatter over its Ph ranks, in shares; over the
  // node's S ranks for the parts shared over the node), and each rank
  // returns its share of the sums: the gradients cross between groups (and
  // nodes) once. Otherwise each rank returns all of its own.
  std::vector<double> group, node;
  const bool group_sums = identical && t.nodes.Ph > 1;
  if (group_sums) PetscCall(PeerShares(places, keys, width, false).ReduceScatter(t.head_comm, t.a, &group));
  if (identical) {
    if (t.node_comm != MPI_COMM_NULL)
      PetscCall(PeerShares(places, keys, width, true).ReduceScatter(t.node_comm, t.nodes.place(t.b, t.a), &node));
  }
  size_t incoming = 0;
  for (size_t c = 0; c < t.cuts.size(); ++c)
    for (const TokenPiece &p : t.cuts[c].peers)
      incoming += (size_t)places.out(c, p).share(t.cuts[c].mine).size() * (size_t)width;
  t.incoming.resize(incoming);
  double *in = t.incoming.data(), *from_group = group.data(), *from_node = node.data();
  for (size_t c = 0; c < t.cuts.size(); ++c) {
    const CutSequence &cs = t.cuts[c];
    for (const TokenPiece &p : cs.peers) {
      const Range mine = places.out(c, p).share(cs.mine), theirs = places.in(c, p).share({p.begin, p.end});
      const bool node_sums = places.node(c, p);
      double *&summed = node_sums ? from_node : from_group;
      if (mine.size() > 0) PetscCall(Post(t, false, {p.peer, mine.begin, mine.end}, in, width, req));
      if (theirs.size() > 0)
        PetscCall(Post(t, true, {p.peer, theirs.begin, theirs.end},
                       node_sums || group_sums ? summed : KeyRow(t, keys, width, c, theirs.begin), width, req));
      in += (std::ptrdiff_t)mine.size() * width;
      if (node_sums || group_sums) summed += (std::ptrdiff_t)theirs.size() * width;
    }
  }
  PetscCallMPI(MPI_Waitall((int)req.size(), req.data(), MPI_STATUSES_IGNORE));
  // Each peer's gradients of this rank's rows, added in peer order.
  in = t.incoming.data();
  for (size_t c = 0; c < t.cuts.size(); ++c) {
    const CutSequence &cs = t.cuts[c];
    for (const TokenPiece &p : cs.peers) {
      const Range mine = places.out(c, p).share(cs.mine);
      double *rows = KeyRow(t, keys, width, c, mine.begin);
      const std::ptrdiff_t n = (std::ptrdiff_t)mine.size() * width;
      for (std::ptrdiff_t e = 0; e < n; ++e) rows[e] += in[e];
      in += n;
    }
  }
  PetscFunctionReturn(0);
}

} // namespace mft
