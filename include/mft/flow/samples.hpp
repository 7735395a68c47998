// Samples of a model's law (docs/model.md, 'Depth and head exponents'): S
// independent initialisations of the L x H model, sample s drawn from seed
// init.seed + s, each run on the same probe tokens. Where the limit is a
// random flow (the diffusive regime), a finite model is compared with it in
// law: many samples of each.
//
// The samples are split over the ranks in consecutive blocks; each rank runs
// its block one after the other on a one-rank problem of its own, so that
// sample s is bitwise the same on any number of ranks (and equal to
// `mft forward --init.seed <init.seed + s>` on one rank). Nothing crosses
// the network until the samples are gathered at the end.
#pragma once

#include "mft/settings/settings.hpp"

#include <vector>

namespace mft {

struct Samples {
  PetscInt S = 0, M = 0, N = 0, d = 0;
  std::vector<double> inputs;      // x(0), (M, N, d)
  std::vector<double> tokens;      // x(1) of every sample, (S, M, N, d)
  std::vector<double> gram_mean;   // (M, N, N): the sample mean of G_ij = x_i(1) . x_j(1), per probe sequence
  std::vector<double> gram_stderr; // (M, N, N): its standard error (sample standard deviation / sqrt(S))
  double seconds = 0;              // the samples' forward passes, the slowest rank's
};

// Collective on comm. S samples of the model of s (its exponents, head kind,
// norm and mask; the data of s as probes), seeds s.init.seed + first ...;
// every rank holds the whole result. `first` offsets the seeds (independent
// sets of samples of one model).
PetscErrorCode SamplesForward(MPI_Comm comm, const Settings &s, PetscInt S, Samples *r, std::uint64_t first = 0);

// The Gram means and standard errors of r->tokens (summed in sample order).
// Not collective.
void SamplesGram(Samples *r);

} // namespace mft
