// Reduce-scatter and allgather by recursive halving and doubling, counted.
//
// Each call follows a plan (the list of this rank's sends and receives), so
// that the cost model counts exactly the messages the program sends.
#include "mft/layout/exchange.hpp"

#include <algorithm>
#include <limits>

namespace mft {

Traffic &traffic() {
  static Traffic t;
  return t;
}

PetscErrorCode TrafficMean(MPI_Comm comm, double *messages, double *bytes) {
  double mine[2] = {(double)traffic().messages, (double)traffic().bytes}, sum[2];
  PetscMPIInt size;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Allreduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, comm));
  *messages = sum[0] / size;
  *bytes = sum[1] / size;
  PetscFunctionReturn(0);
}

PetscErrorCode MessageCount(MPI_Comm comm, std::int64_t n, PetscMPIInt *count) {
  PetscFunctionBeginUser;
  PetscCheck(n >= 0 && n <= (std::int64_t)std::numeric_limits<PetscMPIInt>::max(), comm, PETSC_ERR_ARG_OUTOFRANGE,
             "a message of %lld numbers: more than MPI's int count holds (use more ranks)", (long long)n);
  *count = (PetscMPIInt)n;
  PetscFunctionReturn(0);
}

namespace {

constexpr PetscMPIInt kTag = 7151;

// The ranks as p2 'virtual' ranks: the first 2 rem ranks fold in pairs
// (2v, 2v+1) onto virtual rank v, the others map one to one.
struct Fold {
  PetscInt P = 1, rank = 0, p2 = 1, rem = 0;
  std::vector<PetscInt> displ; // displ[r]: first entry of segment r; displ[P]: the total
  Fold(PetscInt P_, PetscInt rank_, const std::vector<PetscInt> &counts) : P(P_), rank(rank_) {
    while (2 * p2 <= P) p2 *= 2;
    rem = P - p2;
    displ.assign((size_t)P + 1, 0);
    for (PetscInt r = 0; r < P; ++r) displ[r + 1] = displ[r] + counts[r];
  }
  PetscInt first(PetscInt v) const { return v < rem ? 2 * v : v + rem; } // first real rank of v, v <= p2
  PetscInt virt() const { return rank < 2 * rem ? rank / 2 : rank - rem; }
  bool folded_odd() const { return rank < 2 * rem && rank % 2 == 1; }
  bool folded_even() const { return rank < 2 * rem && rank % 2 == 0; }
  PetscInt begin(PetscInt v) const { return displ[first(v)]; } // first entry of virtual rank v
};

} // namespace

std::vector<ExchangeStep> ExchangePlan(ExchangeKind kind, PetscInt P, PetscInt rank, const std::vector<PetscInt> &counts) {
  const Fold f(P, rank, counts);
  const PetscInt total = f.displ[P], seg0 = f.displ[rank], seg1 = f.displ[rank + 1];
  std::vector<ExchangeStep> plan;
  const bool reduce = kind == ExchangeKind::reduce_scatter;
  auto step = [&](PetscInt peer, PetscInt s0, PetscInt s1, PetscInt r0, PetscInt r1) {
    plan.push_back({peer, s0, s1, r0, r1, reduce});
  };
  if (P == 1) return plan;
  if (f.folded_odd()) { // reduce: give everything, get the own segment; gather: the reverse
    // A send and then a receive, never one Sendrecv: the two ranges overlap,
    // and MPI forbids a receive into the buffer being sent.
    if (reduce) {
      step(rank - 1, 0, total, 0, 0);
      plan.push_back({rank - 1, 0, 0, seg0, seg1, false}); // the finished sum comes back
    } else {
      step(rank - 1, seg0, seg1, 0, 0);
      step(rank - 1, 0, 0, 0, total);
    }
    return plan;
  }
  const PetscInt next0 = f.displ[std::min(rank + 1, P)], next1 = f.displ[std::min(rank + 2, P)];
  if (f.folded_even()) {
    if (reduce) step(rank + 1, 0, 0, 0, total);
    else step(rank + 1, 0, 0, next0, next1);
  }
  const PetscInt v = f.virt();
  if (reduce) { // halving: keep the half of [lo, lo + 2 mask) that holds v, send the other half
    PetscInt lo = 0;
    for (PetscInt mask = f.p2 / 2; mask >= 1; mask /= 2) {
      const PetscInt keep = v < lo + mask ? lo : lo + mask, give = v < lo + mask ? lo + mask : lo;
      step(f.first(v ^ mask), f.begin(give), f.begin(give + mask), f.begin(keep), f.begin(keep + mask));
      lo = keep;
    }
  } else { // doubling: the known block [base, base + mask) grows to twice its size
    for (PetscInt mask = 1; mask < f.p2; mask *= 2) {
      const PetscInt base = v - v % mask, other = base ^ mask;
      step(f.first(v ^ mask), f.begin(base), f.begin(base + mask), f.begin(other), f.begin(other + mask));
    }
  }
  if (f.folded_even()) {
    if (reduce) step(rank + 1, next0, next1, 0, 0);
    else step(rank + 1, 0, total, 0, 0);
  }
  return plan;
}

