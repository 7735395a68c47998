// Benchmarks: the stated operation count of the attention model and the
// machine's measured dense matmul rate, against which a step's rate is read.
//
// Operation count of the forward pass (a matmul of m x n by n x p counts
// 2 m n p, an exponential 1), per layer, head and sequence with nk keys per
// query on average (N, or (N+1)/2 with the causal mask):
//   projections 2 N d (2k + dv), scores 2 N nk k, exponentials N nk,
//   weighted sums 2 N nk dv, and for qkvo the output map 2 N dv d.
// A training step (forward, adjoint, gradient) counts 3 times the forward:
// the backward of each product is two products of the same size. (The kernels
// do more: the reverse sweep recomputes the projections and the softmax.)
#pragma once

#include "mft/flow/cost.hpp"
#include "mft/settings/settings.hpp"

namespace mft {

// Not collective, as are its parts below.
double forward_operations(const Settings &s);

// The parts of forward_operations: the products' flops and the exponentials.
// Not collective.
double forward_products(const Settings &s);
double forward_exponentials(const Settings &s);

// Exponentials a second (in units of 1e9) of all ranks of comm, each with
// `threads` threads, running the kernels' vectorised exp at once, on
// arguments in the softmax's range [-30, 0].
// Collective on comm (every rank runs at once).
PetscErrorCode MeasureExpRate(MPI_Comm comm, PetscInt threads, double *gexps);

// The roofline bound of a training step (seconds): the products it makes at
// the matmul peak and its exponentials at the exp rate, both measured on all
// ranks. A step makes 3 times the forward's products (forward_operations'
// count) and, as the reverse makes the softmax again, the projections and
// scores once more and every exponential twice, and qkvo's weighted sums
// once more where the forward's statistics do not pay (attention.hpp; a
// tiled reverse without them makes more).
// Not collective.
double step_bound(const Settings &s, double peak_gflops, double gexps);

// The MLP sublayers' work in a training step (mlp.hpp): 14 L M N m d flops
// (the forward's two products, the reverse's four and its pre-activations
// again) and L M N m activations twice, alone in the forward and with their
// slopes in the reverse; its bound, the products at the matmul peak and the
// activations at their measured rates (a second of every rank's threads).
// Not collective.
double mlp_step_flops(const Settings &s);
double mlp_step_bound(const Settings &s, double peak_gflops, const double activation_rates[2]);
// Activations a second (sigma alone; sigma and sigma') of ActivateAll over
// every rank's threads at once, summed. Collective on comm.
PetscErrorCode MeasureActivationRate(MPI_Comm comm, PetscInt threads, Activation a, double rates[2]);

// The reverse kernel's rate against the forward's (Rates::reverse in
// cost.hpp): one (sequence, head) unit of m's head at the last min(N, 1024)
// of N queries (256 past N = 4096), made by attention and
// attention_reverse on random tokens on every rank at once (the forward's
// statistics kept for the reverse where they pay, as a run keeps them), timed in
// alternating rounds (the median of the rounds' ratios); the operations
// CountUnit counts for each, a second, reverse over forward, the mean over
// the ranks.
// Collective on comm.
PetscErrorCode MeasureReverseRate(MPI_Comm comm, const ModelSettings &m, PetscInt N, double *ratio);

// Dense matmul rate (GFLOP/s) of all ranks of comm, each with `threads`
// threads, running a dgemm a thread at once: the peak of the cores a run
// with that many threads a rank uses.
// Collective on comm.
PetscErrorCode MeasurePeak(MPI_Comm comm, PetscInt threads, double *gflops);

// The network between ranks, by ping-pong (half the round trip, the median
// of repeats): an 8-byte message's time is the latency, a 4 MiB message's
// rate the bandwidth. Within a node between ranks 0 and 1 (when there are
// two), between nodes between rank 0 and the first rank on another node
// (when there is one). What is not measured keeps net's figures, and is said
// by the flags.
// Collective on comm.
struct NetworkMeasured {
  bool local = false, remote = false;
};
PetscErrorCode MeasureNetwork(MPI_Comm comm, Network *net, NetworkMeasured *measured);

// Peak resident memory of this process (MiB).
// Not collective.
double peak_memory_mib();

} // namespace mft
