// Expansion fits with a free order, their profile intervals and misfit; "decided".
#include "mft/statistics/expansion.hpp"

#include "mft/statistics/bootstrap.hpp"

#include <boost/math/distributions/chi_squared.hpp>

#include <algorithm>
#include <cstdio>

namespace mft {

namespace {

struct Points {
  std::vector<double> x, y, w; // w = 1 / se^2
};

// Inverts the n x n matrix a in place (Gauss-Jordan, partial pivoting);
// false when singular.
bool Invert(std::vector<double> &a, int n) {
  std::vector<double> inv(n * n, 0.0);
  for (int i = 0; i < n; ++i) inv[i * n + i] = 1;
  for (int col = 0; col < n; ++col) {
    int piv = col;
    for (int r = col + 1; r < n; ++r)
      if (std::fabs(a[r * n + col]) > std::fabs(a[piv * n + col])) piv = r;
    if (!(std::fabs(a[piv * n + col]) > 1e-300)) return false;
    for (int k = 0; k < n; ++k) std::swap(a[col * n + k], a[piv * n + k]), std::swap(inv[col * n + k], inv[piv * n + k]);
    const double d = a[col * n + col];
    for (int k = 0; k < n; ++k) a[col * n + k] /= d, inv[col * n + k] /= d;
    for (int r = 0; r < n; ++r) {
      if (r == col) continue;
      const double f = a[r * n + col];
      for (int k = 0; k < n; ++k) a[r * n + k] -= f * a[col * n + k], inv[r * n + k] -= f * inv[col * n + k];
    }
  }
  a = inv;
  return true;
}

// Weighted least squares of y on the columns x^-(p + j), j < terms: the
// chi^2 of the residuals (infinite when singular), the coefficients and
// their standard errors.
double SolveAt(const Points &d, int terms, double p, std::vector<double> *c, std::vector<double> *c_se) {
  std::vector<double> A(terms * terms, 0.0), b(terms, 0.0), row(terms);
  for (size_t i = 0; i < d.x.size(); ++i) {
    for (int j = 0; j < terms; ++j) row[j] = std::pow(d.x[i], -(p + j));
    for (int j = 0; j < terms; ++j) {
      b[j] += d.w[i] * row[j] * d.y[i];
      for (int k = 0; k < terms; ++k) A[j * terms + k] += d.w[i] * row[j] * row[k];
    }
  }
  if (!Invert(A, terms)) return HUGE_VAL;
  c->assign(terms, 0.0), c_se->assign(terms, 0.0);
  for (int j = 0; j < terms; ++j) {
    for (int k = 0; k < terms; ++k) (*c)[j] += A[j * terms + k] * b[k];
    (*c_se)[j] = std::sqrt(A[j * terms + j]);
  }
  double chi2 = 0;
  for (size_t i = 0; i < d.x.size(); ++i) {
    double model = 0;
    for (int j = 0; j < terms; ++j) model += (*c)[j] * std::pow(d.x[i], -(p + j));
    chi2 += d.w[i] * (d.y[i] - model) * (d.y[i] - model);
  }
  return chi2;
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
                       int terms, bool free_order, double order) {
  Points d;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] > 0 && se[i] > 0 && std::isfinite(y[i])) d.x.push_back(x[i]), d.y.push_back(y[i]), d.w.push_back(1 / (se[i] * se[i]));
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
  e.p_value = boost::math::cdf(boost::math::complement(boost::math::chi_squared((double)e.dof), e.chi2));
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
      Points d;
      for (size_t i = 0; i < x.size(); ++i)
        if (x[i] > 0 && se[i] > 0 && std::isfinite(y[i])) d.x.push_back(x[i]), d.y.push_back(y[i]), d.w.push_back(1 / (se[i] * se[i]));
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

DepthRate DepthRateFit(const std::vector<double> &s, const std::vector<double> &y, const std::vector<double> &se,
                       bool logarithmic) {
  std::vector<double> x, ly, lse;
  for (size_t k = 0; k < s.size(); ++k) {
    if (!(s[k] > 0 && se[k] > 1e-12 * std::fabs(y[k]) && std::isfinite(y[k]) && (y[k] > 0 || !logarithmic))) continue;
    x.push_back(s[k]);
    ly.push_back(logarithmic ? std::log(y[k]) : y[k]);
    lse.push_back(logarithmic ? se[k] / y[k] : se[k]);
  }
  DepthRate r;
  const Expansion e = ExpansionFit(x, ly, lse, 2, false, -1.0); // c_0 s + c_1
  if (e.terms == 0) return r;
  r.rate = -e.c[0];
  r.lo = r.rate - 1.959963984540054 * e.c_se[0], r.hi = r.rate + 1.959963984540054 * e.c_se[0];
  r.chi2 = e.chi2, r.p_value = e.p_value, r.dof = e.dof, r.points = e.points;
  r.decided = Decided(r.lo, r.hi, r.p_value);
  return r;
}

} // namespace mft
