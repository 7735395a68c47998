// Two laws compared from samples of each (docs/results.md, 'Studies in
// law'): a finite model's x(1) against the diffusive limit's, on the same
// probe sequences.
//   The Gram gap: err = |E_model G - E_limit G|_F / |E_limit G|_F, the Gram
//   matrix G_ij = x_i(1) . x_j(1) of one probe sequence (a weak error: a
//   smooth test function of the law), its square corrected for both sides'
//   sampling errors as the studies' floors are, with a 95% interval.
//   The energy distance between the laws of x(1) in R^(N d):
//   D^2 = 2 E|X - Y| - E|X - X'| - E|Y - Y'|, zero exactly when the laws
//   are equal, from every sample of each side (energy.hpp).
// GramGapOf and LawGapOf are collective: each rank holds a block of every
// set's samples (a Law, samples.hpp), and the sums are reduced over the
// ranks (two passes, the mean then the spread about it).
#pragma once

#include "mft/flow/samples.hpp"
#include "mft/statistics/energy.hpp"

#include <petscsys.h>

#include <string>
#include <vector>

namespace mft {

// One probe sequence's Gram gap, or the largest of several.
struct GramGap {
  double err = 0, lo = 0, hi = 0; // relative: the corrected estimate and its 95% interval
  bool resolved = false;          // lo > 0: the gap is above the sampling errors
  PetscInt sequence = 0;          // the sequence of the largest gap
  double model_share = 1;         // the model's samples' part of that sequence's first-order variance
  // Both sides' sampling error of the Gram difference, relative: sqrt(sum of
  // the entries' variances) / |E_limit G|_F, the largest over the sequences
  // (of every probe set, in LawGapOf): what the squared gap is corrected by,
  // the error a gap of zero reads.
  double floor = 0;
  // The standard error the fits weigh a cell by: the interval's half width
  // over 1.96. Over n sequences the interval is Sidak's, so this is larger
  // than the error's own by z_n / 1.96 (1.27 at the studies' 2 families of
  // 2 sequences): the fits err wide.
  double se() const { return (hi - lo) / 3.92; }
};

// The second-order variance from the covariance of each set's first
// kCovarianceRows samples, where N(N+1)/2 unique Gram entries are at most
// kCovarianceEntries (N <= 32), else from the entries' variances alone.
constexpr PetscInt kCovarianceRows = 4096, kCovarianceEntries = 528;

// The largest gap over M probe sequences of N tokens in R^d between a
// model's law and the limit's, with a 95% interval simultaneous over the
// sequences. Each sequence's |D|^2, D the difference of the Gram means, is
// corrected by the sum of the entries' variances; its standard error is
// that of its first-order part, 2 sum_ij D_ij G_ij per sample, from the
// samples, with the second-order 2 |Sigma|_F^2 added (Sigma the entries'
// full covariance, G_ij and G_ji one quantity; the shared noise of the
// diffusive regime correlates every entry). The intervals are Sidak's over
// `simultaneous` sequences (0: the M here; z = 2.24 at 2, 2.49 at 4), and
// the largest gap's is [max lo, max hi]: it holds the largest true gap when
// every sequence's holds. Collective on comm.
PetscErrorCode GramGapOf(MPI_Comm comm, const Law &model, const Law &limit, PetscInt M, PetscInt N, PetscInt d,
                         GramGap *gap, PetscInt simultaneous = 0);

// The largest over sequences of |a - b|_F / |b|_F, a and b (M, N, N): the
// limit's bias (coarse paths against fine), or its sampling error (a = b + se).
// Not collective.
double GramRelative(const std::vector<double> &a, const std::vector<double> &b, PetscInt M, PetscInt N);

// The normal quantile of a 95% interval simultaneous over n sequences
// (Sidak's: each at 0.95^(1/n); 1.96 at 1, 2.24 at 2, 2.49 at 4).
// Not collective.
double SidakZ(PetscInt n);

// Two laws on every probe set: the largest Gram gap over the sets' sequences
// (and the set it is in), its interval simultaneous over all of them (Sidak
// over every set's sequences: [max lo, max hi] over the sets), and the
// largest energy distance over the same sequences (energy.hpp: all the
// samples of each side, sliced along kEnergyDirections directions drawn for
// each sequence), with its interval made the same way: each sequence's
// value +- z se at the same Sidak z, the largest's [max lo, max hi].
struct LawGap {
  GramGap gap;
  std::string probe;
  Energy energy;                       // the largest over the sequences (a squared distance)
  double energy_lo = 0, energy_hi = 0; // its interval
  bool energy_resolved = false;        // energy_lo > 0
};
// The seed of the energy distance's directions on sequence m of probe set k.
// Not collective.
std::uint64_t EnergySeed(size_t k, PetscInt m);
// x: the model's samples of each set (each rank its rows); y_law and y: the
// other side's law and samples of each set. Collective on comm.
PetscErrorCode LawGapOf(MPI_Comm comm, const std::vector<std::string> &names, const std::vector<Samples> &x,
                        const std::vector<Law> &y_law, const std::vector<const Samples *> &y, LawGap *g);

} // namespace mft
