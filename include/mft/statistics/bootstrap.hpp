// The bootstrap every fit here shares. A figure's data come from independent
// sources of randomness (a study's seed indices, each set of its
// references; or every cell, for a parametric bootstrap), each of n units.
// Each source is resampled alone, the others held: its n units drawn with
// replacement (a resample as weights, BootstrapCounts), the figure
// recomputed on every cell at once, as every cell of the data saw the same
// seeds and references (studies/study_head_dim.cpp). The interval:
//   theta +- t_nu sqrt(sum_s V_s),  V_s = n_s / (n_s - 1) var_s,
// var_s the variance of the figure over source s's replicates (the factor
// undoes the bootstrap's (n - 1)/n on a mean of n units), nu by Welch and
// Satterthwaite over the sources (n_s - 1 each; a parametric source, n
// infinite, none): a few seeds and references give the t's wider interval,
// as the study's jackknife does (study_statistics.hpp). tests/calibration
// (--design head_dim) measures its coverage.
// Every routine here is not collective.
#pragma once

#include "mft/layout/random.hpp"

#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

namespace mft {

// n draws with replacement among n units: each unit's count (they sum to n).
std::vector<double> BootstrapCounts(size_t n, Stream &st);

// One source's replicates of the data (each a draw of every cell's value, in
// the cells' order) and its number of units (INFINITY: a parametric draw).
struct Resample {
  std::vector<std::vector<double>> draws;
  double units = INFINITY;
};

// The interval of a figure theta from its values on each source's
// replicates (by_source[s][b]; non-finite values left out), at `level`.
// NaN, NaN without a source of two finite values.
std::array<double, 2> BootstrapInterval(double theta, const std::vector<std::vector<double>> &by_source,
                                        const std::vector<double> &units, double level = 0.95);

// The 2.5% and 97.5% percentiles of v (NaN, NaN when v is empty).
std::array<double, 2> Percentiles95(std::vector<double> v);

} // namespace mft
