// Level differences of finite models whose heads are shared (samples.hpp,
// CoarseHeads): for L = 4, 16, 64 at H = 4, the variance of the per-sample
// difference G_fine - G_coarse of two coupled models against that of two
// independent ones (Var fine + Var coarse), at equal cost (the pair costs
// what two independent samples do). Two pairs:
//   diagonal: (2L, H) -> (L, 2H), every head of two layers in one (one scale,
//     (2 L H)^-1/2, both exact in law);
//   depth:    (2L, H) -> (L, H), half of each of two layers' heads (exact in
//     law; the coarse head's scale is sqrt 2 larger).
// The variance is the mean over Gram entries of the squared standard error.
// The design of the depth study in law (beta = 1, d = 4, k = 2, N = 8, two
// sequences of the default data). With `orders`, the diagonal pairs alone
// for L = 1, 2, 4, ..., Lmax, and the local order of the weak error that
// their differences show: for a smooth statistic f, if E f_{L,H} - E f_lim =
// a(H) L^-p + b(H) L^-2p + ..., then D_L = E f_{2L,H} - E f_{L,2H} =
// (a(H) 2^-p - a(2H)) L^-p + ..., whose ratio over an octave is 2^p; f is
// each sequence's mean |x_i(1)|^2 and their mean over the sequences (the
// last column), and the interval is the delta method's. Then the fits of
// the last column over L >= Lmin, 4 and 8 (statistics/expansion.hpp): one
// power law, a/L + b/L^2, and a L^-p + b L^-(p+1) with the order free, each
// with its misfit. `fit FILE` makes those fits from the `L = ...` lines of
// an earlier run's output (e.g. a log under docs/bench/), several runs'
// lines in one file together.
// A benchmark, not a test:
//   mpiexec -n 2 build/tests/levels [samples] [orders Lmax [Lmin]]
//   build/tests/levels fit FILE
#include "mft/flow/samples.hpp"
#include "mft/studies/study_levels.hpp"
#include "mft/files/report.hpp"
#include "mft/statistics/expansion.hpp"
#include "mft/statistics/fit.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

using namespace mft;

namespace {

double MeanSquare(const std::vector<double> &se) {
  double s = 0;
  for (double v : se) s += v * v;
  return s / (double)se.size();
}

Settings ModelOf(PetscInt L, PetscInt H) {
  Settings s;
  PetscBool help;
  const std::vector<std::string> args = {"--model.L", std::to_string(L), "--model.H", std::to_string(H),
                                         "--model.depth_exponent", "0.5", "--model.head_exponent", "0.5",
                                         "--init.v_mean", "0", "--model.d", "4", "--model.k", "2", "--data.N", "8",
                                         "--data.M", "2", "--model.beta", "1"};
  if (SettingsParse(PETSC_COMM_WORLD, "forward", args, &s, &help)) std::exit(2);
  return s;
}

PetscErrorCode Pair(const char *name, PetscInt L, PetscInt Hf, PetscInt Lc, PetscInt Hc, PetscInt S, double *ratio) {
  Samples f, c;
  std::vector<double> mean, se_diff;
  PetscFunctionBeginUser;
  const double t0 = seconds();
  PetscCall(SamplesForwardPair(PETSC_COMM_WORLD, ModelOf(L, Hf), ModelOf(Lc, Hc), S, &f, &c, 7));
  const double elapsed = seconds() - t0;
  const Law difference = {SampleSet({{f.tokens.data(), 1.0}, {c.tokens.data(), -1.0}}, f.S, f.block.size())};
  PetscCall(GramOf(PETSC_COMM_WORLD, difference, f.M, f.N, f.d, &mean, &se_diff));
  const double coupled = MeanSquare(se_diff), independent = MeanSquare(f.gram_stderr) + MeanSquare(c.gram_stderr);
  double gap = 0, norm = 0;
  for (size_t e = 0; e < mean.size(); ++e) gap += mean[e] * mean[e], norm += f.gram_mean[e] * f.gram_mean[e];
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "%-9s %3" PetscInt_FMT " x %-2" PetscInt_FMT " -> %3" PetscInt_FMT " x %-2" PetscInt_FMT
                        "  coupled %.3e  independent %.3e  ratio %6.2f  |E G_f - E G_c| / |E G_f| %.3e  %.1f s\n",
                        name, L, Hf, Lc, Hc, coupled, independent, independent / coupled, std::sqrt(gap / norm),
                        elapsed));
  *ratio = independent / coupled;
  PetscFunctionReturn(0);
}

} // namespace

