// An error in two sizes whose parts add in squares (docs/results.md, 'The
// head dimension'):
//   err(k, H)^2 = A^2 H^-2q + B^2 k^-2r,
// the H term a finite width's error, the k term the gap between heads of
// dimension k and infinite heads (a bias). Fitted to cells with standard
// errors se (of err): (q, r) on a grid of step 0.01 over [0, 1.5], A^2 and
// B^2 >= 0 by weighted least squares of err^2 (weights 1 / (2 err se), its
// standard error), in closed form at every pair of the grid; the 95%
// intervals a bootstrap's (statistics/bootstrap.hpp; a study's seeds and
// references resampled jointly across cells, or a parametric one, each err
// normal with its se), each held to its figure's range (A, B >= 0; q, r
// on the grid's [0, 1.5]: an interval at 0 or 1.5 is the range's); the misfit chi^2 of that least squares on cells - 4 degrees of
// freedom, its p-value, and the verdict in the one meaning of "decided"
// (expansion.hpp). Then the order of the limits: B at each H alone, r held
// at the joint fit's and the H term free (err^2 = a + B^2 k^-2r): where the
// B_H agree the gap in k does not depend on H.
// Every routine here is not collective.
#pragma once

#include "mft/statistics/bootstrap.hpp"

#include <petscsys.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace mft {

struct SeparableFit {
  PetscInt cells = 0; // 0: fewer than 5 cells, nothing fitted
  double A = NAN, q = NAN, B = NAN, r = NAN;
  double A_lo = NAN, A_hi = NAN, q_lo = NAN, q_hi = NAN, B_lo = NAN, B_hi = NAN, r_lo = NAN, r_hi = NAN;
  double chi2 = NAN, p_value = NAN;
  PetscInt dof = 0;
  bool rejected() const { return p_value < 0.05; }
  bool decided_q() const;
  bool decided_r() const;
};

// The fit over the cells (k, H, err, se) with `use` set and err > 0, its
// intervals BootstrapInterval's from the same fit (the data's weights kept)
// on each source's replicates: each a draw of every cell's err, in the
// cells' order, made as the data were (a study's seeds, or one set of its
// references, resampled jointly across cells, studies/study_head_dim.cpp).
// Without sources, no intervals (NaN).
SeparableFit SeparableFitOf(const std::vector<double> &k, const std::vector<double> &H, const std::vector<double> &err,
                            const std::vector<double> &se, const std::vector<char> &use,
                            const std::vector<Resample> &sources);
// The same with `boots` replicates of a parametric bootstrap drawn from
// `seed`: one source, each cell independently normal about err with its se
// (it cannot see what the cells share).
SeparableFit SeparableFitOf(const std::vector<double> &k, const std::vector<double> &H, const std::vector<double> &err,
                            const std::vector<double> &se, const std::vector<char> &use, int boots, std::uint64_t seed);

// B at one H: the cells (k, err, se) of that H, r held; with its bootstrap
// interval from the sources' replicates of those cells. Fewer than 2 cells: NaN.
struct SeparableGap {
  double B = NAN, lo = NAN, hi = NAN;
};
SeparableGap SeparableGapAt(const std::vector<double> &k, const std::vector<double> &err, const std::vector<double> &se,
                            double r, const std::vector<Resample> &sources);
SeparableGap SeparableGapAt(const std::vector<double> &k, const std::vector<double> &err, const std::vector<double> &se,
                            double r, int boots, std::uint64_t seed);

} // namespace mft
