// Coverage of a study's 95% intervals, measured on synthetic studies whose
// exponents are known (docs/results.md, 'How the intervals are made').
//
// Each replicate is one study of the shipped trained designs: probe outputs
// of 2 x 4 sequences of N = 8 tokens in R^4 for every (L, H, seed) model and
// every reference, with
//   model  x_q = err(L, H) f^(1/2) (sqrt(rho) zeta_{seed,q} + sqrt(1 - rho) eta_{L,H,seed,q}),
//   reference r  x_q = phi err_min xi_{r,q},
// entries N(0, 1/d), and a log-normal factor per case
//   f = exp(sigma (sqrt(rho) Z_seed + sqrt(1 - rho) Z_{L,H,seed}) - sigma^2 / 2)
// (mean 1), so that (1/N)|x - 0|^2 has mean err(L, H)^2 on every sequence:
// err = C1/L + C2 L^-a H^-b. Seeds share zeta and Z_seed across cells (nested
// initial heads, rho = 0.5); sigma (--spread, default 0.5) makes the
// seed-to-seed spread of a case's squared error what the shipped trained
// studies show (a coefficient of variation of 0.4-0.5; printed); references
// have their own spread phi err_min (the floor) and the corrected errors can clip. The unchanged statistics
// (StudyStatisticsCompute) runs on each; the truth of a figure is the same
// fit on the noiseless err grid. Prints the coverage of slope_L, slope_H, a, b
// (corrected fits; a replicate without an interval counts as not covering)
// and exits 1 when one falls outside [--min, --max].
//
// --design head_dim calibrates the head dimension's fit instead
// (calibrate_head_dim), --design expansion a free order along one size
// (calibrate_expansion).
//
//   study_calibration [--replicates 1000] [--seeds 8] [--references 4] [--floor 0.5] [--spread 0.5]
//                     [--sequences 8] [--boots 200] [--design width|depth|both|head_dim|expansion]
//                     [--figure random|worst] [--min 0.90] [--max 0.98]
#include "mft/layout/random.hpp"
#include "mft/statistics/expansion.hpp"
#include "mft/statistics/separable.hpp"
#include "mft/studies/study_statistics.hpp"
#include "mft/studies/study_tables.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace mft;