// The mean over ranks' samples of sequence m's per-sample statistic
// y = mean_i |x_i|^2 (fine) - mean_i |x_i|^2 (coarse), and its standard
// error (two passes reduced over the ranks); entry M: y's mean over the
// sequences.
PetscErrorCode TraceDifference(const Samples &f, const Samples &c, std::vector<double> *mean, std::vector<double> *se) {
  const PetscInt M = f.M, N = f.N, d = f.d, rows = f.block.size();
  auto one = [&](PetscInt s, PetscInt m) {
    double v = 0;
    for (PetscInt e = 0; e < N * d; ++e) {
      const size_t at = ((size_t)s * M + m) * N * d + e;
      v += (f.tokens[at] * f.tokens[at] - c.tokens[at] * c.tokens[at]) / (double)N;
    }
    return v;
  };
  auto y = [&](PetscInt s, PetscInt m) {
    if (m < M) return one(s, m);
    double v = 0;
    for (PetscInt k = 0; k < M; ++k) v += one(s, k) / (double)M;
    return v;
  };
  PetscFunctionBeginUser;
  mean->assign((size_t)M + 1, 0.0), se->assign((size_t)M + 1, 0.0);
  for (PetscInt s = 0; s < rows; ++s)
    for (PetscInt m = 0; m <= M; ++m) (*mean)[m] += y(s, m);
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, mean->data(), (int)M + 1, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD));
  for (double &v : *mean) v /= (double)f.S;
  for (PetscInt s = 0; s < rows; ++s)
    for (PetscInt m = 0; m <= M; ++m) (*se)[m] += std::pow(y(s, m) - (*mean)[m], 2);
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, se->data(), (int)M + 1, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD));
  for (double &v : *se) v = std::sqrt(v / (double)(f.S - 1) / (double)f.S);
  PetscFunctionReturn(0);
}

// The fits of D_L (standard errors se) over L >= each of the starts.
PetscErrorCode Fits(const std::vector<double> &L, const std::vector<double> &D, const std::vector<double> &se) {
  PetscFunctionBeginUser;
  for (double from : {L.front(), 4.0, 8.0}) {
    std::vector<double> x, y, s;
    for (size_t i = 0; i < L.size(); ++i)
      if (L[i] >= from) x.push_back(L[i]), y.push_back(D[i]), s.push_back(se[i]);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "fits over L >= %.0f:\n", from));
    for (const Expansion &e : {ExpansionFit(x, y, s, 1, true), ExpansionFit(x, y, s, 2, false, 1), ExpansionFit(x, y, s, 2, true)})
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "  %s\n", ExpansionLine(e, "L").c_str()));
  }
  PetscFunctionReturn(0);
}

// The fits of the last column of the `L = ...` lines of FILE (sorted by L).
PetscErrorCode FitsOfFile(const char *path) {
  std::ifstream in(path);
  std::vector<std::pair<double, std::pair<double, double>>> rows;
  PetscFunctionBeginUser;
  PetscCheck(in, PETSC_COMM_WORLD, PETSC_ERR_FILE_OPEN, "cannot read '%s'", path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("L = ", 0)) continue;
    std::istringstream words(line.substr(line.find(')') + 1));
    std::vector<std::string> w{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    double D = NAN, se = NAN; // the last "value +- se"
    for (size_t i = 0; i + 2 < w.size(); ++i)
      if (w[i + 1] == "+-") D = std::atof(w[i].c_str()), se = std::atof(w[i + 2].c_str());
    rows.push_back({std::atof(line.c_str() + 4), {D, se}});
  }
  PetscCheck(rows.size() >= 3, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "'%s' has %zu lines 'L = ...', not 3 or more", path,
             rows.size());
  std::sort(rows.begin(), rows.end());
  std::vector<double> L, D, se;
  for (const auto &r : rows) L.push_back(r.first), D.push_back(r.second.first), se.push_back(r.second.second);
  PetscCall(Fits(L, D, se));
  PetscFunctionReturn(0);
}

