// Coverage of the local orders of a study in law's hierarchy (docs/results.md,
// 'Studies in law over ranks'); the fits of a study in law are calibrated
// in verdicts.cpp.
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
//   law_calibration [--replicates 200] [--samples 4000] [--design levels]
//                   [--a 1.46] [--b -1.81] [--rel 0.016] [--min 0.90] [--max 0.99]
#include "mft/layout/random.hpp"
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
  std::string design = "levels";
  double min = 0.90, max = 0.99;
  double a = 1.46, b = -1.81, rel = 0.016; // --design levels
};

bool Parse(int argc, char **argv, Options *o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--replicates") o->replicates = std::atoi(v.c_str());
    else if (k == "--samples") o->samples = std::atoi(v.c_str());
    else if (k == "--design") o->design = v;
    else if (k == "--a") o->a = std::atof(v.c_str());
    else if (k == "--b") o->b = std::atof(v.c_str());
    else if (k == "--rel") o->rel = std::atof(v.c_str());
    else if (k == "--min") o->min = std::atof(v.c_str());
    else if (k == "--max") o->max = std::atof(v.c_str());
    else return false;
  }
  return (argc % 2) == 1 && o->replicates > 0 && o->samples > 1 && o->design == "levels" && o->rel > 0;
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
                         "[--design levels] [--a a] [--b b] [--rel r] [--min f] [--max f]\n");
    return 2;
  }
  return CalibrateLevels(o);
}
