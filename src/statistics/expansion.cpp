// Expansion fits with a free order, their profile intervals and misfit; "decided".
#include "mft/statistics/expansion.hpp"

#include "mft/statistics/bootstrap.hpp"
#include "mft/statistics/gls.hpp"

#include <algorithm>
#include <cstdio>

namespace mft {

namespace {

struct Points {
  std::vector<double> x, y, C; // C: the points' covariance (n x n)
};

// The points with x > 0, se > 0 and y finite, and their covariance rho_ij
// se_i se_j (rho over every point given; empty: independent points).
Points PointsOf(const std::vector<double> &x, const std::vector<double> &y, const std::vector<double> &se,
                const std::vector<double> &rho) {
  std::vector<size_t> at;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] > 0 && se[i] > 0 && std::isfinite(y[i])) at.push_back(i);
  Points d;
  std::vector<double> s, r(rho.empty() ? 0 : at.size() * at.size());
  for (size_t i = 0; i < at.size(); ++i) {
    d.x.push_back(x[at[i]]), d.y.push_back(y[at[i]]), s.push_back(se[at[i]]);
    for (size_t j = 0; j < at.size() && !rho.empty(); ++j) r[i * at.size() + j] = rho[at[i] * x.size() + at[j]];
  }
  d.C = CovarianceOf(s, r);
  return d;
}

// Generalised least squares of y on the columns x^-(p + j), j < terms
// (gls.hpp): the chi^2 of the whitened residuals (infinite when singular),
// the coefficients and their standard errors.
double SolveAt(const Points &d, int terms, double p, std::vector<double> *c, std::vector<double> *c_se) {
  std::vector<double> X;
  for (double x : d.x)
    for (int j = 0; j < terms; ++j) X.push_back(std::pow(x, -(p + j)));
  const GlsFit f = GlsFitOf(X, (size_t)terms, d.y, d.C);
  if (!f.ok) return HUGE_VAL;
  *c = f.beta, c_se->assign(terms, 0.0);
  for (int j = 0; j < terms; ++j) (*c_se)[j] = f.se((size_t)j);
  return f.chi2;
}

double ChiAt(const Points &d, int terms, double p) {
  std::vector<double> c, se;
  return SolveAt(d, terms, p, &c, &se);
}

// The order of least chi^2: a grid of 0.01 on the range, then golden
// sections in the best grid point's neighbourhood.
double LeastOrder(const Points &d, int terms) {
  const int n = (int)std::lround((kOrderMax - kOrderMin) / 0.01);
  int best = 0;
  double least = HUGE_VAL;
  for (int i = 0; i <= n; ++i) {
    const double v = ChiAt(d, terms, kOrderMin + 0.01 * i);
    if (v < least) least = v, best = i;
  }
  double a = kOrderMin + 0.01 * std::max(best - 1, 0), b = kOrderMin + 0.01 * std::min(best + 1, n);
  const double g = 0.5 * (std::sqrt(5.0) - 1);
  for (int it = 0; it < 60; ++it) {
    const double u = b - g * (b - a), v = a + g * (b - a);
    if (ChiAt(d, terms, u) < ChiAt(d, terms, v)) b = v;
    else a = u;
  }
  return 0.5 * (a + b);
}

// Where chi^2 first exceeds `level` walking from p by steps of `step` (a
// signed 0.01), refined by bisection; the range's end (and *bound) if never.
double ProfileEnd(const Points &d, int terms, double p, double step, double level, bool *bound) {
  double inside = p;
  for (;;) {
    const double next = std::clamp(inside + step, kOrderMin, kOrderMax);
    if (next == inside) return *bound = true, inside;
    if (ChiAt(d, terms, next) > level) {
      double lo = inside, hi = next;
      for (int it = 0; it < 50; ++it) {
        const double mid = 0.5 * (lo + hi);
        (ChiAt(d, terms, mid) > level ? hi : lo) = mid;
      }
      return 0.5 * (lo + hi);
    }
    inside = next;
  }
}

} // namespace

Expansion ExpansionFit(const std::vector<double> &x, const std::vector<double> &y, const std::vector<double> &se,
                       int terms, bool free_order, double order, const std::vector<double> &rho) {
  const Points d = PointsOf(x, y, se, rho);
  Expansion e;
  std::vector<double> distinct = d.x;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const int parameters = terms + (free_order ? 1 : 0);
  if (terms < 1 || (int)distinct.size() < parameters + 1) return e;
  e.free_order = free_order, e.points = d.x.size();
  e.dof = (int)d.x.size() - parameters;
  e.p = free_order ? LeastOrder(d, terms) : order;
  e.chi2 = SolveAt(d, terms, e.p, &e.c, &e.c_se);
  if (!std::isfinite(e.chi2)) return Expansion{};
  e.terms = terms;
  e.p_value = Chi2PValue(e.chi2, e.dof);
  e.p_lo = e.p_hi = e.p;
  if (free_order) {
    const double level = e.chi2 + 3.841458820694124; // the 95% point of chi^2 on 1
    e.p_lo = ProfileEnd(d, terms, e.p, -0.01, level, &e.at_bound);
    e.p_hi = ProfileEnd(d, terms, e.p, +0.01, level, &e.at_bound);
  }
  return e;
}

