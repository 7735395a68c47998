// The statistics of a convergence study: estimator, jackknife intervals, fits, flags.
#include "mft/studies/study_statistics.hpp"

#include "mft/statistics/fit.hpp"
#include "mft/layout/random.hpp"

#include <boost/math/distributions/students_t.hpp>

#include <algorithm>
#include <set>

namespace mft {

namespace {

constexpr double kExponentMax = 1.5; // the joint fit searches a, b in [0, kExponentMax]
constexpr double kCoarse = 0.02, kFine = 0.002;

// Per sequence: the references' floor2 at their weights, over pairs of two
// references (0 with fewer than two references; NaN when a resample weighs
// one alone).
std::vector<double> floor_at(const StudyErrors &e, const StudyWeights &w) {
  std::vector<double> f(e.sequences, 0.0);
  size_t pair = 0;
  double n = 0;
  for (size_t a = 0; a < e.references; ++a)
    for (size_t b = a + 1; b < e.references; ++b, ++pair) {
      const double wab = w.of_reference(a) * w.of_reference(b);
      if (wab == 0) continue;
      for (size_t q = 0; q < e.sequences; ++q) f[q] += wab * e.pairs[pair][q];
      n += wab;
    }
  for (double &v : f) v = n > 0 ? v / n : pair > 0 && w.reference.size() ? NAN : 0.0; // pairs, none weighed: no floor
  return f;
}

// Per sequence: the references' weighted mean of a case's e2 (or of their squares).
std::vector<double> mean_at(const std::vector<std::vector<double>> &per_ref, size_t Q, const StudyWeights &w) {
  std::vector<double> m(Q, 0.0);
  double n = 0;
  for (size_t r = 0; r < per_ref.size(); ++r) {
    const double wr = w.of_reference(r);
    if (wr == 0) continue;
    for (size_t q = 0; q < Q; ++q) m[q] += wr * per_ref[r][q];
    n += wr;
  }
  for (double &v : m) v /= n;
  return m;
}

// err per cell: raw, corrected and relative; *clipped: the fraction of clipped sequences.
struct Estimate {
  std::vector<double> err[2], relative, clipped;
  std::vector<int> seeds;
  StudyFit fit[2];
};

Estimate estimate(const StudyErrors &e, const StudyWeights &w) {
  const size_t cells = e.L.size() * e.H.size(), Q = e.sequences;
  const std::vector<double> floor2 = floor_at(e, w);
  const std::vector<double> scale = mean_at(e.square, Q, w);
  std::vector<double> sum[2], rel(cells, 0.0), clip(cells, 0.0), weight(cells, 0.0);
  sum[0].assign(cells, 0.0), sum[1].assign(cells, 0.0);
  Estimate est;
  est.seeds.assign(cells, 0);
  const bool floored = std::none_of(floor2.begin(), floor2.end(), [](double f) { return std::isnan(f); });
  for (const auto &c : e.cases) {
    const double ws = floored ? w.of_seed(c.seed) : 0.0; // no floor: no estimate
    if (ws == 0) continue;
    const std::vector<double> m = mean_at(c.e2, Q, w);
    double raw = 0, corr = 0, relative = 0;
    for (size_t q = 0; q < Q; ++q) {
      const double v = std::fmax(0.0, m[q] - floor2[q]);
      raw = std::fmax(raw, m[q]), corr = std::fmax(corr, v);
      relative = std::fmax(relative, scale[q] > 0 ? v / scale[q] : 0.0);
      clip[c.cell] += ws * (m[q] < floor2[q]);
    }
    sum[0][c.cell] += ws * raw, sum[1][c.cell] += ws * corr, rel[c.cell] += ws * relative;
    weight[c.cell] += ws, ++est.seeds[c.cell];
  }
  for (int k = 0; k < 2; ++k) est.err[k].assign(cells, NAN);
  est.relative.assign(cells, NAN), est.clipped.assign(cells, NAN);
  for (size_t k = 0; k < cells; ++k) {
    const double n = weight[k];
    if (!(n > 0)) continue;
    for (int c = 0; c < 2; ++c) est.err[c][k] = std::sqrt(sum[c][k] / n);
    est.relative[k] = std::sqrt(rel[k] / n), est.clipped[k] = clip[k] / (n * (double)Q);
  }
  return est;
}

// One seed index or one reference left out (a jackknife's replicate).
StudyWeights without_seed(long long seed) {
  StudyWeights w;
  w.seed[seed] = 0;
  return w;
}
StudyWeights without_reference(const StudyErrors &e, size_t r) {
  StudyWeights w;
  w.reference.assign(e.references, 1.0);
  w.reference[r] = 0;
  return w;
}

// The same estimate with its raw and corrected fits on the cells of `use`.
Estimate fitted(const StudyErrors &e, Estimate est, const std::vector<char> use[2]) {
  for (int c = 0; c < 2; ++c) est.fit[c] = StudyFitGrid(e.L, e.H, est.err[c], use[c]);
  return est;
}

} // namespace

StudyInterval StudyJackknife(double theta, const std::vector<double> &by_seed, const std::vector<double> &by_reference,
                             double level) {
  struct Part {
    double V = 0, df = 0;
  };
  auto part = [](const std::vector<double> &v, bool *bad) {
    Part p;
    const size_t n = v.size();
    if (n < 2) return p;
    double mean = 0;
    for (double x : v) *bad |= !std::isfinite(x), mean += x / (double)n;
    for (double x : v) p.V += (x - mean) * (x - mean);
    p.V *= (double)(n - 1) / (double)n, p.df = (double)(n - 1);
    return p;
  };
  bool bad = !std::isfinite(theta);
  const Part s = part(by_seed, &bad), r = part(by_reference, &bad);
  if (bad || s.df == 0) return {};
  const double V = s.V + r.V;
  if (V == 0) return {theta, theta};
  const double df = V * V / (s.V * s.V / s.df + (r.df > 0 ? r.V * r.V / r.df : 0.0));
  const double t = boost::math::quantile(boost::math::students_t(df), 0.5 + level / 2);
  return {theta - t * std::sqrt(V), theta + t * std::sqrt(V)};
}

namespace {

bool at_bound(double x) { return std::isfinite(x) && (x < kFine / 2 || x > kExponentMax - kFine / 2); }

struct Point {
  double invL, logL, logH, err;
};

// The normal equations of the relative least squares of err ~ C1 u + C2 v,
// u = 1/L, v = L^-a H^-b (each divided by err): the Gram sums and right sides.
struct Normal {
  double s11 = 0, s12 = 0, s22 = 0, r1 = 0, r2 = 0;
  Normal(const std::vector<Point> &pts, double a, double b) {
    for (const Point &p : pts) {
      const double u = p.invL / p.err, v = std::exp(-a * p.logL - b * p.logH) / p.err;
      s11 += u * u, s12 += u * v, s22 += v * v, r1 += u, r2 += v;
    }
  }
};

// C1, C2 >= 0 at one (a, b); returns the sum of squares.
double solve(const std::vector<Point> &pts, double a, double b, double *C1, double *C2) {
  const Normal g(pts, a, b);
  const double n = (double)pts.size(), det = g.s11 * g.s22 - g.s12 * g.s12;
  *C1 = (g.r1 * g.s22 - g.r2 * g.s12) / det, *C2 = (g.s11 * g.r2 - g.s12 * g.r1) / det;
  if (!(*C1 >= 0 && *C2 >= 0) || !std::isfinite(*C1)) { // one term only
    const double c1 = g.r1 / g.s11, c2 = g.r2 / g.s22;
    const double q1 = n - 2 * c1 * g.r1 + c1 * c1 * g.s11, q2 = n - 2 * c2 * g.r2 + c2 * c2 * g.s22;
    if (q1 < q2) *C1 = c1, *C2 = 0;
    else *C1 = 0, *C2 = c2;
  }
  return n - 2 * (*C1 * g.r1 + *C2 * g.r2) + *C1 * *C1 * g.s11 + 2 * *C1 * *C2 * g.s12 + *C2 * *C2 * g.s22;
}

// The joint fit: a grid of step kCoarse on [0, kExponentMax]^2, then kFine around the best.
void joint_fit(const std::vector<Point> &pts, StudyFit *f) {
  double best = INFINITY, a0 = 0, b0 = 0;
  auto search = [&](double alo, double ahi, double blo, double bhi, double step) {
    const int na = (int)std::lround((ahi - alo) / step), nb = (int)std::lround((bhi - blo) / step);
    for (int ia = 0; ia <= na; ++ia)
      for (int ib = 0; ib <= nb; ++ib) {
        const double a = alo + ia * step, b = blo + ib * step;
        double C1, C2;
        const double q = solve(pts, a, b, &C1, &C2);
        if (q < best) best = q, f->a = a, f->b = b, f->C1 = C1, f->C2 = C2;
      }
  };
  search(0, kExponentMax, 0, kExponentMax, kCoarse);
  a0 = f->a, b0 = f->b;
  search(std::max(0.0, a0 - kCoarse), std::min(kExponentMax, a0 + kCoarse), std::max(0.0, b0 - kCoarse),
         std::min(kExponentMax, b0 + kCoarse), kFine);
  f->rms = std::sqrt(std::fmax(best, 0) / (double)pts.size());
}

// Whether the fit is one term: only C1/L kept, or C1/L and L^-a H^-b one
// term on these cells (their relative residual vectors at cosine above
// 1 - 1e-6). Then C1 and C2 trade freely and every (a, b) fits alike.
bool one_term(const StudyFit &f, const std::vector<Point> &pts) {
  if (f.C2 <= 1e-10 * (f.C1 + f.C2)) return true;
  if (pts.empty()) return false;
  const Normal g(pts, f.a, f.b);
  return g.s12 * g.s12 > (1 - 1e-6) * g.s11 * g.s22;
}

void add_flag(std::string *flags, const std::string &f) {
  if (flags->find(f) == std::string::npos) *flags += (flags->empty() ? "" : " ") + f;
}

// The intervals of a fit's slopes and exponents from its leave-one-seed-out
// and leave-one-reference-out fits; a replicate at a bound of the search or
// with one term flags the figure too (its interval is then not the data's).
void fit_intervals(StudyFit *f, const std::vector<StudyFit> &by_seed, const std::vector<StudyFit> &by_ref,
                   double level) {
  auto interval = [&](double theta, double StudyFit::*figure) {
    std::vector<double> s, r;
    for (const StudyFit &x : by_seed) s.push_back(x.*figure);
    for (const StudyFit &x : by_ref) r.push_back(x.*figure);
    return StudyJackknife(theta, s, r, level);
  };
  f->slope_L_ci = interval(f->slope_L, &StudyFit::slope_L);
  f->slope_H_ci = interval(f->slope_H, &StudyFit::slope_H);
  f->a_ci = interval(f->a, &StudyFit::a);
  f->b_ci = interval(f->b, &StudyFit::b);
  for (const auto *reps : {&by_seed, &by_ref})
    for (const StudyFit &x : *reps) {
      if (at_bound(x.a)) add_flag(&f->flags, "a:bound");
      if (at_bound(x.b)) add_flag(&f->flags, "b:bound");
      if (std::isfinite(x.a) && one_term(x, {})) add_flag(&f->flags, "ab:one_term");
    }
}

} // namespace

double StudyWeights::of_seed(long long s) const {
  const auto it = seed.find(s);
  return it == seed.end() ? 1.0 : it->second;
}

double StudyWeights::of_reference(size_t r) const { return reference.empty() ? 1.0 : reference[r]; }

std::vector<double> StudyErrAt(const StudyErrors &e, const StudyWeights &w) { return estimate(e, w).err[1]; }

std::vector<Resample> StudyResamples(const std::vector<std::pair<PetscInt, StudyErrors>> &errors, int boots,
                                     std::uint64_t seed) {
  std::set<long long> seeds;
  std::map<PetscInt, size_t> references;
  for (const auto &[owner, e] : errors) {
    for (const auto &x : e.cases) seeds.insert(x.seed);
    references[owner] = e.references;
  }
  Stream st(seed, 0);
  // One replicate: every variant's cells at weights `w`, the references of
  // `owner` (-1: none) at `drawn`.
  const auto replicate = [&](StudyWeights w, PetscInt owner, const std::vector<double> &drawn) {
    std::vector<double> cells;
    for (const auto &[own, e] : errors) {
      w.reference = own == owner ? drawn : std::vector<double>();
      const std::vector<double> err = StudyErrAt(e, w);
      cells.insert(cells.end(), err.begin(), err.end());
    }
    return cells;
  };
  std::vector<Resample> sources(1);
  sources[0].units = (double)seeds.size();
  for (int b = 0; b < boots && seeds.size() > 1; ++b) {
    const std::vector<double> counts = BootstrapCounts(seeds.size(), st);
    StudyWeights w;
    size_t i = 0;
    for (long long s : seeds) w.seed[s] = counts[i++];
    sources[0].draws.push_back(replicate(w, -1, {}));
  }
  for (const auto &[owner, R] : references) {
    if (R < 3) continue; // two references: one left out of a pair leaves no floor (as the jackknife)
    sources.emplace_back(), sources.back().units = (double)R;
    for (int b = 0; b < boots; ++b) sources.back().draws.push_back(replicate({}, owner, BootstrapCounts(R, st)));
  }
  return sources;
}

StudyFit StudyFitGrid(const std::vector<long long> &L, const std::vector<long long> &H, const std::vector<double> &err,
                      const std::vector<char> &use) {
  StudyFit f;
  const size_t nL = L.size(), nH = H.size();
  auto ok = [&](size_t k) { return use[k] && std::isfinite(err[k]) && err[k] > 0; };
  std::vector<Point> pts;
  std::set<long long> Ls, Hs;
  for (size_t k = 0; k < nL * nH; ++k)
    if (ok(k)) {
      pts.push_back({1.0 / (double)L[k / nH], std::log((double)L[k / nH]), std::log((double)H[k % nH]), err[k]});
      Ls.insert(L[k / nH]), Hs.insert(H[k % nH]);
    }
  f.cells = (int)pts.size();
  for (const Point &p : pts) f.smallest = std::fmin(std::isfinite(f.smallest) ? f.smallest : INFINITY, p.err);
  if (pts.size() < nL * nH) add_flag(&f.flags, "dropped:" + std::to_string(nL * nH - pts.size()));
  std::vector<double> x, y;
  for (size_t i = 0; i < nL; ++i) // slope in L at the largest H
    if (ok(i * nH + nH - 1)) x.push_back(std::log((double)L[i])), y.push_back(std::log(err[i * nH + nH - 1]));
  if (x.size() >= 2) f.slope_L = fit_line(x, y).slope;
  else if (nL > 1) add_flag(&f.flags, "slope_L:undetermined");
  x.clear(), y.clear();
  for (size_t j = 0; j < nH; ++j) // slope in H at the largest L
    if (ok((nL - 1) * nH + j)) x.push_back(std::log((double)H[j])), y.push_back(std::log(err[(nL - 1) * nH + j]));
  if (x.size() >= 2) f.slope_H = fit_line(x, y).slope;
  else if (nH > 1) add_flag(&f.flags, "slope_H:undetermined");
  if (pts.size() < 5) { // four parameters need at least five cells
    add_flag(&f.flags, "joint:few_cells");
    return f;
  }
  joint_fit(pts, &f);
  if (Ls.size() < 3) add_flag(&f.flags, "a:few_L"); // a and the 1/L term need three depths
  if (Hs.size() < 2) add_flag(&f.flags, "b:few_H");
  if (one_term(f, pts)) add_flag(&f.flags, "ab:one_term");
  if (at_bound(f.a)) add_flag(&f.flags, "a:bound");
  if (at_bound(f.b)) add_flag(&f.flags, "b:bound");
  return f;
}

std::vector<double> StudyCorrected(const StudyErrors &e, const StudyErrors::Case &c) {
  const std::vector<double> floor2 = floor_at(e, {}), m = mean_at(c.e2, e.sequences, {});
  std::vector<double> v(e.sequences);
  for (size_t q = 0; q < e.sequences; ++q) v[q] = std::fmax(0.0, m[q] - floor2[q]);
  return v;
}

StudyStatistics StudyStatisticsCompute(const StudyErrors &e, const StudyOptions &o) {
  StudyStatistics st;
  const size_t cells = e.L.size() * e.H.size();
  const std::vector<double> floor2 = floor_at(e, {});
  st.floor = floor2.empty() ? 0.0 : std::sqrt(*std::max_element(floor2.begin(), floor2.end()));
  // Which cells are fitted: the point estimate decides once, for every replicate.
  const Estimate point0 = estimate(e, {});
  std::vector<char> use[2] = {std::vector<char>(cells, 1), std::vector<char>(cells, 1)};
  st.cells.resize(cells);
  for (size_t k = 0; k < cells; ++k) {
    StudyCell &c = st.cells[k];
    c.seeds = point0.seeds[k];
    c.floor_ratio = st.floor / std::sqrt((double)std::max<size_t>(e.references, 1)) / point0.err[1][k];
    c.resolved = e.references < 2 || (std::isfinite(c.floor_ratio) && c.floor_ratio <= o.resolution);
    use[1][k] = c.resolved || o.keep_unresolved;
  }
  const Estimate point = fitted(e, point0, use);
  std::set<long long> seeds;
  for (const auto &c : e.cases) seeds.insert(c.seed);
  std::vector<Estimate> by_seed, by_ref;
  for (long long s : seeds) by_seed.push_back(fitted(e, estimate(e, without_seed(s)), use));
  if (e.references >= 3)
    for (size_t r = 0; r < e.references; ++r) by_ref.push_back(fitted(e, estimate(e, without_reference(e, r)), use));
  // The interval of any figure of an estimate.
  auto interval = [&](auto figure) {
    std::vector<double> s, r;
    for (const Estimate &x : by_seed) s.push_back(figure(x));
    for (const Estimate &x : by_ref) r.push_back(figure(x));
    return StudyJackknife(figure(point), s, r, o.level);
  };
  for (size_t k = 0; k < cells; ++k) {
    StudyCell &c = st.cells[k];
    for (int q = 0; q < 2; ++q) {
      c.err[q] = point.err[q][k];
      c.ci[q] = interval([&](const Estimate &x) { return x.err[q][k]; });
    }
    c.relative = point.relative[k], c.clipped = point.clipped[k];
    c.relative_ci = interval([&](const Estimate &x) { return x.relative[k]; });
  }
  for (int q = 0; q < 2; ++q) {
    StudyFit &f = st.fit[q];
    f = point.fit[q];
    std::vector<StudyFit> fs, fr;
    for (const Estimate &x : by_seed) fs.push_back(x.fit[q]);
    for (const Estimate &x : by_ref) fr.push_back(x.fit[q]);
    fit_intervals(&f, fs, fr, o.level);
    if (seeds.size() < 2) add_flag(&f.flags, "ci:one_seed");
    if (e.references >= 2 && e.references < 3) add_flag(&f.flags, "ci:without_references");
    // The reference's Euler term from the fit: only where its 1/L is told apart (three depths or more).
    if (o.reference_L > 0 && std::isfinite(f.C1) && f.flags.find("a:few_L") == std::string::npos) {
      f.reference_bias = f.C1 / o.reference_L;
      f.reference_spread = f.C2 * std::pow(o.reference_L, -f.a) * std::pow(o.reference_H, -f.b);
    }
  }
  return st;
}

StudyScalar StudyScalarCompute(const std::vector<long long> &L, const std::vector<long long> &H,
                               const std::vector<StudyValue> &values, double level,
                               const std::vector<std::vector<StudyValue>> &reference_out, bool root) {
  const size_t cells = L.size() * H.size();
  auto means_of = [&](const std::vector<StudyValue> &set, long long out) {
    std::vector<double> sum(cells, 0.0), n(cells, 0.0);
    for (const StudyValue &v : set)
      if (v.seed != out && std::isfinite(v.value)) sum[v.cell] += v.value, ++n[v.cell];
    for (size_t k = 0; k < cells; ++k) sum[k] = n[k] ? (root ? std::sqrt(sum[k] / n[k]) : sum[k] / n[k]) : NAN;
    return sum;
  };
  auto means = [&](long long out) { return means_of(values, out); };
  const std::vector<char> use(cells, 1);
  StudyScalar r;
  r.mean = means(-1);
  r.fit = StudyFitGrid(L, H, r.mean, use);
  std::set<long long> seeds;
  for (const StudyValue &v : values) seeds.insert(v.seed);
  std::vector<std::vector<double>> by_seed;
  std::vector<StudyFit> fits;
  for (long long s : seeds) by_seed.push_back(means(s)), fits.push_back(StudyFitGrid(L, H, by_seed.back(), use));
  std::vector<std::vector<double>> by_ref;
  std::vector<StudyFit> ref_fits;
  for (const auto &set : reference_out)
    by_ref.push_back(means_of(set, -1)), ref_fits.push_back(StudyFitGrid(L, H, by_ref.back(), use));
  for (size_t c = 0; c < cells; ++c) {
    std::vector<double> reps, ref_reps;
    for (const auto &m : by_seed) reps.push_back(m[c]);
    for (const auto &m : by_ref) ref_reps.push_back(m[c]);
    r.ci.push_back(StudyJackknife(r.mean[c], reps, ref_reps, level));
  }
  fit_intervals(&r.fit, fits, ref_fits, level);
  return r;
}

// The best rate of one (cell, seed) from its risks at the sorted rates: the
// vertex of the parabola through log risk in log lr at the smallest risk and
// its two neighbours (clipped to them); at an end of the grid, that end.
double StudyBestRate(const std::vector<double> &rates, const std::vector<double> &risk, bool *edge) {
  size_t j = 0;
  for (size_t i = 1; i < rates.size(); ++i)
    if (risk[i] < risk[j]) j = i;
  *edge = j == 0 || j + 1 == rates.size();
  if (*edge) return rates[j];
  const double x0 = std::log(rates[j - 1]), x1 = std::log(rates[j]), x2 = std::log(rates[j + 1]);
  const double y0 = std::log(risk[j - 1]), y1 = std::log(risk[j]), y2 = std::log(risk[j + 1]);
  const double den = (x1 - x0) * (y1 - y2) - (x1 - x2) * (y1 - y0);
  if (!(den != 0) || !std::isfinite(den)) return rates[j]; // an infinite (diverged) neighbour: the grid point
  const double x = x1 - 0.5 * ((x1 - x0) * (x1 - x0) * (y1 - y2) - (x1 - x2) * (x1 - x2) * (y1 - y0)) / den;
  return std::exp(std::fmin(std::fmax(x, x0), x2));
}

} // namespace mft