namespace {

// Posts step x->next of the plan: its receive and its send (nothing when done).
PetscErrorCode PostStep(ExchangeInFlight *x) {
  PetscMPIInt peer, ns = 0, nr = 0;
  PetscFunctionBeginUser;
  if (x->next >= x->plan.size()) PetscFunctionReturn(0);
  const ExchangeStep &s = x->plan[x->next];
  PetscCall(PetscMPIIntCast(s.peer, &peer));
  PetscCall(MessageCount(x->comm, s.send_end - s.send_begin, &ns));
  PetscCall(MessageCount(x->comm, s.recv_end - s.recv_begin, &nr));
  // A sum receives into scratch and adds (its order depends only on P); a gather stores.
  double *into = x->data + s.recv_begin;
  if (s.add) {
    x->in.resize(std::max(x->in.size(), (size_t)nr));
    into = x->in.data();
  }
  if (nr > 0) PetscCallMPI(MPI_Irecv(into, nr, MPI_DOUBLE, peer, x->tag, x->comm, &x->req[0]));
  if (ns > 0) {
    PetscCallMPI(MPI_Isend(x->data + s.send_begin, ns, MPI_DOUBLE, peer, x->tag, x->comm, &x->req[1]));
    ++traffic().messages;
    traffic().bytes += 8 * (long long)ns;
  }
  PetscFunctionReturn(0);
}

// Step x->next has arrived: a sum adds what came, and the next step is posted.
PetscErrorCode FinishStep(ExchangeInFlight *x) {
  PetscFunctionBeginUser;
  const ExchangeStep &s = x->plan[x->next];
  if (s.add)
    for (PetscInt i = 0; i < s.recv_end - s.recv_begin; ++i) x->data[s.recv_begin + i] += x->in[i];
  ++x->next;
  PetscCall(PostStep(x));
  if (x->next == x->plan.size()) x->done = MPI_Wtime();
  PetscFunctionReturn(0);
}

PetscErrorCode Start(MPI_Comm comm, ExchangeKind kind, PetscMPIInt tag, double *data,
                     const std::vector<PetscInt> &counts, double *out, bool behind, ExchangeInFlight *x) {
  PetscMPIInt P, rank;
  PetscFunctionBeginUser;
  PetscCheck(x->comm == MPI_COMM_NULL, comm, PETSC_ERR_ORDER, "an exchange is already in flight here");
  PetscCallMPI(MPI_Comm_size(comm, &P));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCheck((PetscMPIInt)counts.size() == P, comm, PETSC_ERR_ARG_SIZ, "%zu segments for %d ranks", counts.size(), P);
  ++traffic().calls;
  x->comm = comm;
  x->tag = tag;
  x->behind = behind;
  x->data = data;
  x->out = out;
  x->out_begin = 0;
  for (PetscMPIInt r = 0; r < rank; ++r) x->out_begin += counts[r];
  x->out_count = counts[rank];
  x->plan = ExchangePlan(kind, P, rank, counts);
  x->next = 0;
  x->posted = MPI_Wtime();
  x->done = x->plan.empty() ? x->posted : -1;
  PetscCall(PostStep(x));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode ExchangeBegin(MPI_Comm comm, ExchangeKind kind, PetscMPIInt tag, double *data,
                             const std::vector<PetscInt> &counts, double *out, ExchangeInFlight *x) {
  InsideExchange inside;
  PetscFunctionBeginUser;
  PetscCheck(tag >= kExchangeTags, comm, PETSC_ERR_ARG_OUTOFRANGE, "tag %d is a blocking exchange's", tag);
  PetscCall(Start(comm, kind, tag, data, counts, out, true, x));
  PetscFunctionReturn(0);
}

PetscErrorCode ExchangeProgress(ExchangeInFlight *x) {
  InsideExchange inside(x->behind);
  PetscFunctionBeginUser;
  while (x->comm != MPI_COMM_NULL && x->next < x->plan.size()) {
    int arrived = 0;
    PetscCallMPI(MPI_Testall(2, x->req, &arrived, MPI_STATUSES_IGNORE));
    if (!arrived) break;
    PetscCall(FinishStep(x));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode ExchangeEnd(ExchangeInFlight *x) {
  InsideExchange inside(x->behind);
  PetscFunctionBeginUser;
  if (x->comm == MPI_COMM_NULL) PetscFunctionReturn(0);
  while (x->next < x->plan.size()) {
    PetscCallMPI(MPI_Waitall(2, x->req, MPI_STATUSES_IGNORE));
    PetscCall(FinishStep(x));
  }
  if (x->behind) traffic().in_flight += x->done - x->posted;
  if (x->out) std::copy(x->data + x->out_begin, x->data + x->out_begin + x->out_count, x->out);
  x->comm = MPI_COMM_NULL;
  PetscFunctionReturn(0);
}

PetscErrorCode ReduceScatterSum(MPI_Comm comm, double *data, const std::vector<PetscInt> &counts, double *out) {
  ExchangeInFlight x;
  PetscFunctionBeginUser;
  PetscCall(Start(comm, ExchangeKind::reduce_scatter, kTag, data, counts, out, false, &x));
  PetscCall(ExchangeEnd(&x));
  PetscFunctionReturn(0);
}

PetscErrorCode AllgatherSegments(MPI_Comm comm, double *data, const std::vector<PetscInt> &counts) {
  ExchangeInFlight x;
  PetscFunctionBeginUser;
  PetscCall(Start(comm, ExchangeKind::allgather, kTag, data, counts, nullptr, false, &x));
  PetscCall(ExchangeEnd(&x));
  PetscFunctionReturn(0);
}

std::vector<PetscInt> SegmentsWithin(const std::vector<PetscInt> &counts, PetscInt begin, PetscInt end) {
  std::vector<PetscInt> within(counts.size(), 0);
  PetscInt at = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    within[r] = std::max<PetscInt>(0, std::min(end, at + counts[r]) - std::max(begin, at));
    at += counts[r];
  }
  return within;
}

} // namespace mft
