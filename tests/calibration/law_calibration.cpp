// Coverage of a study in law's fit intervals, measured on synthetic studies
// whose exponents are known (docs/results.md, 'The diffusive regime: studies
// in law').
//
// Each replicate is one study of a shipped design (depth: L = 1 .. 16 at
// H = 4; width: H = 1 .. 64 at L = 4) on M probe sequences of N = 8 tokens
// in R^4. The limit's law: tokens x_i = b_i + sigma w + tau eta_i, b fixed,
// w (shared by the tokens of a sample, as the SDE's common noise) and eta
// standard normal over sqrt(d); one draw of --samples paths serves every
// cell, as in a study. A cell's model law is the limit's scaled by
// (1 + eps), eps = sqrt(1 + g) - 1, so that its exact relative Gram gap is
// g(L, H) = C L^-p H^-q; its own --samples draws. The unchanged estimators
// (GramGapOf per cell, PowerFitOf over the resolved cells) run on each;
// prints the coverage of p and q by their 95% intervals (a replicate whose
// fit fails counts as not covering) and exits 1 when one falls outside
// [--min, --max].
//
//
// --design levels calibrates the local orders of a hierarchy's level means
// (LocalOrderOf, as the depth order is decided from the diagonal): levels
// L = 4 .. 64, level L's differences of mean D_L = a / L + b / L^2 (--a,
// --b: the two-term fit of the measured diagonal) and a heavy tail (a normal
// scale mixture of kurtosis 23, as the measured differences have), spread
// so that each level's mean has relative standard error --rel from
// --samples draws; prints the coverage of each octave's true local order by
// its 95% interval and exits 1 when the worst falls outside [--min, --max].
//
//   law_calibration [--replicates 200] [--samples 4000] [--design depth|width|levels]
//                   [--C 0.3] [--p 1] [--q 0] [--a 1.46] [--b -1.81] [--rel 0.016]
//                   [--min 0.90] [--max 0.99]
#include "mft/layout/random.hpp"
#include "mft/statistics/power_fit.hpp"
#include "mft/statistics/two_sample.hpp"
#include "mft/studies/study_levels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace mft;

namespace {

struct Options {
  int replicates = 200;
  PetscInt samples = 4000;
  std::string design = "depth";
  double C = 0.3, p = 1, q = 0, min = 0.90, max = 0.99;
  double a = 1.46, b = -1.81, rel = 0.016; // --design levels
};

constexpr PetscInt kM = 2, kN = 8, kD = 4;

// S samples of the limit's law scaled by `scale`, (S, M, N, d), from stream st.
std::vector<double> Draw(Stream &st, const std::vector<double> &base, PetscInt S, double scale) {
  const double sigma = 0.8, tau = 0.3, unit = 1 / std::sqrt((double)kD);
  std::vector<double> x((size_t)(S * kM * kN * kD));
  for (PetscInt s = 0; s < S; ++s)
    for (PetscInt m = 0; m < kM; ++m) {
      double w[kD];
      for (double &c : w) c = sigma * unit * st.normal();
      for (PetscInt i = 0; i < kN; ++i)
        for (PetscInt c = 0; c < kD; ++c) {
          const size_t at = (size_t)(((s * kM + m) * kN + i) * kD + c);
          x[at] = scale * (base[(size_t)((m * kN + i) * kD + c)] + w[c] + tau * unit * st.normal());
        }
    }
  return x;
}

bool Parse(int argc, char **argv, Options *o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--replicates") o->replicates = std::atoi(v.c_str());
    else if (k == "--samples") o->samples = std::atoi(v.c_str());
    else if (k == "--design") o->design = v;
    else if (k == "--C") o->C = std::atof(v.c_str());
    else if (k == "--p") o->p = std::atof(v.c_str());
    else if (k == "--q") o->q = std::atof(v.c_str());
    else if (k == "--a") o->a = std::atof(v.c_str());
    else if (k == "--b") o->b = std::atof(v.c_str());
    else if (k == "--rel") o->rel = std::atof(v.c_str());
    else if (k == "--min") o->min = std::atof(v.c_str());
    else if (k == "--max") o->max = std::atof(v.c_str());
    else return false;
  }
  return (argc % 2) == 1 && o->replicates > 0 && o->samples > 1 && (o->design == "depth" || o->design == "width" || o->design == "levels") && o->rel > 0;
}

// One synthetic hierarchy's level means and standard errors: S differences a
// level, D_L + sigma_L z, z of unit variance and kurtosis 3 (0.95 + 0.05 K^2)
// / (0.95 + 0.05 K)^2 = 23 (K = 30: one draw in twenty at a sqrt(K) times
// wider scale).
void Levels(Stream &st, const Options &o, const std::vector<double> &L, std::vector<double> *mean,
            std::vector<double> *se) {
  const double K = 30, narrow = 1 / std::sqrt(0.95 + 0.05 * K);
  mean->clear(), se->clear();
  for (double l : L) {
    const double D = o.a / l + o.b / (l * l), sigma = o.rel * std::fabs(D) * std::sqrt((double)o.samples);
    double sum = 0, sum2 = 0;
    for (PetscInt s = 0; s < o.samples; ++s) {
      const double wide = st.uniform() < 0.05 ? std::sqrt(K) : 1;
      const double y = D + sigma * narrow * wide * st.normal();
      sum += y, sum2 += y * y;
    }
    const double m = sum / (double)o.samples, var = (sum2 - (double)o.samples * m * m) / (double)(o.samples - 1);
    mean->push_back(m), se->push_back(std::sqrt(var / (double)o.samples));
  }
}