namespace {

struct Options {
  int replicates = 1000, seeds = 8, references = 4, sequences = 8, boots = 200;
  double floor = 0.5, spread = 0.5, min = 0.90, max = 0.98;
  std::string design = "both";
  std::string figure = "random"; // random: the probes' corrected err; worst: the cross-fitted worst-input figure
};

struct Design {
  const char *name;
  std::vector<long long> L, H;
};

constexpr double kC1 = 0.05, kC2 = 0.3, kA = 1.0 / 3.0, kB = 0.5, kRho = 0.5;
constexpr int kN = 8, kD = 4;

double err_true(long long L, long long H) { return kC1 / (double)L + kC2 * std::pow((double)L, -kA) * std::pow((double)H, -kB); }

// A vector of kN x kD entries N(0, 1/kD).
std::vector<double> draw(Stream &r) {
  std::vector<double> v(kN * kD);
  for (double &x : v) x = r.normal() / std::sqrt((double)kD);
  return v;
}

double dist2(const std::vector<double> &a, const std::vector<double> &b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return s / kN;
}

// A cell's truth: err(L, H) as above, or the head dimension's two parts.
using Truth = std::function<double(long long L, long long H)>;

// A fixed vector per (replicate, variant, sequence) of (1/N)|u|^2 = 1: a bias
// every seed of a variant shares.
std::vector<double> bias_direction(std::uint64_t replicate, std::uint64_t variant, int q) {
  Stream s(replicate, 104, variant, (std::uint64_t)q);
  std::vector<double> u = draw(s);
  const double n = std::sqrt(dist2(u, std::vector<double>(u.size(), 0.0)));
  for (double &x : u) x /= n;
  return u;
}

// One variant's study: its models x = bias(L, H) u_q + noise(L, H) f^(1/2) (..)
// (the header's, with the bias 0 by default); the references the same for
// every variant of a replicate, and so are the seeds' shared draws.
StudyErrors synthetic(const Design &g, const Options &o, std::uint64_t replicate, const Truth &noise = err_true,
                      double err_min = NAN, std::uint64_t variant = 0, const Truth &bias = nullptr) {
  StudyErrors e;
  const int Q = o.sequences;
  e.L = g.L, e.H = g.H, e.references = (size_t)o.references, e.sequences = Q;
  if (std::isnan(err_min)) {
    err_min = INFINITY;
    for (long long L : g.L)
      for (long long H : g.H) err_min = std::fmin(err_min, noise(L, H));
  }
  const std::vector<double> zero(kN * kD, 0.0);
  std::vector<std::vector<std::vector<double>>> ref(o.references); // [r][q]
  for (int r = 0; r < o.references; ++r) {
    Stream s(replicate, 101, (std::uint64_t)r);
    for (int q = 0; q < Q; ++q) {
      auto x = draw(s);
      for (double &v : x) v *= o.floor * err_min;
      ref[r].push_back(x);
    }
    e.square.emplace_back();
    for (int q = 0; q < Q; ++q) e.square.back().push_back(dist2(ref[r][q], zero));
  }
  for (int a = 0; a < o.references; ++a)
    for (int b = a + 1; b < o.references; ++b) {
      e.pairs.emplace_back();
      for (int q = 0; q < Q; ++q) e.pairs.back().push_back(0.5 * dist2(ref[a][q], ref[b][q]));
    }
  for (int seed = 1; seed <= o.seeds; ++seed) {
    Stream shared(replicate, 102, (std::uint64_t)seed);
    const double z_seed = shared.normal();
    std::vector<std::vector<double>> zeta;
    for (int q = 0; q < Q; ++q) zeta.push_back(draw(shared));
    for (size_t i = 0; i < g.L.size(); ++i)
      for (size_t j = 0; j < g.H.size(); ++j) {
        Stream own(replicate, variant ? 200 + variant : 103, (std::uint64_t)seed, i * g.H.size() + j);
        StudyErrors::Case c;
        c.cell = i * g.H.size() + j, c.seed = seed;
        c.e2.assign(o.references, std::vector<double>(Q));
        const double z = std::sqrt(kRho) * z_seed + std::sqrt(1 - kRho) * own.normal();
        const double err = noise(g.L[i], g.H[j]) * std::exp(0.5 * (o.spread * z - o.spread * o.spread / 2));
        const double b = bias ? bias(g.L[i], g.H[j]) : 0.0;
        for (int q = 0; q < Q; ++q) {
          std::vector<double> x = draw(own);
          for (size_t k = 0; k < x.size(); ++k) x[k] = err * (std::sqrt(kRho) * zeta[q][k] + std::sqrt(1 - kRho) * x[k]);
          if (b != 0) {
            const std::vector<double> u = bias_direction(replicate, variant, q);
            for (size_t k = 0; k < x.size(); ++k) x[k] += b * u[k];
          }
          for (int r = 0; r < o.references; ++r) c.e2[r][q] = dist2(x, ref[r][q]);
        }
        e.cases.push_back(std::move(c));
      }
  }
  return e;
}

// The worst-input figure as study.worst makes it (study_aggregate.cpp), on
// the synthetic cases: each case's input is the probe sequence of largest
// squared distance to the mean of the first half of the references (the
// search set), scored on the other half with the corrected estimator
// (clipped at 0); the cell's figure is the root of the mean over seeds, its
// interval the jackknife over seeds (and over the held-out references when
// three or more are held out).
StudyFit WorstFit(const StudyErrors &e) {
  const size_t R = e.references, A = R >= 2 ? R / 2 : R;
  auto pair_index = [&](size_t a, size_t b) { return a * R - a * (a + 1) / 2 + (b - a - 1); };
  auto value = [&](const StudyErrors::Case &c, long long out) {
    size_t best = 0;
    double top = -INFINITY;
    for (size_t q = 0; q < e.sequences; ++q) { // |x - mean_A|^2 = mean_A e2 - mean over A's pairs (1 - 1/|A|)
      double m = 0, p = 0, n = 0;
      for (size_t r = 0; r < A; ++r) m += c.e2[r][q] / (double)A;
      for (size_t a = 0; a < A; ++a)
        for (size_t b = a + 1; b < A; ++b) p += e.pairs[pair_index(a, b)][q], ++n;
      const double d = m - (n ? p / n * (1.0 - 1.0 / (double)A) : 0.0);
      if (d > top) top = d, best = q;
    }
    double m = 0, p = 0, k = 0, n = 0;
    for (size_t b = A; b < R; ++b)
      if ((long long)b != out) m += c.e2[b][best], ++k;
    for (size_t a = A; a < R; ++a)
      for (size_t b = a + 1; b < R; ++b)
        if ((long long)a != out && (long long)b != out) p += e.pairs[pair_index(a, b)][best], ++n;
    return std::fmax(0.0, m / k - (n ? p / n : 0.0));
  };
  auto values = [&](long long out) {
    std::vector<StudyValue> v;
    for (const auto &c : e.cases) v.push_back({c.cell, c.seed, value(c, out)});
    return v;
  };
  std::vector<std::vector<StudyValue>> reference_out;
  if (R - A >= 3)
    for (size_t b = A; b < R; ++b) reference_out.push_back(values((long long)b));
  return StudyScalarCompute(e.L, e.H, values(-1), 0.95, reference_out, true).fit;
}

bool covers(StudyInterval ci, double truth) { return ci.lo <= truth && truth <= ci.hi; }

// Runs one design; returns false when a coverage is out of bounds.
bool calibrate(const Design &g, const Options &o) {
  std::vector<double> err;
  for (long long L : g.L)
    for (long long H : g.H) err.push_back(err_true(L, H));
  const StudyFit truth = StudyFitGrid(g.L, g.H, err, std::vector<char>(err.size(), 1));
  const char *names[4] = {"slope_L", "slope_H", "a", "b"};
  const double truths[4] = {truth.slope_L, truth.slope_H, truth.a, truth.b};
  int covered[4] = {0, 0, 0, 0}, flagged = 0, unresolved = 0;
  double width[4] = {0, 0, 0, 0};
  int intervals[4] = {0, 0, 0, 0}; // replicates with an interval (none: a figure the data did not determine)
  std::vector<double> cv; // per cell of the first replicates: the seed-to-seed coefficient of variation of a case's error^2
  for (int n = 0; n < o.replicates; ++n) {
    const StudyErrors e = synthetic(g, o, (std::uint64_t)n + 1);
    const StudyStatistics st = StudyStatisticsCompute(e, StudyOptions());
    if (n < 20) {
      std::vector<std::vector<double>> per(err.size());
      for (const auto &c : e.cases) {
        const std::vector<double> v = StudyCorrected(e, c);
        per[c.cell].push_back(*std::max_element(v.begin(), v.end()));
      }
      for (const auto &p : per) {
        double m = 0, q = 0;
        for (double x : p) m += x / (double)p.size();
        for (double x : p) q += (x - m) * (x - m) / (double)(p.size() - 1);
        cv.push_back(std::sqrt(q) / m);
      }
    }
    const StudyFit f = o.figure == "worst" ? WorstFit(e) : st.fit[1];
    const StudyInterval ci[4] = {f.slope_L_ci, f.slope_H_ci, f.a_ci, f.b_ci};
    for (int k = 0; k < 4; ++k) {
      covered[k] += covers(ci[k], truths[k]);
      if (std::isfinite(ci[k].hi - ci[k].lo)) width[k] += ci[k].hi - ci[k].lo, ++intervals[k];
    }
    flagged += !f.flags.empty();
    for (const StudyCell &c : st.cells) unresolved += !c.resolved;
  }
  bool ok = true;
  std::printf("design %s: L = {", g.name);
  for (long long L : g.L) std::printf(" %lld", L);
  std::printf(" }, H = {");
  for (long long H : g.H) std::printf(" %lld", H);
  std::printf(" }; %s figure; %d seeds, %d references, floor %.2f err_min, spread %.2f, %d replicates\n",
              o.figure.c_str(), o.seeds, o.references, o.floor, o.spread, o.replicates);
  for (int k = 0; k < 4; ++k) {
    const double c = (double)covered[k] / o.replicates;
    const bool in = c >= o.min && c <= o.max;
    ok &= in;
    std::printf("  %-8s truth %7.4f  coverage %.3f  mean width %.4f  without interval %.3f  %s\n", names[k], truths[k], c,
                width[k] / std::max(intervals[k], 1), 1.0 - (double)intervals[k] / o.replicates, in ? "ok" : "OUT OF BOUNDS");
  }
  std::sort(cv.begin(), cv.end());
  std::printf("  flagged fits %.3f, unresolved cells %.4f, seed-to-seed CV of a case's error^2: median %.2f\n",
              (double)flagged / o.replicates, (double)unresolved / (o.replicates * err.size()), cv[cv.size() / 2]);
  return ok;
}

// The head dimension's fit (statistics/separable.hpp) on synthetic studies
// of input/study_head_dim_trained.cfg's design: variants k = 1 .. 64 over H
// = 16, 64, 256 at one L, every variant against the same references and
// with the same seed indices; per case the model's mean square is
// B^2 k^-2r (a bias its seeds share) + A^2 H^-2q (its noise). Coverage of q
// and r by the aggregation's intervals (a joint bootstrap of the seeds and
// the references, StudyResamples) and, printed beside them, by a
// parametric bootstrap of independent cells.
bool calibrate_head_dim(const Options &o) {
  constexpr double A = 0.46, q = 0.5, B = 0.13, r = 0.65;
  const std::vector<double> ks = {1, 2, 4, 8, 16, 32, 64};
  const Design g{"head_dim", {4}, {16, 64, 256}};
  const double err_min = std::sqrt(A * A * std::pow(256.0, -2 * q) + B * B * std::pow(64.0, -2 * r));
  int covered[2][2] = {{0, 0}, {0, 0}}, rejected = 0; // [joint, parametric][q, r]
  double width[2][2] = {{0, 0}, {0, 0}};
  for (int n = 0; n < o.replicates; ++n) {
    HeadDimCells cells;
    for (size_t v = 0; v < ks.size(); ++v) {
      const double k = ks[v];
      const StudyErrors e = synthetic(
          g, o, (std::uint64_t)n + 1, [&](long long, long long H) { return A * std::pow((double)H, -q); }, err_min,
          v + 1, [&](long long, long long) { return B * std::pow(k, -r); });
      const StudyStatistics st = StudyStatisticsCompute(e, StudyOptions());
      const StudyErrors es[2] = {e, e};
      const StudyStatistics sts[2] = {st, st};
      AddHeadDimCells(&cells, 0, k, 0, es, sts, false);
    }
    const HeadDimCell &c = cells[{0, 0}];
    const SeparableFit f[2] = {SeparableFitOf(c.k, c.H, c.err, c.se, c.resolved, StudyResamples(c.errors, o.boots, n)),
                               SeparableFitOf(c.k, c.H, c.err, c.se, c.resolved, o.boots, n)};
    rejected += f[0].rejected();
    for (int m = 0; m < 2; ++m) {
      covered[m][0] += f[m].q_lo <= q && q <= f[m].q_hi, covered[m][1] += f[m].r_lo <= r && r <= f[m].r_hi;
      width[m][0] += f[m].q_hi - f[m].q_lo, width[m][1] += f[m].r_hi - f[m].r_lo;
    }
  }
  std::printf("design head_dim: k = 1 .. 64, H = {16 64 256}; A %.2f, q %.2f, B %.2f, r %.2f; %d seeds, %d references, "
              "floor %.2f err_min, spread %.2f, %d sequences, %d replicates of %d boots\n",
              A, q, B, r, o.seeds, o.references, o.floor, o.spread, o.sequences, o.replicates, o.boots);
  bool ok = true;
  const char *method[2] = {"joint bootstrap", "independent cells"};
  for (int m = 0; m < 2; ++m)
    for (int j = 0; j < 2; ++j) {
      const double cov = (double)covered[m][j] / o.replicates;
      const bool in = cov >= o.min && cov <= o.max;
      if (m == 0) ok &= in;
      std::printf("  %-18s %s  coverage %.3f  mean width %.3f  %s\n", method[m], j ? "r" : "q", cov,
                  width[m][j] / o.replicates, m ? "(printed)" : in ? "ok" : "OUT OF BOUNDS");
    }
  std::printf("  the misfit rejected %.3f of the fits\n", (double)rejected / o.replicates);
  return ok;
}

// A free order along one size (statistics/expansion.hpp), as expansions.csv
// fits it: cells at L = 4 over H = 1 .. 16 whose err is C H^-p (C = 0.3, p =
// 1/2: a one-term truth), fitted by `a H^-p`; coverage of p by the profile
// interval expansions.csv gives (held to [--min, --max]) and, printed beside
// it, by a joint bootstrap of the seeds and references (StudyResamples,
// ExpansionResampled).
bool calibrate_expansion(const Options &o) {
  constexpr double C = 0.3, p = 0.5;
  const Design g{"expansion", {4}, {1, 2, 4, 8, 16}};
  int covered[2] = {0, 0}, rejected = 0; // [profile, joint]
  double width[2] = {0, 0};
  for (int n = 0; n < o.replicates; ++n) {
    const StudyErrors e = synthetic(g, o, (std::uint64_t)n + 1, [&](long long, long long H) { return C * std::pow((double)H, -p); });
    const StudyStatistics st = StudyStatisticsCompute(e, StudyOptions());
    std::vector<double> x, y, se;
    for (size_t j = 0; j < g.H.size(); ++j) {
      const StudyCell &c = st.cells[j];
      x.push_back((double)g.H[j]), y.push_back(c.err[1]), se.push_back((c.ci[1].hi - c.ci[1].lo) / 3.92);
    }
    Expansion f[2] = {ExpansionFit(x, y, se, 1, true), ExpansionFit(x, y, se, 1, true)};
    ExpansionResampled(&f[1], x, se, StudyResamples({{0, e}}, o.boots, (std::uint64_t)n));
    rejected += f[0].rejected();
    for (int m = 0; m < 2; ++m)
      covered[m] += f[m].p_lo <= p && p <= f[m].p_hi, width[m] += f[m].p_hi - f[m].p_lo;
  }
  std::printf("design expansion: L = 4, H = {1 2 4 8 16}, err = %.2f H^-%.2f fitted by a H^-p; %d seeds, %d references, "
              "floor %.2f err_min, spread %.2f, %d sequences, %d replicates (%d boots)\n",
              C, p, o.seeds, o.references, o.floor, o.spread, o.sequences, o.replicates, o.boots);
  const double profile = (double)covered[0] / o.replicates;
  const bool ok = profile >= o.min && profile <= o.max;
  std::printf("  profile            p  coverage %.3f  mean width %.3f  %s\n", profile, width[0] / o.replicates,
              ok ? "ok" : "OUT OF BOUNDS");
  std::printf("  joint bootstrap    p  coverage %.3f  mean width %.3f  (printed)\n", (double)covered[1] / o.replicates,
              width[1] / o.replicates);
  std::printf("  the misfit rejected %.3f of the fits\n", (double)rejected / o.replicates);
  return ok;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--replicates") o.replicates = std::atoi(v.c_str());
    else if (k == "--seeds") o.seeds = std::atoi(v.c_str());
    else if (k == "--references") o.references = std::atoi(v.c_str());
    else if (k == "--sequences") o.sequences = std::atoi(v.c_str());
    else if (k == "--boots") o.boots = std::atoi(v.c_str());
    else if (k == "--floor") o.floor = std::atof(v.c_str());
    else if (k == "--spread") o.spread = std::atof(v.c_str());
    else if (k == "--min") o.min = std::atof(v.c_str());
    else if (k == "--max") o.max = std::atof(v.c_str());
    else if (k == "--design") o.design = v;
    else if (k == "--figure") o.figure = v;
    else {
      std::fprintf(stderr, "study_calibration: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (o.replicates < 1 || o.seeds < 2 || o.references < 1 || (o.design != "width" && o.design != "depth" && o.design != "both" && o.design != "head_dim" &&
       o.design != "expansion") ||
      (o.figure != "random" && o.figure != "worst")) {
    std::fprintf(stderr, "study_calibration: need --replicates >= 1, --seeds >= 2, --references >= 1, --design width|depth|both|head_dim|expansion, --figure random|worst\n");
    return 2;
  }
  const Design width{"width", {4, 8, 16}, {1, 2, 4, 8, 16}}, depth{"depth", {1, 2, 4, 8, 16}, {4, 8, 16}};
  bool ok = true;
  if (o.design == "head_dim") ok &= calibrate_head_dim(o);
  if (o.design == "expansion") ok &= calibrate_expansion(o);
  if (o.design == "width" || o.design == "both") ok &= calibrate(width, o);
  if (o.design == "depth" || o.design == "both") ok &= calibrate(depth, o);
  std::printf("calibration: %s\n", ok ? "every coverage within bounds" : "a coverage out of bounds");
  return ok ? 0 : 1;
}
