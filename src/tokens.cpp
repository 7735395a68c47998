// Token layout: ownership ranges and the two-stage gather of whole sequences.
#include "mft/tokens.hpp"

#include "mft/exchange.hpp"

#include <algorithm>

namespace mft {

namespace {
constexpr PetscMPIInt kTag = 7152;
}

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

TokenPlan TokenPlanFor(PetscInt P, PetscInt Ph, PetscInt M, PetscInt N, PetscInt rank) {
  const PetscInt Pt = P / Ph, a = rank % Ph, b = rank / Ph;
  TokenPlan plan;
  auto group_of = [&](PetscInt token) { // the last token group that begins at or before token
    PetscInt lo = 0, hi = Pt - 1;
    while (lo < hi) {
      const PetscInt mid = (lo + hi + 1) / 2;
      if (split(M * N, Pt, mid).begin <= token) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  // What rank (a_, g) of each other token group g owns of the tokens [t0, t1), in token order.
  auto pieces = [&](PetscInt a_, PetscInt t0, PetscInt t1, std::vector<TokenPiece> &out) {
    if (t1 <= t0) return;
    for (PetscInt g = group_of(t0); g < Pt && split(M * N, Pt, g).begin < t1; ++g) {
      if (g == b) continue;
      const Range own = OwnedTokens(P, Ph, M, N, g * Ph + a_);
      const PetscInt lo = std::max(own.begin, t0), hi = std::min(own.end, t1);
      if (hi > lo) out.push_back({g * Ph + a_, lo, hi});
    }
  };
  const Range s = GroupSequences(P, Ph, M, N, rank);
  pieces(a, s.begin * N, s.end * N, plan.receive);
  // The other groups whose sequences meet the owned tokens, in group order.
  const Range own = OwnedTokens(P, Ph, M, N, rank);
  if (own.size() > 0)
    for (PetscInt g = group_of((own.begin / N) * N); g < Pt; ++g) {
      const Range sg = GroupSequences(P, Ph, M, N, g * Ph);
      if (sg.size() > 0 && sg.begin * N >= own.end) break;
      const PetscInt lo = std::max(own.begin, sg.begin * N), hi = std::min(own.end, sg.end * N);
      if (g != b && hi > lo) plan.give.push_back({g * Ph + a, lo, hi});
    }
  // Stage B: each rank of the group brings its own tokens, then what it received.
  plan.segments.resize((size_t)Ph);
  plan.counts.assign((size_t)Ph, 0);
  for (PetscInt a_ = 0; a_ < Ph; ++a_) {
    std::vector<TokenPiece> got;
    pieces(a_, s.begin * N, s.end * N, got);
    const Range mine = OwnedTokens(P, Ph, M, N, b * Ph + a_);
    std::vector<Range> &seg = plan.segments[a_];
    if (mine.size() > 0) seg.push_back(mine);
    for (const TokenPiece &p : got) seg.push_back({p.begin, p.end});
    for (const Range &r : seg) plan.counts[a_] += r.size();
  }
  return plan;
}

Range TokenLayout::queries(PetscInt m) const {
  Range r;
  r.begin = std::max(group.begin - m * N, (PetscInt)0);
  r.end = std::min(group.end - m * N, N);
  if (r.end < r.begin) r.end = r.begin;
  return r;
}

PetscErrorCode TokenLayoutCreate(const Grid &g, PetscInt M, PetscInt N, PetscInt d, TokenLayout *t) {
  PetscFunctionBeginUser;
  t->M = M;
  t->N = N;
  t->d = d;
  t->comm = g.comm;
  t->head_comm = g.head_comm;
  t->group = GroupTokens(g.size, g.Ph, M, N, g.rank);
  t->owned = OwnedTokens(g.size, g.Ph, M, N, g.rank);
  t->seqs = GroupSequences(g.size, g.Ph, M, N, g.rank);
  t->counts.resize(g.Ph);
  for (PetscInt a = 0; a < g.Ph; ++a) t->counts[a] = split(t->group.size(), g.Ph, a).size() * d;
  t->plan = TokenPlanFor(g.size, g.Ph, M, N, g.rank);
  for (PetscInt &c : t->plan.counts) c *= d; // entries, not tokens
  PetscInt given = 0;
  for (const TokenPiece &p : t->plan.give) given += (p.end - p.begin) * d;
  t->incoming.assign((size_t)given, 0.0);
  t->staging.assign((size_t)(t->seqs.size() * N * d), 0.0);
  PetscCall(VecCreateMPI(g.comm, t->owned.size() * d, M * N * d, &t->state));
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, t->seqs.size() * N * d, &t->local));
  PetscFunctionReturn(0);
}

PetscErrorCode TokenLayoutDestroy(TokenLayout *t) {
  PetscFunctionBeginUser;
  PetscCall(VecDestroy(&t->state));
  PetscCall(VecDestroy(&t->local));
  PetscFunctionReturn(0);
}

namespace {

// Posts a send or a receive of tokens [begin, end) at `base` (d entries a token).
PetscErrorCode Post(const TokenLayout &t, bool send, const TokenPiece &p, double *base, std::vector<MPI_Request> &req) {
  PetscMPIInt n, peer;
  PetscFunctionBeginUser;
  PetscCall(PetscMPIIntCast((p.end - p.begin) * t.d, &n));
  PetscCall(PetscMPIIntCast(p.peer, &peer));
  req.emplace_back();
  if (send) {
    PetscCallMPI(MPI_Isend(base, n, MPI_DOUBLE, peer, kTag, t.comm, &req.back()));
    ++traffic().messages;
    traffic().bytes += 8 * (long long)n;
  } else {
    PetscCallMPI(MPI_Irecv(base, n, MPI_DOUBLE, peer, kTag, t.comm, &req.back()));
  }
  PetscFunctionReturn(0);
}

// Posts the pieces, one after the other in the contiguous buffer `base`.
PetscErrorCode PostPacked(const TokenLayout &t, bool send, const std::vector<TokenPiece> &pieces, double *base,
                          std::vector<MPI_Request> &req) {
  PetscFunctionBeginUser;
  for (const TokenPiece &p : pieces) {
    PetscCall(Post(t, send, p, base, req));
    base += (p.end - p.begin) * t.d;
  }
  PetscFunctionReturn(0);
}

// Copies between the staging vector (the group's segments in order) and the
// gathered sequences: into local, or out of it.
void Unstage(const TokenLayout &t, double *local, bool to_local) {
  const PetscInt first = t.seqs.begin * t.N;
  double *st = t.staging.data();
  for (const auto &seg : t.plan.segments)
    for (const Range &r : seg) {
      double *lo = local + (r.begin - first) * t.d;
      const PetscInt n = r.size() * t.d;
      if (to_local) std::copy(st, st + n, lo);
      else std::copy(lo, lo + n, st);
      st += n;
    }
}

// The first entry of segment a in the staging vector.
PetscInt SegmentBegin(const TokenLayout &t, PetscMPIInt a) {
  PetscInt begin = 0;
  for (PetscMPIInt r = 0; r < a; ++r) begin += t.plan.counts[r];
  return begin;
}

} // namespace

PetscErrorCode TokensGather(const TokenLayout &t, Vec state, Vec local) {
  const PetscScalar *xs;
  PetscScalar *xl;
  PetscMPIInt a;
  std::vector<MPI_Request> req;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(t.head_comm, &a));
  PetscCall(VecGetArrayRead(state, &xs));
  PetscCall(VecGetArray(local, &xl));
  // Stage A: this rank's segment is its own tokens, then what it receives.
  double *seg = t.staging.data() + SegmentBegin(t, a);
  std::copy(xs, xs + t.owned.size() * t.d, seg);
  PetscCall(PostPacked(t, false, t.plan.receive, seg + t.owned.size() * t.d, req));
  for (const TokenPiece &p : t.plan.give)
    PetscCall(Post(t, true, p, const_cast<double *>(xs) + (p.begin - t.owned.begin) * t.d, req));
  PetscCallMPI(MPI_Waitall((int)req.size(), req.data(), MPI_STATUSES_IGNORE));
  // Stage B: every segment of the group, then into sequence order.
  PetscCall(AllgatherSegments(t.head_comm, t.staging.data(), t.plan.counts));
  Unstage(t, xl, true);
  PetscCall(VecRestoreArray(local, &xl));
  PetscCall(VecRestoreArrayRead(state, &xs));
  PetscFunctionReturn(0);
}

