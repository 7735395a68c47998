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
// set's samples (a Law, sample_set.hpp), and the sums are reduced over the
// ranks (two passes, the mean then the spread about it).
#pragma once

#include "mft/statistics/energy.hpp"
#include "mft/statistics/sample_set.hpp"

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
  // The largest gap's own standard error, the one the fits weigh a cell
  // by: the half width over 1.96 of its sequence's interval at 95% alone
  // (not the simultaneous one above, whose z is Sidak's: 2.49 over 4
  // sequences would make the errors 1.27 times too large and chi^2 1.6
  // times too small).
  double own_se = 0;
  // Every sequence m's (of this probe set, in GramGapOf; LawGapOf keeps
  // each set's in LawGap::sets): its corrected squared gap relative to the
  // limit's Gram norm, r = (|D|^2 - floor) / |E_limit G|^2, signed (unbiased
  // for the squared gap, where the largest over a cell's sequences is biased
  // upward), its standard error (both sides, second order included), the
  // limit's norm2 = |E_limit G|^2, and the direction along which r moves with
  // the limit's Gram means, E = D + r G_limit (N x N; D the difference of the
  // Gram means, model minus limit), for SharedCovariance.
  PetscInt set = 0, M = 0, N = 0, d = 0; // its probe set and that set's sizes
  std::vector<double> squares, square_se, norms2, directions;
  double se() const { return own_se; }
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

// The covariances (n x n, row-major, of the relative squares) between n
// cells' corrected squared gaps (each a sequence of a set, GapPointOf) that
// were all measured against one law, `shared[set]` on each probe set (the
// limit's paths, or a reference's samples, read by every cell). The error e
// of the shared Gram means moves cell a's corrected square by -2 E_a . e
// (E_a = D_a + r_a G_shared: the shared norm's error included) and by |e|^2
// less its floor: *first holds the first-order part, 4 cov(E_a . G, E_b . G)
// / S over the shared law's samples (the sets' covariances add), *second
// 2 |Sigma|_F^2 of the shared means where a and b read one sequence, each
// over norm2_a norm2_b; both 0 on the diagonal (a cell's own variance is its
// GramGap's) and between cells on different probe sets (each set's samples
// are drawn apart). Two passes over the shared samples, reduced over comm.
// Collective on comm.
struct GapPoint {
  PetscInt set = 0, sequence = 0;
  const double *direction = nullptr; // E, N x N
  double norm2 = 0;
};
// The point of sequence m of a gap's set. Not collective.
GapPoint GapPointOf(const GramGap &g, PetscInt m);
PetscErrorCode SharedCovariance(MPI_Comm comm, const std::vector<Law> &shared, PetscInt M, PetscInt N, PetscInt d,
                                const std::vector<GapPoint> &cells, std::vector<double> *first,
                                std::vector<double> *second);

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
  std::vector<GramGap> sets; // each probe set's, with every sequence's square
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
PetscErrorCode LawGapOf(MPI_Comm comm, const std::vector<std::string> &names, const std::vector<SampleBlock> &x,
                        const std::vector<Law> &y_law, const std::vector<SampleBlock> &y, LawGap *g);

// What a fit of a study's cells takes (PowerFitOf, ExpansionFit): one
// sequence of one probe set for every cell, the one of the largest gap over
// the cells (chosen once for the study, not for each cell: the largest of a
// cell's sequences is biased upward where they are close), each cell's
// corrected square and its error there, their standard errors (the
// square's own, not Sidak's simultaneous one), and their correlations, own
// and through the law `shared[set]` every cell was measured against
// (SharedCovariance).
// The law fit's intervals are widened by kLawRateWiden: with the cells'
// correlations estimated from the same samples, the rate's 95% interval
// covered 0.916 on 4000 synthetic studies (tests/calibration/verdicts.cpp,
// --widen 1), the coverage of 1.73 standard errors; 1.96 / 1.73 = 1.134
// restores it there, and its coverage at other sample counts is the
// calibration's check of that correction.
constexpr double kLawRateWiden = 1.134;
struct LawFitPoints {
  PetscInt set = 0, sequence = 0;
  double widen = kLawRateWiden;
  std::vector<double> square, square_se; // each cell's relative square r and its standard error
  // sqrt(r) (1 + sd^2 / (8 r^2)), its bias -sd^2 / (8 r^(3/2)) undone, for
  // the expansions; its standard error sd / (2 sqrt r); the cells' correlations
  std::vector<double> err, err_se, rho;
  // sqrt(r) e^(sd^2 / (4 r^2)): log r's bias, -sd^2 / (2 r^2), undone, for
  // the power fit in logarithms (at large sizes the errors' relative noise
  // grows, and uncorrected logs steepen the rate)
  std::vector<double> err_power;
  std::vector<char> resolved;            // r - 1.96 sd > 0: the cells the fits take
};
// Collective on comm.
PetscErrorCode LawFitPointsOf(MPI_Comm comm, const std::vector<LawGap> &cells, const std::vector<Law> &shared,
                              LawFitPoints *points);

} // namespace mft
