// Token layout: ownership ranges, the group's gather, the key projections of cut sequences.
#include "mft/tokens.hpp"

#include "mft/exchange.hpp"

#include <algorithm>

namespace mft {

namespace {
constexpr PetscMPIInt kTag = 7152;
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
  PetscMPIInt n, peer;
  PetscFunctionBeginUser;
  PetscCall(MessageCount(t.peer_comm, (std::int64_t)(p.end - p.begin) * width, &n));
  PetscCall(PetscMPIIntCast(p.peer, &peer));
  req.emplace_back();
  if (send) {
    PetscCallMPI(MPI_Isend(base, n, MPI_DOUBLE, peer, kTag, t.peer_comm, &req.back()));
    ++traffic().messages;
    traffic().bytes += 8 * (long long)n;
  } else {
    PetscCallMPI(MPI_Irecv(base, n, MPI_DOUBLE, peer, kTag, t.peer_comm, &req.back()));
  }
  PetscFunctionReturn(0);
}

// The row of flat token j (in cut c's sequence) in the key projections.
double *KeyRow(const TokenLayout &t, double *keys, PetscInt width, size_t c, PetscInt j) {
  return keys + ((std::ptrdiff_t)c * t.N + j - t.cuts[c].m * t.N) * (std::ptrdiff_t)width;
}

// This rank's place among the Ph ranks of its group that hold the same rows
// (with `identical`; otherwise alone, Ph = 1), and its share of a part's
// rows split over them: all of them, or its Ph-th.
struct Place {
  PetscMPIInt Ph = 1, a = 0;
  Range share(Range part) const {
    const Range s = split(part.size(), Ph, a);
    return Range{part.begin + s.begin, part.begin + s.end};
  }
};

PetscErrorCode PlaceOf(const TokenLayout &t, bool identical, Place *at) {
  PetscFunctionBeginUser;
  *at = Place{};
  if (identical) {
    PetscCallMPI(MPI_Comm_size(t.head_comm, &at->Ph));
    PetscCallMPI(MPI_Comm_rank(t.head_comm, &at->a));
  }
  PetscFunctionReturn(0);
}

// The peers' parts of the cut rows in Ph shares (share x of a part:
// split(part, Ph, x) of its rows), laid out for one exchange over the group:
// segment x of the buffer is share x of every peer part, in cut and peer
// order. each(x, move) calls move(rows in keys, entries, offset in the buffer)
// for share x of each peer part.
struct PeerShares {
  const TokenLayout &t;
  double *keys;
  PetscInt width;
  PetscMPIInt Ph;
  std::vector<PetscInt> counts, begin;
  PeerShares(const TokenLayout &t_, double *keys_, PetscInt width_, PetscMPIInt Ph_)
      : t(t_), keys(keys_), width(width_), Ph(Ph_), counts((size_t)Ph_, 0), begin((size_t)Ph_ + 1, 0) {
    for (PetscMPIInt x = 0; x < Ph; ++x) {
      for (const CutSequence &cs : t.cuts)
        for (const TokenPiece &p : cs.peers) counts[x] += split(p.end - p.begin, Ph, x).size() * width;
      begin[x + 1] = begin[x] + counts[x];
    }
  }
  template <class Move> void each(PetscMPIInt x, Move move) const {
    PetscInt at = begin[x];
    for (size_t c = 0; c < t.cuts.size(); ++c)
      for (const TokenPiece &p : t.cuts[c].peers) {
        const Range sx = split(p.end - p.begin, Ph, x);
        move(KeyRow(t, keys, width, c, p.begin + sx.begin), sx.size() * width, at);
        at += sx.size() * width;
      }
  }
};

} // namespace

