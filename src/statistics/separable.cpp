// err(k, H)^2 = A^2 H^-2q + B^2 k^-2r fitted to cells (separable.hpp).
#include "mft/statistics/separable.hpp"

#include "mft/layout/random.hpp"
#include "mft/statistics/bootstrap.hpp"
#include "mft/statistics/expansion.hpp"

#include <boost/math/distributions/chi_squared.hpp>

#include <algorithm>
#include <array>

namespace mft {

namespace {

constexpr int kSteps = 151; // exponents 0, 0.01, ..., 1.5

double exponent(int i) { return 0.01 * i; }

// Each cell's weight in the least squares of err^2: 1 / (2 err se), its
// standard error, from the data (a replicate keeps the data's weights).
std::vector<double> Weights(const std::vector<double> &err, const std::vector<double> &se) {
  std::vector<double> w(err.size());
  for (size_t c = 0; c < err.size(); ++c) w[c] = 1 / std::fmax(2 * err[c] * se[c], 1e-12);
  return w;
}

// The least squares at every (q, r) of the grid, the best kept: A^2, B^2 >=
// 0 (both, or one of them alone at 0), its weighted residual sum.
struct Solution {
  double A2 = 0, B2 = 0, q = NAN, r = NAN, res = INFINITY;
};

Solution Solve(const std::vector<double> &k, const std::vector<double> &H, const std::vector<double> &err,
               const std::vector<double> &w) {
  const size_t n = err.size();
  std::vector<double> y(n), U(kSteps * n), V(kSteps * n);
  for (size_t c = 0; c < n; ++c) y[c] = err[c] * err[c] * w[c];
  double Syy = 0;
  for (size_t c = 0; c < n; ++c) Syy += y[c] * y[c];
  std::vector<double> Suu(kSteps, 0), Suy(kSteps, 0), Svv(kSteps, 0), Svy(kSteps, 0);
  for (int i = 0; i < kSteps; ++i)
    for (size_t c = 0; c < n; ++c) {
      U[i * n + c] = std::pow(H[c], -2 * exponent(i)) * w[c], V[i * n + c] = std::pow(k[c], -2 * exponent(i)) * w[c];
      Suu[i] += U[i * n + c] * U[i * n + c], Suy[i] += U[i * n + c] * y[c];
      Svv[i] += V[i * n + c] * V[i * n + c], Svy[i] += V[i * n + c] * y[c];
    }
  Solution best;
  const auto keep = [&](double res, double A2, double B2, int i, int j) {
    res = std::fmax(res, 0.0); // the sums' round-off below an exact fit
    if (res < best.res) best = {A2, B2, exponent(i), exponent(j), res};
  };
  for (int i = 0; i < kSteps; ++i) {
    keep(Syy - std::pow(std::fmax(Suy[i], 0.0), 2) / Suu[i], std::fmax(Suy[i], 0.0) / Suu[i], 0, i, 0);
    for (int j = 0; j < kSteps; ++j) {
      if (i == 0) keep(Syy - std::pow(std::fmax(Svy[j], 0.0), 2) / Svv[j], 0, std::fmax(Svy[j], 0.0) / Svv[j], 0, j);
      double Suv = 0;
      for (size_t c = 0; c < n; ++c) Suv += U[i * n + c] * V[j * n + c];
      const double det = Suu[i] * Svv[j] - Suv * Suv;
      if (!(std::fabs(det) > 1e-300)) continue; // equal columns: the one-term fits above
      const double a = (Svv[j] * Suy[i] - Suv * Svy[j]) / det, b = (Suu[i] * Svy[j] - Suv * Suy[i]) / det;
      if (a >= 0 && b >= 0) keep(Syy - a * Suy[i] - b * Svy[j], a, b, i, j);
    }
  }
  return best;
}

// A parametric bootstrap's one source: err + se z per cell, its absolute
// value, every cell independent.
std::vector<Resample> Draws(const std::vector<double> &err, const std::vector<double> &se, int boots,
                            std::uint64_t seed) {
  Resample r;
  r.draws.assign(boots, std::vector<double>(err.size()));
  Stream st(seed, 0);
  for (auto &d : r.draws)
    for (size_t c = 0; c < err.size(); ++c) d[c] = std::fabs(err[c] + se[c] * st.normal());
  return {r};
}

// The cells of `keep` of every replicate whose kept cells are finite.
std::vector<std::vector<double>> Kept(const std::vector<std::vector<double>> &replicates, const std::vector<char> &keep) {
  std::vector<std::vector<double>> out;
  for (const auto &r : replicates) {
    std::vector<double> kept;
    for (size_t c = 0; c < r.size(); ++c)
      if (keep[c]) kept.push_back(r[c]);
    if (std::all_of(kept.begin(), kept.end(), [](double x) { return std::isfinite(x); })) out.push_back(kept);
  }
  return out;
}

// err^2 = a + B^2 k^-2r with a, B^2 >= 0: B.
double GapB(const std::vector<double> &k, const std::vector<double> &err, const std::vector<double> &weight, double r) {
  double S11 = 0, S1v = 0, Svv = 0, S1y = 0, Svy = 0;
  for (size_t c = 0; c < err.size(); ++c) {
    const double w = weight[c], u = w, v = std::pow(k[c], -2 * r) * w, y = err[c] * err[c] * w;
    S11 += u * u, S1v += u * v, Svv += v * v, S1y += u * y, Svy += v * y;
  }
  const double det = S11 * Svv - S1v * S1v;
  const double a = (Svv * S1y - S1v * Svy) / det, b = (S11 * Svy - S1v * S1y) / det;
  if (std::fabs(det) > 1e-300 && a >= 0 && b >= 0) return std::sqrt(b);
  // On the boundary: B^2 alone (a = 0), or a alone (B = 0), whichever fits better.
  const double b_only = std::fmax(Svy, 0.0) / Svv, a_only = std::fmax(S1y, 0.0) / S11;
  double rb = 0, ra = 0;
  for (size_t c = 0; c < err.size(); ++c) {
    const double w = weight[c], y = err[c] * err[c] * w;
    rb += std::pow(y - b_only * std::pow(k[c], -2 * r) * w, 2), ra += std::pow(y - a_only * w, 2);
  }
  return rb <= ra ? std::sqrt(b_only) : 0.0;
}

} // namespace

bool SeparableFit::decided_q() const { return cells > 0 && Decided(q_lo, q_hi, p_value); }
bool SeparableFit::decided_r() const { return cells > 0 && Decided(r_lo, r_hi, p_value); }

SeparableFit SeparableFitOf(const std::vector<double> &k, const std::vector<double> &H, const std::vector<double> &err,
                            const std::vector<double> &se, const std::vector<char> &use,
                            const std::vector<Resample> &sources) {
  std::vector<double> kk, hh, ee, ss;
  std::vector<char> keep(err.size(), 0);
  for (size_t c = 0; c < err.size(); ++c)
    if (use[c] && err[c] > 0 && se[c] > 0) {
      kk.push_back(k[c]), hh.push_back(H[c]), ee.push_back(err[c]), ss.push_back(se[c]), keep[c] = 1;
    }
  SeparableFit f;
  if (ee.size() < 5) return f;
  const std::vector<double> w = Weights(ee, ss);
  const Solution s = Solve(kk, hh, ee, w);
  f.cells = (PetscInt)ee.size(), f.dof = f.cells - 4;
  f.A = std::sqrt(s.A2), f.B = std::sqrt(s.B2), f.q = s.q, f.r = s.r, f.chi2 = s.res;
  f.p_value = boost::math::cdf(boost::math::complement(boost::math::chi_squared((double)f.dof), f.chi2));
  std::array<std::vector<std::vector<double>>, 4> drawn; // [figure][source][replicate]
  std::vector<double> units;
  for (const Resample &source : sources) {
    for (auto &figure : drawn) figure.emplace_back();
    for (const std::vector<double> &d : Kept(source.draws, keep)) {
      const Solution x = Solve(kk, hh, d, w);
      drawn[0].back().push_back(std::sqrt(x.A2)), drawn[1].back().push_back(x.q);
      drawn[2].back().push_back(std::sqrt(x.B2)), drawn[3].back().push_back(x.r);
    }
    units.push_back(source.units);
  }
  // Each interval within the figure's range: A, B >= 0, q and r on the grid's [0, 1.5].
  const auto span = [&](int figure, double theta, double *lo, double *hi) {
    const std::array<double, 2> i = BootstrapInterval(theta, drawn[figure], units);
    const double top = figure % 2 ? exponent(kSteps - 1) : INFINITY;
    *lo = std::fmax(i[0], 0.0), *hi = std::fmin(i[1], top);
  };
  span(0, f.A, &f.A_lo, &f.A_hi), span(1, f.q, &f.q_lo, &f.q_hi), span(2, f.B, &f.B_lo, &f.B_hi), span(3, f.r, &f.r_lo, &f.r_hi);
  return f;
}

SeparableFit SeparableFitOf(const std::vector<double> &k, const std::vector<double> &H, const std::vector<double> &err,
                            const std::vector<double> &se, const std::vector<char> &use, int boots, std::uint64_t seed) {
  return SeparableFitOf(k, H, err, se, use, Draws(err, se, boots, seed));
}

SeparableGap SeparableGapAt(const std::vector<double> &k, const std::vector<double> &err, const std::vector<double> &se,
                            double r, const std::vector<Resample> &sources) {
  SeparableGap g;
  if (err.size() < 2) return g;
  const std::vector<double> w = Weights(err, se);
  g.B = GapB(k, err, w, r);
  std::vector<std::vector<double>> drawn;
  std::vector<double> units;
  for (const Resample &source : sources) {
    drawn.emplace_back();
    for (const std::vector<double> &d : source.draws) drawn.back().push_back(GapB(k, d, w, r));
    units.push_back(source.units);
  }
  const std::array<double, 2> i = BootstrapInterval(g.B, drawn, units);
  g.lo = std::fmax(i[0], 0.0), g.hi = i[1];
  return g;
}

SeparableGap SeparableGapAt(const std::vector<double> &k, const std::vector<double> &err, const std::vector<double> &se,
                            double r, int boots, std::uint64_t seed) {
  return SeparableGapAt(k, err, se, r, Draws(err, se, boots, seed));
}

} // namespace mft
