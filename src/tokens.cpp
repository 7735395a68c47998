// Token layout: ownership ranges and the gather of whole sequences.
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
  TokenPlan plan;
  // Owners are consecutive in rank order: walk them from the first one of a range.
  auto first_owner = [&](PetscInt token) {
    PetscInt lo = 0, hi = P - 1; // the last rank whose owned range begins at or before token
    while (lo < hi) {
      const PetscInt mid = (lo + hi + 1) / 2;
      if (OwnedTokens(P, Ph, M, N, mid).begin <= token) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  const Range s = GroupSequences(P, Ph, M, N, rank);
  for (PetscInt o = s.size() ? first_owner(s.begin * N) : P; o < P; ++o) {
    const Range own = OwnedTokens(P, Ph, M, N, o);
    if (own.begin >= s.end * N) break;
    const PetscInt lo = std::max(own.begin, s.begin * N), hi = std::min(own.end, s.end * N);
    if (hi > lo) plan.gather.push_back({o, lo, hi});
  }
  // The token groups whose sequences meet the owned tokens (those whose tokens
  // meet the owned tokens' sequences), each of their Ph ranks.
  const Range own = OwnedTokens(P, Ph, M, N, rank);
  const PetscInt Pt = P / Ph;
  auto group_of = [&](PetscInt token) { // the last token group that begins at or before token
    PetscInt lo = 0, hi = Pt - 1;
    while (lo < hi) {
      const PetscInt mid = (lo + hi + 1) / 2;
      if (split(M * N, Pt, mid).begin <= token) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  if (own.size() > 0)
    for (PetscInt b = group_of((own.begin / N) * N); b < Pt; ++b) {
      const Range sb = GroupSequences(P, Ph, M, N, b * Ph);
      if (sb.size() > 0 && sb.begin * N >= own.end) break;
      const PetscInt lo = std::max(own.begin, sb.begin * N), hi = std::min(own.end, sb.end * N);
      if (hi <= lo) continue;
      for (PetscInt a = 0; a < Ph; ++a)
        if (b * Ph + a != rank) plan.give.push_back({b * Ph + a, lo, hi});
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
  t->group = GroupTokens(g.size, g.Ph, M, N, g.rank);
  t->owned = OwnedTokens(g.size, g.Ph, M, N, g.rank);
  t->seqs = GroupSequences(g.size, g.Ph, M, N, g.rank);
  t->counts.resize(g.Ph);
  for (PetscInt a = 0; a < g.Ph; ++a) t->counts[a] = split(t->group.size(), g.Ph, a).size() * d;
  t->plan = TokenPlanFor(g.size, g.Ph, M, N, g.rank);
  PetscInt given = 0;
  for (const TokenPiece &p : t->plan.give) given += (p.end - p.begin) * d;
  t->incoming.assign((size_t)given, 0.0);
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

} // namespace

PetscErrorCode TokensGather(const TokenLayout &t, Vec state, Vec local) {
  const PetscScalar *xs;
  PetscScalar *xl;
  PetscMPIInt rank;
  std::vector<MPI_Request> req;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(t.comm, &rank));
  PetscCall(VecGetArrayRead(state, &xs));
  PetscCall(VecGetArray(local, &xl));
  const PetscInt first = t.seqs.begin * t.N;
  for (const TokenPiece &p : t.plan.gather) {
    double *into = xl + (p.begin - first) * t.d;
    if (p.peer == rank) std::copy(xs + (p.begin - t.owned.begin) * t.d, xs + (p.end - t.owned.begin) * t.d, into);
    else PetscCall(Post(t, false, p, into, req));
  }
  for (const TokenPiece &p : t.plan.give)
    PetscCall(Post(t, true, p, const_cast<double *>(xs) + (p.begin - t.owned.begin) * t.d, req));
  PetscCallMPI(MPI_Waitall((int)req.size(), req.data(), MPI_STATUSES_IGNORE));
  PetscCall(VecRestoreArray(local, &xl));
  PetscCall(VecRestoreArrayRead(state, &xs));
  PetscFunctionReturn(0);
}

PetscErrorCode TokensScatterAdd(const TokenLayout &t, Vec local, Vec state) {
  const PetscScalar *xl;
  PetscScalar *xs;
  PetscMPIInt rank;
  std::vector<MPI_Request> req;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(t.comm, &rank));
  PetscCall(VecGetArrayRead(local, &xl));
  PetscCall(VecGetArray(state, &xs));
  std::fill(xs, xs + t.owned.size() * t.d, 0.0);
  const PetscInt first = t.seqs.begin * t.N;
  double *in = t.incoming.data();
  for (const TokenPiece &p : t.plan.give) {
    PetscCall(Post(t, false, p, in, req));
    in += (p.end - p.begin) * t.d;
  }
  for (const TokenPiece &p : t.plan.gather)
    if (p.peer != rank) PetscCall(Post(t, true, p, const_cast<double *>(xl) + (p.begin - first) * t.d, req));
  PetscCallMPI(MPI_Waitall((int)req.size(), req.data(), MPI_STATUSES_IGNORE));
  // The own part first, then the peers' in rank order.
  for (const TokenPiece &p : t.plan.gather)
    if (p.peer == rank)
      for (PetscInt e = 0; e < (p.end - p.begin) * t.d; ++e)
        xs[(p.begin - t.owned.begin) * t.d + e] += xl[(p.begin - first) * t.d + e];
  in = t.incoming.data();
  for (const TokenPiece &p : t.plan.give) {
    for (PetscInt e = 0; e < (p.end - p.begin) * t.d; ++e) xs[(p.begin - t.owned.begin) * t.d + e] += in[e];
    in += (p.end - p.begin) * t.d;
  }
  PetscCall(VecRestoreArray(state, &xs));
  PetscCall(VecRestoreArrayRead(local, &xl));
  PetscFunctionReturn(0);
}

} // namespace mft
