// Two laws compared from samples of each (docs/results.md, 'Studies in
// law'): a finite model's x(1) against the diffusive limit's, on the same
// probe sequences.
//   The Gram gap: err = |E_model G - E_limit G|_F / |E_limit G|_F, the Gram
//   matrix G_ij = x_i(1) . x_j(1) of one probe sequence (a weak error: a
//   smooth test function of the law), its square corrected for both sides'
//   sampling errors as the studies' floors are, with a 95% interval.
//   The energy distance between the laws of x(1) in R^(N d):
//   D^2 = 2 E|X - Y| - E|X - X'| - E|Y - Y'|, zero exactly when the laws
//   are equal; its U-statistic is unbiased, so the V-statistic's floor
//   (what a naive estimate adds) is measured and left out.
// GramGapOf and LawGapOf are collective: each rank holds a block of every
// set's samples (a Law, samples.hpp), and the sums are reduced over the
// ranks (two passes, the mean then the spread about it). The rest is not
// collective; EnergyTerms' sums are the caller's to reduce.
#pragma once

#include "mft/flow/samples.hpp"

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

// Rows [begin, end) of the energy distance's sums between X (S rows) and Y
// (P rows) of n numbers each, row s at X + s stride (one probe sequence of
// samples (S, M, N, d): X = tokens + m N d, n = N d, stride = M N d), rows
// of X first then of Y (begin, end in [0, S + P)): for each row its term u = mean |row - other side| - mean |row -
// own side, itself left out|, accumulated as sum, sum of squares, and the
// sums of within-side distances (for the floor). Summed over ranks, then
// EnergyOf.
struct EnergySums {
  double u[2] = {0, 0}, uu[2] = {0, 0}, within[2] = {0, 0}; // [0]: X's rows, [1]: Y's
};
// Not collective.
EnergySums EnergyTerms(const double *X, PetscInt S, const double *Y, PetscInt P, PetscInt n, PetscInt stride,
                       PetscInt begin, PetscInt end);

struct Energy {
  double value = 0; // the U-statistic of D^2
  double se = 0;    // its standard error (first order: 4 var(u_X)/S + 4 var(u_Y)/P)
  double floor = 0; // what the V-statistic would add: E|X - X'|/S + E|Y - Y'|/P
};
// Not collective.
Energy EnergyOf(const EnergySums &sums, PetscInt S, PetscInt P);

// Two laws on every probe set: the largest Gram gap over the sets' sequences
// (and the set it is in), its interval simultaneous over all of them (Sidak
// over every set's sequences: [max lo, max hi] over the sets), and the
// largest energy distance, each set's from
// the first kEnergySamples samples of each side (its pairs cost S^2 N d:
// a bounded subsample, gathered on every rank, its pairs split over them).
constexpr PetscInt kEnergySamples = 4000;
struct LawGap {
  GramGap gap;
  std::string probe;
  Energy energy;
};
// x: the model's samples of each set (each rank its rows); y_law and y: the
// other side's law and samples of each set. Collective on comm.
PetscErrorCode LawGapOf(MPI_Comm comm, const std::vector<std::string> &names, const std::vector<Samples> &x,
                        const std::vector<Law> &y_law, const std::vector<const Samples *> &y, LawGap *g);

} // namespace mft
