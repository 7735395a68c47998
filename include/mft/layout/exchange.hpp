// The program's own collectives over a grid communicator, with message counters.
//
// A vector of doubles is split into consecutive segments, segment r of
// counts[r] entries belonging to rank r of the communicator:
//   ReduceScatterSum: every rank holds a whole vector; rank r receives
//     segment r of their elementwise sum (the head gradients over token
//     groups, the velocity over head groups);
//   AllgatherSegments: every rank holds its own segment; afterwards every
//     rank holds the whole vector (the head replicas after an update).
// Both exchange by recursive halving / doubling over the largest power of two
// p2 <= P ranks, after folding the first 2(P - p2) ranks in pairs: a rank
// sends at most ceil(log2 P) + 1 messages per call, whatever the size of the
// vector, and the bytes it sends stay below the size of the whole vector (two
// vectors for a folded pair). The order of the additions depends only on P, so
// a sum is bitwise the same on every run with the same number of ranks.
// These are point-to-point messages that PETSc's -log_view does not see: the
// counters below count them (messages and bytes sent by this rank).
#pragma once

#include <petscsys.h>

#include <cstdint>
#include <vector>

namespace mft {

struct Traffic {
  long long messages = 0; // point-to-point messages sent by this rank
  long long bytes = 0;    // their payload
  long long calls = 0;    // collective calls
  // Exchanges run behind the kernels (ExchangeBegin ... ExchangeEnd): seconds
  // from their start to their last message, summed; and the seconds spent
  // inside their calls (posting, progress, waiting: what was not hidden; a
  // copy MPI makes while asked for progress is in it).
  double in_flight = 0, inside = 0;
};

// *count <- n, the entries of one message, refused when MPI's int count
// cannot hold it (n is formed in 64 bits: PetscInt is 32 bits here).
// Not collective (comm carries the error).
PetscErrorCode MessageCount(MPI_Comm comm, std::int64_t n, PetscMPIInt *count);

// This rank's counters since the start.
// Not collective.
Traffic &traffic();

// The counters averaged over the ranks of comm. Collective on comm.
PetscErrorCode TrafficMean(MPI_Comm comm, double *messages, double *bytes);

// out (counts[rank] entries) <- segment `rank` of the sum over the ranks of
// comm of `data` (sum(counts) entries); data is used as scratch.
// Collective on comm.
PetscErrorCode ReduceScatterSum(MPI_Comm comm, double *data, const std::vector<PetscInt> &counts, double *out);

// data (sum(counts) entries) holds this rank's segment; on return, all of them.
// Collective on comm.
PetscErrorCode AllgatherSegments(MPI_Comm comm, double *data, const std::vector<PetscInt> &counts);

// One exchange of a plan: send entries [send_begin, send_end) of the vector to
// peer and receive [recv_begin, recv_end) from it (either range may be empty),
// added to what is there (add) or stored over it. A step that stores never
// receives into the range it sends (MPI forbids aliased buffers).
struct ExchangeStep {
  PetscInt peer, send_begin, send_end, recv_begin, recv_end;
  bool add;
};
enum class ExchangeKind { reduce_scatter, allgather };

// The steps of `rank` of P in one call: what the calls above execute and
// what the cost model counts (a message is a step with something to send).
// Not collective.
std::vector<ExchangeStep> ExchangePlan(ExchangeKind kind, PetscInt P, PetscInt rank, const std::vector<PetscInt> &counts);

// The same two exchanges in flight, run behind other work:
//   ExchangeBegin posts the first step of the plan and returns;
//   ExchangeProgress finishes what has arrived and posts the next steps,
//     without waiting (MPI moves a step's messages only while it is asked);
//   ExchangeEnd waits for the rest (for a sum, then copies the own segment
//     to `out`).
// Every step and every addition is the blocking call's, in the same order:
// the result is bitwise the same. Exchanges in flight at the same time on one
// communicator need distinct tags (`tag` >= kExchangeTags; the blocking calls
// use a tag below). `data` and `out` must stay in place until the end.
// Collective on comm: every rank of comm begins, progresses and ends the same
// exchange (point-to-point messages; a rank waits only for its peers).
constexpr PetscMPIInt kExchangeTags = 7200;
struct ExchangeInFlight {
  MPI_Comm comm = MPI_COMM_NULL; // MPI_COMM_NULL: none in flight
  PetscMPIInt tag = 0;
  bool behind = false;           // counted in Traffic::in_flight and inside
  double *data = nullptr, *out = nullptr;
  PetscInt out_begin = 0, out_count = 0;
  std::vector<ExchangeStep> plan;
  size_t next = 0;               // the step in flight (plan.size(): done)
  MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  std::vector<double> in;        // a sum's received entries
  double posted = 0, done = -1;  // MPI_Wtime at the start and at the last message
};
PetscErrorCode ExchangeBegin(MPI_Comm comm, ExchangeKind kind, PetscMPIInt tag, double *data,
                             const std::vector<PetscInt> &counts, double *out, ExchangeInFlight *x);
PetscErrorCode ExchangeProgress(ExchangeInFlight *x);
PetscErrorCode ExchangeEnd(ExchangeInFlight *x);

// Adds the seconds from its construction to its destruction to
// Traffic::inside (a call of an exchange behind the kernels).
struct InsideExchange {
  double start = MPI_Wtime();
  bool counted = true;
  explicit InsideExchange(bool count = true) : counted(count) {}
  ~InsideExchange() {
    if (counted) traffic().inside += MPI_Wtime() - start;
  }
};

// counts cut to entries [begin, end) of the whole vector: segment r's part of
// it (a bucket of the vector, exchanged alone, gives each rank the same
// entries of the same sums as the whole).
// Not collective.
std::vector<PetscInt> SegmentsWithin(const std::vector<PetscInt> &counts, PetscInt begin, PetscInt end);

} // namespace mft