void ExpansionResampled(Expansion *e, const std::vector<double> &x, const std::vector<double> &se,
                        const std::vector<Resample> &sources) {
  if (!e->terms || !e->free_order) return;
  std::vector<std::vector<double>> orders;
  std::vector<double> units;
  for (const Resample &source : sources) {
    orders.emplace_back(), units.push_back(source.units);
    for (const std::vector<double> &y : source.draws) {
      const Points d = PointsOf(x, y, se, {});
      if (d.x.size() == e->points) orders.back().push_back(LeastOrder(d, e->terms));
    }
  }
  const std::array<double, 2> i = BootstrapInterval(e->p, orders, units);
  if (!std::isfinite(i[0])) return; // no replicate: the profile's stays
  e->p_lo = std::max(i[0], kOrderMin), e->p_hi = std::min(i[1], kOrderMax);
  e->at_bound = e->p_lo <= kOrderMin || e->p_hi >= kOrderMax;
}

bool Decided(double lo, double hi, double p_value, double width) {
  return std::isfinite(lo) && std::isfinite(hi) && hi - lo <= width && p_value >= 0.05;
}

bool Decided(const Expansion &e, double width) {
  return e.terms > 0 && e.free_order && !e.at_bound && Decided(e.p_lo, e.p_hi, e.p_value, width);
}

std::string ExpansionForm(const Expansion &e, const std::string &x) {
  std::string form;
  for (int j = 0; j < e.terms; ++j) {
    const std::string power = e.free_order ? (j ? "^-(p+" + std::to_string(j) + ")" : "^-p")
                                           : "^-" + std::to_string((int)std::lround(e.p) + j);
    form += (j ? " + " : "") + std::string(1, (char)('a' + j)) + " " + x + power;
  }
  return form;
}

std::string ExpansionLine(const Expansion &e, const std::string &x) {
  if (!e.terms) return "no fit (too few points)";
  char buf[256];
  std::string line = ExpansionForm(e, x) + ":";
  if (e.free_order) {
    std::snprintf(buf, sizeof buf, " p = %.3f [%.3f, %.3f]%s,", e.p, e.p_lo, e.p_hi, e.at_bound ? " (at the range's end)" : "");
    line += buf;
  }
  for (int j = 0; j < e.terms; ++j) {
    std::snprintf(buf, sizeof buf, " %c = %.4g +- %.2g,", (char)('a' + j), e.c[j], e.c_se[j]);
    line += buf;
  }
  std::snprintf(buf, sizeof buf, " chi^2 %.3g on %d (p-value %.2g)%s", e.chi2, e.dof, e.p_value,
                e.rejected() ? ", rejected" : (e.free_order ? (Decided(e) ? ", decided" : ", not decided") : ""));
  return line + buf;
}

DepthRate DepthRateFit(const std::vector<double> &s, const std::vector<double> &y, const std::vector<double> &cov,
                       bool logarithmic) {
  std::vector<size_t> at;
  const size_t K = s.size();
  for (size_t k = 0; k < K; ++k)
    if (s[k] > 0 && std::isfinite(y[k]) && cov[k * K + k] > std::pow(1e-12 * y[k], 2) && (y[k] > 0 || !logarithmic))
      at.push_back(k);
  const size_t n = at.size();
  std::vector<double> X(2 * n), ly(n), C(n * n);
  for (size_t i = 0; i < n; ++i) {
    X[2 * i] = s[at[i]], X[2 * i + 1] = 1, ly[i] = logarithmic ? std::log(y[at[i]]) : y[at[i]];
    for (size_t j = 0; j < n; ++j)
      C[i * n + j] = cov[at[i] * K + at[j]] / (logarithmic ? y[at[i]] * y[at[j]] : 1.0);
  }
  DepthRate r;
  const GlsFit f = GlsFitOf(X, 2, ly, C);
  if (!f.ok || f.dof < 1) return r;
  r.rate = -f.beta[0];
  r.lo = r.rate - 1.959963984540054 * f.se(0), r.hi = r.rate + 1.959963984540054 * f.se(0);
  r.chi2 = f.chi2, r.p_value = f.p_value, r.dof = f.dof, r.points = n;
  r.decided = Decided(r.lo, r.hi, r.p_value);
  return r;
}

} // namespace mft
