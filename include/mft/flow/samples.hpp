// Samples of a model's law (docs/model.md, 'Depth and head exponents'): S
// independent initialisations of the L x H model, sample s drawn from seed
// init.seed + s, each run on the same probe tokens. Where the limit is a
// random flow (the diffusive regime), a finite model is compared with it in
// law: many samples of each.
//
// The samples are split over the ranks in consecutive blocks, and a rank
// holds only its block: it runs the block's samples one after the other on
// a one-rank problem of its own, so that sample s is bitwise the same on any
// number of ranks (and equal to `mft forward --init.seed <init.seed + s>` on
// one rank). Statistics over the samples are collective reductions of the
// blocks' sums (two passes: the mean, then the spread about it); their
// results agree across rank counts to round-off (the order of a sum over
// ranks changes with their number), not bit for bit.
//
// A coupled pair (SamplesForwardPair) draws each sample's heads once for a
// fine model and builds a coarse model's heads from them (CoarseHeads): the
// pair's difference has a small variance while each member keeps its own law.
#pragma once

#include "mft/settings/settings.hpp"
#include "mft/statistics/sample_set.hpp"

#include <vector>

namespace mft {

struct Samples {
  PetscInt S = 0, M = 0, N = 0, d = 0;
  Range block;                     // the samples this rank holds: split(S, ranks, rank)
  std::vector<double> inputs;      // x(0), (M, N, d)
  std::vector<double> tokens;      // x(1) of the block's samples, (block.size(), M, N, d)
  std::vector<double> gram_mean;   // (M, N, N): the sample mean of G_ij = x_i(1) . x_j(1), per probe sequence
  std::vector<double> gram_stderr; // (M, N, N): its standard error (sample standard deviation / sqrt(S))
  double seconds = 0;              // the samples' forward passes, the slowest rank's
  // With output.trajectory = K > 0 (SamplesForward): the interaction energy
  // of every sample of the block at the K + 1 depths k / K, (block.size(),
  // K + 1), each the mean over the probe sequences of
  //   E = (1/N^2) sum_ij |x_i - x_j|^2 = (2/N) sum_i |x_i - xbar|^2,
  // and likewise the mean log-distance over the pairs (N > 1),
  //   D = (2/(N (N - 1))) sum_{i<j} log |x_i - x_j|.
  PetscInt depths = 0;
  std::vector<double> energy, log_distance;
};

// Collective on comm. S samples of the model of s (its exponents, head kind,
// norm, mask and MLP sublayers; the data of s as probes), seeds s.init.seed + first ...;
// with s.output.trajectory = K > 0, also each sample's interaction energy at K + 1 depths;
// each rank holds its block, the Gram means are every rank's. `first`
// offsets the seeds (independent sets of samples of one model).
PetscErrorCode SamplesForward(MPI_Comm comm, const Settings &s, PetscInt S, Samples *r, std::uint64_t first = 0);

// Which heads of a fine L_f x H_f model make the coarse model's: coarse layer
// j takes its H_c heads from fine layers 2j and 2j + 1 (L_c = L_f / 2), the
// first half of them from layer 2j. With H_c = 2 H_f every head of the two
// layers (the (2L, H) -> (L, 2H) diagonal); with H_c = H_f (even) heads
// 0 .. H_c/2 - 1 of layer 2j and H_c/2 .. H_c - 1 of layer 2j + 1. Distinct
// i.i.d. heads: the coarse model's heads have exactly its own law.
// Returns the fine flat head l * H_f + h of every coarse head, in order.
// Not collective.
std::vector<PetscInt> CoarseHeads(PetscInt L_f, PetscInt H_f, PetscInt L_c, PetscInt H_c);

// Collective on comm. S coupled pairs: sample s of `fine` is the model of
// seed fine.init.seed + first + s, and sample s of `coarse` the model of
// coarse_settings run with CoarseHeads of those heads (same head shape and
// init law; coarse's own seed is not used).
PetscErrorCode SamplesForwardPair(MPI_Comm comm, const Settings &fine_settings, const Settings &coarse_settings,
                                  PetscInt S, Samples *fine, Samples *coarse, std::uint64_t first = 0);

// The Gram means and standard errors of r's samples (every rank's blocks).
// Collective on comm.
PetscErrorCode SamplesGram(MPI_Comm comm, Samples *r);
// r's samples as one set of a law, with a weight; the block of them this
// rank holds, as the statistics read it (sample_set.hpp); each of rs's
// blocks, in order. Not collective.
SampleSet SamplesSet(const Samples &r, double weight = 1);
SampleBlock SamplesBlock(const Samples &r);
std::vector<SampleBlock> SamplesBlocks(const std::vector<Samples> &rs);

// How far the samples move their tokens: for each of this rank's samples
// the mean over the probe tokens of |x_i(1) - x_i(0)|^2 (not finite where
// the sample overflowed). Its mean and error, and those of the interaction
// energy and the log-distance recorded at r.depths depths a sample
// (statistics/moments.hpp), are the caller's to reduce. Not collective.
std::vector<double> SamplesMoved(const Samples &r);

// The same moment in closed form where attention is uniform (beta = 0) and
// every token moves by its sequence mean's move: a qkv model without norm,
// sphere or mask, whose layer multiplies the mean xbar by I + L^-a H^-c sum_h
// V_h (docs/model.md, 'Depth and head exponents'). Over the probe sequences,
//   E |x_i(1) - x_i(0)|^2 = |xbar(0)|^2 (rho^L - 2 m^L + 1),
//   m = 1 + mu L^-a H^(1-c),   rho = m^2 + sigma^2 L^-2a H^(1-2c),
// mu = init.v_mean, sigma = init.v_gain; NaN for any other model.
// Not collective.
double SamplesMovedAtUniformAttention(const Settings &s, const Samples &r);

// The first `count` samples (at most S) on every rank, (count, M, N, d).
// Collective on comm.
PetscErrorCode SamplesGather(MPI_Comm comm, const Samples &r, PetscInt count, std::vector<double> *out);

} // namespace mft