PetscErrorCode TokensScatterAdd(const TokenLayout &t, Vec local, Vec state) {
  const PetscScalar *xl;
  PetscScalar *xs;
  PetscMPIInt a;
  std::vector<MPI_Request> req;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(t.head_comm, &a));
  PetscCall(VecGetArrayRead(local, &xl));
  PetscCall(VecGetArray(state, &xs));
  // Stage B reversed: the group's sum of each segment, onto its rank.
  Unstage(t, const_cast<double *>(xl), false);
  const PetscInt n = t.owned.size() * t.d;
  std::vector<double> seg((size_t)t.plan.counts[a]);
  PetscCall(ReduceScatterSum(t.head_comm, t.staging.data(), t.plan.counts, seg.data()));
  // Stage A reversed: the received pieces go back to their owners, and the
  // other groups' sums of the own tokens come in.
  PetscCall(PostPacked(t, true, t.plan.receive, seg.data() + n, req));
  PetscCall(PostPacked(t, false, t.plan.give, t.incoming.data(), req));
  PetscCallMPI(MPI_Waitall((int)req.size(), req.data(), MPI_STATUSES_IGNORE));
  // The own group's sum first, then the other groups' in group order.
  std::copy(seg.data(), seg.data() + n, xs);
  const double *in = t.incoming.data();
  for (const TokenPiece &p : t.plan.give) {
    for (PetscInt e = 0; e < (p.end - p.begin) * t.d; ++e) xs[(p.begin - t.owned.begin) * t.d + e] += in[e];
    in += (p.end - p.begin) * t.d;
  }
  PetscCall(VecRestoreArray(state, &xs));
  PetscCall(VecRestoreArrayRead(local, &xl));
  PetscFunctionReturn(0);
}

} // namespace mft
