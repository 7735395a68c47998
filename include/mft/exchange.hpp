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
};

// *count <- n, the entries of one message, refused when MPI's int count
// cannot hold it (n is formed in 64 bits: PetscInt is 32 bits here).
PetscErrorCode MessageCount(MPI_Comm comm, std::int64_t n, PetscMPIInt *count);

// This rank's counters since the start.
Traffic &traffic();

// The counters averaged over the ranks of comm (collective).
PetscErrorCode TrafficMean(MPI_Comm comm, double *messages, double *bytes);

// out (counts[rank] entries) <- segment `rank` of the sum over the ranks of
// comm of `data` (sum(counts) entries); data is used as scratch.
PetscErrorCode ReduceScatterSum(MPI_Comm comm, double *data, const std::vector<PetscInt> &counts, double *out);

// data (sum(counts) entries) holds this rank's segment; on return, all of them.
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
std::vector<ExchangeStep> ExchangePlan(ExchangeKind kind, PetscInt P, PetscInt rank, const std::vector<PetscInt> &counts);

} // namespace mft