PetscErrorCode TokensShareCutRowsBegin(const TokenLayout &t, double *keys, PetscInt width, bool identical,
                                       CutRowsInFlight *x) {
  InsideExchange inside;
  Place at;
  PetscFunctionBeginUser;
  PetscCheck(!x->active, PETSC_COMM_SELF, PETSC_ERR_ORDER, "the cut rows are already being shared");
  *x = CutRowsInFlight{};
  x->keys = keys, x->width = width, x->identical = identical, x->active = true, x->posted = MPI_Wtime();
  PetscCall(PlaceOf(t, identical, &at));
  for (size_t c = 0; c < t.cuts.size(); ++c) {
    const CutSequence &cs = t.cuts[c];
    const Range out = at.share(cs.mine);
    for (const TokenPiece &p : cs.peers) {
      const Range in = at.share({p.begin, p.end});
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
  PetscCall(PlaceOf(t, x->identical, &at));
  if (at.Ph > 1) { // the peers' rows, received in shares, completed within the group by one allgather
    const PeerShares shares(t, keys, width, at.Ph);
    t.incoming.resize((size_t)shares.begin[at.Ph]);
    double *buf = t.incoming.data();
    shares.each(at.a, [&](double *rows, PetscInt n, PetscInt o) { std::copy(rows, rows + n, buf + o); });
    PetscCall(AllgatherSegments(t.head_comm, buf, shares.counts));
    for (PetscMPIInt g = 0; g < at.Ph; ++g)
      if (g != at.a)
        shares.each(g, [&](double *rows, PetscInt n, PetscInt o) { std::copy(buf + o, buf + o + n, rows); });
  }
  PetscFunctionReturn(0);
}

PetscErrorCode TokensReturnCutRows(const TokenLayout &t, double *keys, PetscInt width, bool identical) {
  std::vector<MPI_Request> req;
  Place at;
  PetscFunctionBeginUser;
  PetscCall(PlaceOf(t, identical, &at));
  const PetscMPIInt Ph = at.Ph;
  // With identical rows, the group first sums its ranks' gradients of the
  // peers' rows (one reduce-scatter over its Ph ranks, in shares), and each
  // rank returns its share of the sums: the gradients cross between groups
  // once, not Ph times. Otherwise each rank returns all of its own.
  std::vector<double> summed;
  if (Ph > 1) {
    const PeerShares shares(t, keys, width, Ph);
    std::vector<double> buf((size_t)shares.begin[Ph]);
    for (PetscMPIInt x = 0; x < Ph; ++x)
      shares.each(x, [&](double *rows, PetscInt n, PetscInt at) { std::copy(rows, rows + n, buf.data() + at); });
    summed.resize((size_t)shares.counts[at.a]);
    PetscCall(ReduceScatterSum(t.head_comm, buf.data(), shares.counts, summed.data()));
  }
  size_t incoming = 0;
  for (const CutSequence &cs : t.cuts) incoming += cs.peers.size() * (size_t)at.share(cs.mine).size() * (size_t)width;
  t.incoming.resize(incoming);
  double *in = t.incoming.data(), *out = summed.data();
  for (size_t c = 0; c < t.cuts.size(); ++c) {
    const CutSequence &cs = t.cuts[c];
    const Range mine = at.share(cs.mine);
    for (const TokenPiece &p : cs.peers) {
      const Range theirs = at.share({p.begin, p.end});
      if (mine.size() > 0) PetscCall(Post(t, false, {p.peer, mine.begin, mine.end}, in, width, req));
      if (theirs.size() > 0)
        PetscCall(Post(t, true, {p.peer, theirs.begin, theirs.end}, Ph > 1 ? out : KeyRow(t, keys, width, c, p.begin),
                       width, req));
      in += (std::ptrdiff_t)mine.size() * width;
      out += Ph > 1 ? (std::ptrdiff_t)theirs.size() * width : 0;
    }
  }
  PetscCallMPI(MPI_Waitall((int)req.size(), req.data(), MPI_STATUSES_IGNORE));
  in = t.incoming.data();
  for (size_t c = 0; c < t.cuts.size(); ++c) {
    const CutSequence &cs = t.cuts[c];
    const Range mine = at.share(cs.mine);
    double *rows = KeyRow(t, keys, width, c, mine.begin);
    const std::ptrdiff_t n = (std::ptrdiff_t)mine.size() * width;
    for (size_t p = 0; p < cs.peers.size(); ++p, in += n)
      for (std::ptrdiff_t e = 0; e < n; ++e) rows[e] += in[e];
  }
  PetscFunctionReturn(0);
}

} // namespace mft
