// Benchmarks: the stated operation count of the attention model and the
// machine's measured dense matmul rate, against which a step's rate is read.
//
// Operation count of the forward pass (a matmul of m x n by n x p counts
// 2 m n p, an exponential 1), per layer, head and sequence with nk keys per
// query on average (N, or (N+1)/2 with the causal mask):
//   projections 2 N d (2k + dv), scores 2 N nk k, exponentials N nk,
//   weighted sums 2 N nk dv, and for qkvo the output map 2 N dv d.
// A training step (forward, adjoint, gradient) counts 3 times the forward:
// the backward of each product is two products of the same size.
#pragma once

#include "mft/settings.hpp"

namespace mft {

double forward_operations(const Settings &s);

// Dense matmul rate (GFLOP/s) of all ranks of comm running a dgemm at once.
PetscErrorCode MeasurePeak(MPI_Comm comm, double *gflops);

// Peak resident memory of this process (MiB).
double peak_memory_mib();

} // namespace mft
