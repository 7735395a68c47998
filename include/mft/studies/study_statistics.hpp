// The statistics of a convergence study (docs/results.md, 'How the intervals
// are made'): from the squared errors of every model case against every
// reference on every probe sequence, to err per cell, its interval, the slopes
// in L and H, the joint fit err ~ C1/L + C2 L^-a H^-b, and the flags that say
// when the data cannot decide.
//
// The estimator. On probe sequence q, a model x against references x^1..x^R:
//   e2_q = (1/R) sum_r (1/N)|x - x^r|^2 - floor2_q,
//   floor2_q = mean over pairs a < b of 1/2 (1/N)|x^a - x^b|^2,
// which is (1/N)|x - mean_r x^r|^2 - floor2_q / R: an unbiased estimate of the
// squared distance to the references' expectation (clipped at 0). A case's
// error is the max over probe sequences; err(cell) = (mean over seeds)^(1/2).
//
// The intervals: a delete-one jackknife over the two independent sources of
// randomness, the seed indices (left out of every cell at once: cells that
// share a seed index share nested initial heads) and the references (the floor
// recomputed without the one left out). The two variances add; the interval
// is theta +- t_nu sqrt(V) with Welch-Satterthwaite's nu. The point estimate
// is the same estimator on every seed and reference. tests/calibration
// measures the coverage on synthetic studies with known exponents.
// Every routine here is not collective: plain arithmetic on the errors.
#pragma once

#include "mft/statistics/bootstrap.hpp"

#include <petscsys.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mft {

// One quantity (tokens or adjoints) of one variant at one time.
struct StudyErrors {
  std::vector<long long> L, H; // the grid, ascending; cell k = i * H.size() + j
  size_t references = 0, sequences = 0;
  // Per reference pair (0,1), (0,2), .., (1,2), ..: per sequence 1/2 (1/N)|x^a - x^b|^2.
  std::vector<std::vector<double>> pairs;
  // Per reference, per sequence: (1/N)|x^r|^2 (the scale of the relative error).
  std::vector<std::vector<double>> square;
  struct Case {
    size_t cell = 0;
    long long seed = 0;
    std::vector<std::vector<double>> e2; // [reference][sequence]: (1/N)|x - x^r|^2
  };
  std::vector<Case> cases;
};

struct StudyOptions {
  double level = 0.95;            // of every interval
  double resolution = 0.5;        // a cell is resolved when (floor / sqrt(R)) / err_corrected <= this
  bool keep_unresolved = false;   // fit unresolved cells anyway
  double reference_L = 0, reference_H = 0; // a trained reference's size: its bias from the fit (0: none)
};

struct StudyInterval {
  double lo = NAN, hi = NAN;
};

struct StudyFit {
  double slope_L = NAN, slope_H = NAN, a = NAN, b = NAN, C1 = NAN, C2 = NAN, rms = NAN;
  StudyInterval slope_L_ci, slope_H_ci, a_ci, b_ci;
  // A trained reference of L_ref x H_ref, from the fit: its systematic error,
  // the Euler term C1/L_ref, and its own spread C2 L_ref^-a H_ref^-b (which the
  // floor measures and removes; the two should agree).
  double reference_bias = NAN, reference_spread = NAN;
  double smallest = NAN;       // the smallest err fitted
  int cells = 0;               // cells fitted
  std::string flags;           // space-separated; empty when the data decides every figure
};

struct StudyCell {
  int seeds = 0;
  double err[2] = {NAN, NAN};    // raw, corrected
  StudyInterval ci[2];
  double relative = NAN;         // corrected, relative to the references' mean square
  StudyInterval relative_ci;
  double clipped = NAN;          // fraction of (seed, sequence) pairs whose corrected error was clipped at 0
  double floor_ratio = NAN;      // (floor / sqrt(R)) / err_corrected
  bool resolved = false;
};

struct StudyStatistics {
  std::vector<StudyCell> cells;
  StudyFit fit[2];  // raw, corrected
  double floor = 0; // one reference's own error: (max over sequences of floor2)^(1/2)
};

StudyStatistics StudyStatisticsCompute(const StudyErrors &e, const StudyOptions &o);

// A figure with one value per model case (the distance of its training
// curve from the references'): per cell the mean over seeds, and the slopes
// and joint fit of the cell means, each with a jackknife interval over the
// seed indices (left out of every cell at once).
struct StudyScalar {
  std::vector<double> mean;          // per cell (NaN: no case)
  std::vector<StudyInterval> ci;
  StudyFit fit;
};
struct StudyValue {
  size_t cell = 0;
  long long seed = 0;
  double value = NAN;
};
// reference_out: the same values recomputed with each reference left out in
// turn (a figure made against the references' mean); their spread enters
// the intervals beside the seeds'.
// With root, the values are squares and a cell's figure is the root of
// their mean over seeds (as err is of e2).
StudyScalar StudyScalarCompute(const std::vector<long long> &L, const std::vector<long long> &H,
                               const std::vector<StudyValue> &values, double level = 0.95,
                               const std::vector<std::vector<StudyValue>> &reference_out = {}, bool root = false);

// Weights of the study's two sources of randomness, the seed indices and the
// references: a jackknife's replicate (one left out at 0) or a bootstrap's
// (each drawn its count, statistics/bootstrap.hpp). A seed index absent from
// `seed`, and every reference while `reference` is empty, weighs 1. At
// weights the estimator is the same: the means over references and over
// seeds weighted, the floor over pairs of two references weighted by both.
struct StudyWeights {
  std::map<long long, double> seed;
  std::vector<double> reference;
  double of_seed(long long s) const;
  double of_reference(size_t r) const;
};

// Per cell: the corrected err at those weights (NaN where no seed weighs).
std::vector<double> StudyErrAt(const StudyErrors &e, const StudyWeights &w);

// A bootstrap of studies that share their randomness (statistics/
// bootstrap.hpp): each (references' owner, errors) a variant's errors and
// the variant whose references it is measured against. Its sources: the
// seed indices (one resample for every variant's cells at once: cells of a
// seed index share their initial heads' stream), then each set of three or
// more references (one resample for every variant measured against it);
// `boots` replicates each of every cell's corrected err, the variants' cells
// in order (StudyErrAt), drawn from `seed`.
std::vector<Resample> StudyResamples(const std::vector<std::pair<PetscInt, StudyErrors>> &errors, int boots,
                                     std::uint64_t seed);

// The jackknife interval of a figure theta from its values with each seed
// index left out (by_seed) and each reference left out (by_reference, may
// be empty): theta +- t_nu sqrt(V_S + V_R) at `level` (see the header).
// No interval (NaN) from fewer than two seeds' values.
StudyInterval StudyJackknife(double theta, const std::vector<double> &by_seed, const std::vector<double> &by_reference,
                             double level = 0.95);

// Per sequence, the corrected squared error of one case against every reference.
std::vector<double> StudyCorrected(const StudyErrors &e, const StudyErrors::Case &c);

// Slopes of log err in log L (at the largest H) and log H (at the largest L),
// and the joint fit, on the cells with `use` set and a positive error.
StudyFit StudyFitGrid(const std::vector<long long> &L, const std::vector<long long> &H, const std::vector<double> &err,
                      const std::vector<char> &use);

// A learning-rate study's best rate for one (cell, seed), from its risks at
// the increasing rates: the vertex of the parabola through log risk against
// log rate at the smallest risk and its two neighbours (clipped to them); at
// an end of the grid, that end, with *edge set.
double StudyBestRate(const std::vector<double> &rates, const std::vector<double> &risk, bool *edge);

} // namespace mft
