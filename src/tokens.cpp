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

} // namespace

PetscErrorCode TokensShareCutRowsBegin(const TokenLayout &t, double *keys, PetscInt width, bool identical,
                                       CutRowsInFlight *x) {
  InsideExchange inside;
  PetscMPIInt Ph = 1, a = 0;
  PetscFunctionBeginUser;
  PetscCheck(!x->active, PETSC_COMM_SELF, PETSC_ERR_ORDER, "the cut rows are already being shared");
  *x = CutRowsInFlight{};
  x->keys = keys, x->width = width, x->identical = identical, x->active = true, x->posted = MPI_Wtime();
  if (identical) {
    PetscCallMPI(MPI_Comm_size(t.head_comm, &Ph));
    PetscCallMPI(MPI_Comm_rank(t.head_comm, &a));
  }
  // This rank's share of a part's rows: all of them, or its Ph-th when identical.
  auto share = [&](Range part) {
    const Range s = split(part.size(), Ph, a);
    return Range{part.begin + s.begin, part.begin + s.end};
  };
  for (size_t c = 0; c < t.cuts.size(); ++c) {
    const CutSequence &cs = t.cuts[c];
    const Range out = share(cs.mine);
    for (const TokenPiece &p : cs.peers) {
      const Range in = share({p.begin, p.end});
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
  PetscMPIInt Ph = 1, a = 0;
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
  if (x->identical) {
    PetscCallMPI(MPI_Comm_size(t.head_comm, &Ph));
    PetscCallMPI(MPI_Comm_rank(t.head_comm, &a));
  }
  if (Ph > 1) { // the peers' rows, received in shares, completed within the group by one allgather
    // Segment x of the buffer: rank x's shares of every peer part, in order.
    std::vector<PetscInt> counts((size_t)Ph, 0), begin((size_t)Ph + 1, 0);
    for (PetscMPIInt g = 0; g < Ph; ++g) {
      for (const CutSequence &cs : t.cuts)
        for (const TokenPiece &p : cs.peers) counts[g] += split(p.end - p.begin, Ph, g).size() * width;
      begin[g + 1] = begin[g] + counts[g];
    }
    t.incoming.resize((size_t)begin[Ph]);
    auto each = [&](PetscMPIInt g, auto &&move) { // move(rows in keys, entries, offset in the buffer)
      PetscInt at = begin[g];
      for (size_t c = 0; c < t.cuts.size(); ++c)
        for (const TokenPiece &p : t.cuts[c].peers) {
          const Range sx = split(p.end - p.begin, Ph, g);
          move(KeyRow(t, keys, width, c, p.begin + sx.begin), sx.size() * width, at);
          at += sx.size() * width;
        }
    };
    double *buf = t.incoming.data();
    each(a, [&](double *rows, PetscInt n, PetscInt at) { std::copy(rows, rows + n, buf + at); });
    PetscCall(AllgatherSegments(t.head_comm, buf, counts));
    for (PetscMPIInt g = 0; g < Ph; ++g)
      if (g != a) each(g, [&](double *rows, PetscInt n, PetscInt at) { std::copy(buf + at, buf + at + n, rows); });
  }
  PetscFunctionReturn(0);
}

PetscErrorCode TokensReturnCutRows(const TokenLayout &t, double *keys, PetscInt width) {
  std::vector<MPI_Request> req;
  PetscFunctionBeginUser;
  size_t incoming = 0;
  for (const CutSequence &cs : t.cuts) incoming += cs.peers.size() * (size_t)cs.mine.size() * (size_t)width;
  t.incoming.resize(incoming);
  double *in = t.incoming.data();
  for (size_t c = 0; c < t.cuts.size(); ++c) {
    const CutSequence &cs = t.cuts[c];
    for (const TokenPiece &p : cs.peers) {
      PetscCall(Post(t, false, {p.peer, cs.mine.begin, cs.mine.end}, in, width, req));
      PetscCall(Post(t, true, p, KeyRow(t, keys, width, c, p.begin), width, req));
      in += (std::ptrdiff_t)cs.mine.size() * width;
    }
  }
  PetscCallMPI(MPI_Waitall((int)req.size(), req.data(), MPI_STATUSES_IGNORE));
  in = t.incoming.data();
  for (size_t c = 0; c < t.cuts.size(); ++c) {
    const CutSequence &cs = t.cuts[c];
    double *mine = KeyRow(t, keys, width, c, cs.mine.begin);
    const std::ptrdiff_t rows = (std::ptrdiff_t)cs.mine.size() * width;
    for (size_t p = 0; p < cs.peers.size(); ++p, in += rows)
      for (std::ptrdiff_t e = 0; e < rows; ++e) mine[e] += in[e];
  }
  PetscFunctionReturn(0);
}

} // namespace mft