// D_L of every sequence with its standard error, for L = Lmin .. Lmax; the local orders.
PetscErrorCode Orders(PetscInt S, PetscInt Lmin, PetscInt Lmax) {
  std::vector<std::vector<double>> D, se;
  std::vector<PetscInt> Ls;
  PetscFunctionBeginUser;
  for (PetscInt L = Lmin; L <= Lmax; L *= 2) {
    Samples f, c;
    std::vector<double> t, tse;
    const double t0 = seconds();
    PetscCall(SamplesForwardPair(PETSC_COMM_WORLD, ModelOf(2 * L, 4), ModelOf(L, 8), S, &f, &c, 7 + 1000000 * L));
    PetscCall(TraceDifference(f, c, &t, &tse));
    D.push_back(t), se.push_back(tse), Ls.push_back(L);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "L = %3" PetscInt_FMT ": D_L (per sequence, then their mean)", L));
    for (PetscInt m = 0; m <= f.M; ++m) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "  %+.4e +- %.1e", t[m], tse[m]));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "  (%.1f s)\n", seconds() - t0));
  }
  for (size_t k = 0; k + 1 < D.size(); ++k) {
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "local order %3" PetscInt_FMT " -> %3" PetscInt_FMT ":", Ls[k], Ls[k + 1]));
    for (size_t m = 0; m < D[k].size(); ++m) {
      const LocalOrder o = LocalOrderOf(D[k][m], se[k][m], D[k + 1][m], se[k + 1][m]);
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "  %.3f [%.3f, %.3f]", o.p, o.lo, o.hi));
    }
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "\n"));
  }
  std::vector<double> x, y, s;
  for (size_t k = 0; k < D.size(); ++k) x.push_back((double)Ls[k]), y.push_back(D[k].back()), s.push_back(se[k].back());
  if (D.size() >= 3) PetscCall(Fits(x, y, s));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv) {
  PetscCall(PetscInitialize(&argc, &argv, nullptr, nullptr));
  if (argc > 2 && std::string(argv[1]) == "fit") {
    PetscCall(FitsOfFile(argv[2]));
    PetscCall(PetscFinalize());
    return 0;
  }
  const PetscInt S = argc > 1 ? std::atoi(argv[1]) : 4000;
  if (argc > 3 && std::string(argv[2]) == "orders") {
    PetscCall(Orders(S, argc > 4 ? std::atoi(argv[4]) : 1, std::atoi(argv[3])));
    PetscCall(PetscFinalize());
    return 0;
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%" PetscInt_FMT " samples a pair; variance: mean over Gram entries of "
                                          "the squared standard error of E G_fine - E G_coarse\n", S));
  std::vector<double> logL, diagonal, depth;
  for (PetscInt L : {4, 16, 64}) {
    double a, b;
    PetscCall(Pair("diagonal", 2 * L, 4, L, 8, S, &a));
    PetscCall(Pair("depth", 2 * L, 4, L, 4, S, &b));
    logL.push_back(std::log((double)L)), diagonal.push_back(std::log(a)), depth.push_back(std::log(b));
  }
  // How the coupling's gain grows with L: the log-log slope of the ratio.
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "ratio ~ L^s over L = 4 .. 64: diagonal s = %.3f, depth s = %.3f\n",
                        fit_line(logL, diagonal).slope, fit_line(logL, depth).slope));
  PetscCall(PetscFinalize());
  return 0;
}