// --design levels: the coverage of every octave's local order; 0 when the
// worst lies in [min, max].
int CalibrateLevels(const Options &o) {
  std::vector<double> L = {4, 8, 16, 32, 64}, mean, se;
  std::vector<int> covered(L.size() - 1, 0);
  for (int r = 0; r < o.replicates; ++r) {
    Stream st(2000 + (std::uint64_t)r, 0);
    Levels(st, o, L, &mean, &se);
    for (size_t k = 0; k + 1 < L.size(); ++k) {
      const LocalOrder x = LocalOrderOf(mean[k], se[k], mean[k + 1], se[k + 1]);
      const double truth = std::log2((o.a / L[k] + o.b / (L[k] * L[k])) / (o.a / L[k + 1] + o.b / (L[k + 1] * L[k + 1])));
      covered[k] += x.lo <= truth && truth <= x.hi;
    }
  }
  double worst = 1;
  std::printf("law_calibration: levels design, %d replicates of %" PetscInt_FMT " differences a level, D_L = %g / L "
              "%+g / L^2, relative standard error %g, kurtosis 23; the local order covered:",
              o.replicates, o.samples, o.a, o.b, o.rel);
  for (size_t k = 0; k + 1 < L.size(); ++k) {
    const double c = (double)covered[k] / o.replicates;
    worst = std::min(worst, c);
    std::printf(" %g -> %g: %.3f%s", L[k], L[k + 1], c, k + 2 < L.size() ? "," : "\n");
  }
  return worst >= o.min && worst <= o.max ? 0 : 1;
}

} // namespace

int Calibrate(int argc, char **argv);

int main(int argc, char **argv) { // one process: MPI for the statistics' (trivial) reductions
  MPI_Init(&argc, &argv);
  const int code = Calibrate(argc, argv);
  MPI_Finalize();
  return code;
}

int Calibrate(int argc, char **argv) {
  Options o;
  if (!Parse(argc, argv, &o)) {
    std::fprintf(stderr, "law_calibration: usage: law_calibration [--replicates R] [--samples S] "
                         "[--design depth|width|levels] [--C C] [--p p] [--q q] [--a a] [--b b] [--rel r] "
                         "[--min f] [--max f]\n");
    return 2;
  }
  if (o.design == "levels") return CalibrateLevels(o);
  std::vector<double> L, H;
  for (int k = 0; k < (o.design == "depth" ? 5 : 7); ++k)
    L.push_back(o.design == "depth" ? std::pow(2.0, k) : 4), H.push_back(o.design == "depth" ? 4 : std::pow(2.0, k));
  const bool fits_p = o.design == "depth";
  Stream fixed(1, 0);
  std::vector<double> base((size_t)(kM * kN * kD));
  for (double &b : base) b = fixed.normal() / std::sqrt((double)kD);
  int covered = 0, resolved_cells = 0, failed = 0;
  double mean_exponent = 0;
  for (int r = 0; r < o.replicates; ++r) {
    Stream st(1000 + (std::uint64_t)r, 0);
    const std::vector<double> limit = Draw(st, base, o.samples, 1.0);
    std::vector<double> err, se;
    std::vector<char> ok;
    for (size_t c = 0; c < L.size(); ++c) {
      const double g = o.C * std::pow(L[c], -o.p) * std::pow(H[c], -o.q);
      const std::vector<double> model = Draw(st, base, o.samples, std::sqrt(1 + g));
      GramGap gap;
      if (GramGapOf(MPI_COMM_SELF, {{model.data(), o.samples, 1.0}}, {{limit.data(), o.samples, 1.0}}, kM, kN, kD,
                    &gap))
        return 1;
      err.push_back(gap.err), se.push_back(gap.se()), ok.push_back(gap.resolved);
      resolved_cells += gap.resolved;
    }
    const PowerFit f = PowerFitOf(L, H, err, se, ok, 77 + (std::uint64_t)r);
    if (f.cells == 0) {
      ++failed;
      continue;
    }
    const double truth = fits_p ? o.p : o.q, lo = fits_p ? f.p_lo : f.q_lo, hi = fits_p ? f.p_hi : f.q_hi;
    mean_exponent += fits_p ? f.p : f.q;
    covered += lo <= truth && truth <= hi;
  }
  const double coverage = (double)covered / o.replicates;
  std::printf("law_calibration: %s design, %d replicates of %" PetscInt_FMT " samples a side, g = %g L^-%g H^-%g: "
              "%s = %g covered in %.3f of the replicates (mean estimate %.3f; %.2f cells resolved a replicate; "
              "%d fits failed)\n",
              o.design.c_str(), o.replicates, o.samples, o.C, o.p, o.q, fits_p ? "p" : "q", fits_p ? o.p : o.q,
              coverage, mean_exponent / std::max(1, o.replicates - failed),
              (double)resolved_cells / o.replicates, failed);
  return coverage >= o.min && coverage <= o.max ? 0 : 1;
}
