// How a rank's attention work is cut for its threads, and what the forward
// keeps for the adjoint: one policy, which the velocity follows and the cost
// model (cost.hpp) prices. Functions of the layout and the memory only, never
// of the thread count, so that results do not depend on the threads.
// Every routine here is not collective: arithmetic on the layout's sizes.
#pragma once

#include "mft/kernels/attention.hpp"

namespace mft {

// The threads a rank runs: parallel.threads, or with 0 OMP_NUM_THREADS (1 when unset).
PetscInt RankThreads(PetscInt setting);

// The chunks a rank's Hl heads are split into for threads: one when it holds
// kHeadUnits sequences or more, else enough for kHeadUnits units of work
// (sequence, head chunk), at most Hl: the cores of a large node; and no more
// than keep the chunks' copies (copy_bytes each: the group's tokens and the
// cut rows shared as tokens) within kHeadCopyBytes. A function of the layout
// only, not of the thread count.
constexpr PetscInt kHeadUnits = 64;
constexpr double kHeadCopyBytes = 268435456.0; // 256 MiB
PetscInt HeadChunks(PetscInt sequences, PetscInt heads, double copy_bytes);
// The chunks each sequence's queries are split into for threads: one when
// the rank has kHeadUnits (sequence, head chunk) units or more, else enough
// for kHeadUnits units, each of at least kQueryRows queries (`queries`: the
// most a sequence of the rank computes), and no more than keep the key
// gradients' copies (chunk_bytes each) within kQueryCopyBytes.
constexpr PetscInt kQueryRows = 256;
constexpr double kQueryCopyBytes = 1073741824.0; // 1 GiB
PetscInt QueryChunks(PetscInt units, PetscInt queries, double chunk_bytes);

// The bytes of the queries' statistics a rank keeps over L layers for Hl
// heads and n tokens of sequences of N: L Hl n (dv + 2) doubles when they
// pay at N (attention_statistics_pay) and that is at most kStatisticsBytes
// and half of `room` (the bytes the rank has left beside its other buffers;
// < 0: no limit), else 0 (the reverse then makes them again). Results are
// the same either way: bitwise where the keys take tiles, to round-off at
// once (attention.hpp).
constexpr double kStatisticsBytes = 8589934592.0; // 8 GiB
double StatisticsBytes(PetscInt L, PetscInt Hl, PetscInt n, const HeadShape &shape, PetscInt N, double room = -1);

// What the forward keeps for the adjoint beyond its gathered states, kept
// when it fits (KeptBytes: at most kStatisticsBytes and half of the room
// left, `room` < 0: no limit), first the cut rows of every layer (L `rows`
// doubles: the adjoint then shares none again), then in what is left the
// queries' statistics. Velocity and cost model count it alike.
double KeptBytes(double bytes, double room);
struct KeptForAdjoint {
  double rows = 0, statistics = 0; // bytes
};
KeptForAdjoint KeptForTheAdjoint(PetscInt L, double rows, PetscInt Hl, PetscInt n, const HeadShape &shape, PetscInt N,
                                 double room);

} // namespace mft
