// The multilevel hierarchy of a study in law along the diagonal (study_levels.hpp):
// a level's coupled samples and moments, Giles's check, rates and
// allocation, and the study that prints and writes them.
#include "mft/studies/study_levels.hpp"

#include "mft/files/report.hpp"
#include "mft/flow/samples.hpp"
#include "mft/settings/error.hpp"
#include "mft/studies/study_in_law.hpp"
#include "mft/studies/study.hpp"
#include "mft/statistics/fit.hpp"
#include "mft/studies/study_cases.hpp"
#include "mft/studies/study_tables.hpp"

#include <algorithm>
#include <cmath>

namespace mft {

using namespace study;

namespace {

// Samples drawn at once: a rank holds a chunk's tokens, and every level's
// P values (two numbers a sample) for good.
constexpr PetscInt kChunk = 32768;

// P of this rank's samples of r, the mean over sequences and tokens of
// |x_i(1)|^2, added with weight w into p (one entry a row).
void AddP(const Samples &r, double w, std::vector<double> *p) {
  const size_t n = (size_t)(r.M * r.N * r.d);
  for (size_t row = 0; row < (size_t)r.block.size(); ++row) {
    double v = 0;
    for (size_t e = 0; e < n; ++e) v += r.tokens[row * n + e] * r.tokens[row * n + e];
    (*p)[row] += w * v / (double)(r.M * r.N);
  }
}

// The mean of x over every rank's values (count of them), and the sums of
// its second and fourth central powers.
PetscErrorCode Moments(MPI_Comm comm, const std::vector<double> &x, PetscInt count, double *mean, double *m2,
                       double *m4) {
  double sums[2] = {0, 0};
  PetscFunctionBeginUser;
  for (double v : x) sums[0] += v;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, sums, 1, MPI_DOUBLE, MPI_SUM, comm));
  *mean = sums[0] / (double)count;
  sums[0] = 0;
  for (double v : x) sums[0] += std::pow(v - *mean, 2), sums[1] += std::pow(v - *mean, 4);
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, comm));
  *m2 = sums[0], *m4 = sums[1];
  PetscFunctionReturn(0);
}

// The least-squares slope of y over x (NaN with fewer than two points).
double Slope(const std::vector<double> &x, const std::vector<double> &y) {
  return x.size() < 2 ? NAN : fit_line(x, y).slope;
}

} // namespace

PetscErrorCode LevelDraw(MPI_Comm comm, const std::vector<Settings> &fine, const std::vector<Settings> &coarse,
                         PetscInt more, std::uint64_t first, Level *level) {
  PetscFunctionBeginUser;
  for (PetscInt done = 0; done < more; done += kChunk) {
    const PetscInt n = std::min(kChunk, more - done);
    const std::uint64_t at = first + (std::uint64_t)(level->samples + done);
    std::vector<double> y, p;
    double slowest = 0;
    for (size_t k = 0; k < fine.size(); ++k) {
      Samples f, c;
      if (coarse.empty()) PetscCall(SamplesForward(comm, fine[k], n, &f, at));
      else PetscCall(SamplesForwardPair(comm, fine[k], coarse[k], n, &f, &c, at));
      if (k == 0) y.assign((size_t)f.block.size(), 0.0), p.assign((size_t)f.block.size(), 0.0);
      const double w = 1.0 / (double)fine.size();
      AddP(f, w, &p);
      if (!coarse.empty()) AddP(c, -w, &y);
      slowest += f.seconds;
    }
    for (size_t row = 0; row < y.size(); ++row) y[row] += p[row]; // Y = P_fine - P_coarse
    level->values.insert(level->values.end(), y.begin(), y.end());
    level->fine.insert(level->fine.end(), p.begin(), p.end());
    level->cost = (level->cost * (double)(level->samples + done) + slowest) / (double)(level->samples + done + n);
  }
  level->samples += more;
  const double S = (double)level->samples;
  double m2, m4, f2, f4;
  PetscCall(Moments(comm, level->values, level->samples, &level->mean, &m2, &m4));
  PetscCall(Moments(comm, level->fine, level->samples, &level->mean_fine, &f2, &f4));
  level->var = m2 / (S - 1), level->var_fine = f2 / (S - 1);
  level->kurtosis = m2 > 0 ? (m4 / S) / std::pow(m2 / S, 2) : NAN;
  PetscFunctionReturn(0);
}

void LevelsCheck(std::vector<Level> *levels) {
  for (size_t l = 1; l < levels->size(); ++l) {
    const Level &a = (*levels)[l - 1];
    Level &b = (*levels)[l];
    const double gap = std::fabs(b.mean - (b.mean_fine - a.mean_fine));
    const double se = std::sqrt(b.var / (double)b.samples) + std::sqrt(b.var_fine / (double)b.samples) +
                      std::sqrt(a.var_fine / (double)a.samples);
    b.check = gap / (3 * se);
  }
}

LevelRates LevelsRates(const std::vector<Level> &levels) {
  std::vector<double> l, mean, var, cost;
  for (size_t i = 1; i < levels.size(); ++i) {
    l.push_back((double)i);
    mean.push_back(std::log2(std::fabs(levels[i].mean)));
    var.push_back(std::log2(levels[i].var));
    cost.push_back(std::log2(levels[i].cost));
  }
  return {-Slope(l, mean), -Slope(l, var), Slope(l, cost)};
}

std::vector<PetscInt> LevelsAllocation(const std::vector<Level> &levels, double target) {
  double sum = 0;
  for (const Level &v : levels) sum += std::sqrt(v.var * v.cost);
  std::vector<PetscInt> n;
  for (const Level &v : levels)
    n.push_back((PetscInt)std::ceil(std::pow(1.96 / target, 2) * std::sqrt(v.var / v.cost) * sum));
  return n;
}

LocalOrder LocalOrderOf(double mean_a, double se_a, double mean_b, double se_b) {
  LocalOrder o;
  o.p = std::log2(std::fabs(mean_a / mean_b));
  const double se = std::hypot(se_a / mean_a, se_b / mean_b) / std::log(2.0);
  o.lo = o.p - 1.96 * se, o.hi = o.p + 1.96 * se;
  return o;
}

namespace {

// The levels of a study: L_l from study.L (doubling), H_l = P / L_l with
// P = (largest L) x study.H; the message names what is wrong.
std::string LevelsProblem(const Settings &s, std::vector<PetscInt> *L, std::vector<PetscInt> *H) {
  *L = integers(s.study.L);
  std::sort(L->begin(), L->end());
  const std::vector<PetscInt> Hs = integers(s.study.H);
  if (Hs.size() != 1) return "study.levels takes one study.H (the finest level's heads)";
  if (L->size() < 2) return "study.levels takes at least two study.L (the levels' depths)";
  for (size_t l = 0; l < L->size(); ++l) {
    if (l > 0 && (*L)[l] != 2 * (*L)[l - 1]) return "study.levels takes depths that double (study.L = 1 2 4 ...)";
    H->push_back(Hs[0] * L->back() / (*L)[l]);
  }
  return "";
}

PetscErrorCode LevelsSettings(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, size_t v,
                              PetscInt L, PetscInt H, std::vector<Settings> *out) {
  std::vector<std::string> model = overrides(StudyVariants(s)[v]);
  const auto shape = StudyShapeOptions(s, L, H);
  model.insert(model.end(), shape.begin(), shape.end());
  PetscFunctionBeginUser;
  out->assign(probe_sets(s).size(), Settings());
  for (size_t k = 0; k < out->size(); ++k) PetscCall(ProbeSettings(comm, args, s, model, k, &(*out)[k]));
  PetscFunctionReturn(0);
}

PetscErrorCode LevelsPrint(MPI_Comm comm, size_t v, const std::vector<Level> &levels, const LevelRates &r) {
  PetscFunctionBeginUser;
  PetscCall(PetscPrintf(comm, "variant %zu: level  L x H  -> coarse    samples  mean(Pf-Pc)   mean(Pf)      "
                              "var(Pf-Pc)   var(Pf)      kurtosis  check  cost/sample\n", v));
  for (size_t l = 0; l < levels.size(); ++l) {
    const Level &x = levels[l];
    PetscCall(PetscPrintf(comm,
                          "variant %zu: %5zu  %3" PetscInt_FMT " x %-4" PetscInt_FMT " -> %3" PetscInt_FMT
                          " x %-4" PetscInt_FMT " %8" PetscInt_FMT "  %+.4e  %+.4e  %.4e  %.4e  %8.2f  %5.2f  %.2e s%s\n",
                          v, l, x.L, x.H, x.L_coarse, x.H_coarse, x.samples, x.mean, x.mean_fine, x.var, x.var_fine,
                          x.kurtosis, x.check, x.cost, x.check > 1 ? "  INCONSISTENT" : ""));
  }
  PetscCall(PetscPrintf(comm, "variant %zu: rates over levels 1..%zu: alpha %.3f (means), beta %.3f (variances), "
                              "gamma %.3f (costs)\n", v, levels.size() - 1, r.alpha, r.beta, r.gamma));
  for (size_t l = 1; l + 1 < levels.size(); ++l) {
    const Level &a = levels[l], &b = levels[l + 1];
    const LocalOrder o = LocalOrderOf(a.mean, std::sqrt(a.var / (double)a.samples), b.mean,
                                      std::sqrt(b.var / (double)b.samples));
    PetscCall(PetscPrintf(comm, "variant %zu: local order of the means, L %" PetscInt_FMT " -> %" PetscInt_FMT
                                ": %.3f [%.3f, %.3f]\n", v, a.L, b.L, o.p, o.lo, o.hi));
  }
  PetscFunctionReturn(0);
}

// Variant v's hierarchy: the pilot, with a target Giles's allocation (at
// most three rounds), the check and rates; its rows and fit row.
PetscErrorCode LevelsVariant(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, size_t v,
                             std::vector<std::string> *rows, std::vector<std::string> *fits) {
  std::vector<PetscInt> Ls, Hs;
  std::vector<std::vector<Settings>> models;
  std::vector<Level> levels;
  const PetscInt most = s.study.max_samples > 0 ? s.study.max_samples : 64 * s.study.samples;
  const double t0 = seconds();
  PetscFunctionBeginUser;
  LevelsProblem(s, &Ls, &Hs);
  for (size_t l = 0; l < Ls.size(); ++l) {
    models.emplace_back();
    PetscCall(LevelsSettings(comm, args, s, v, Ls[l], Hs[l], &models.back()));
    Level x;
    x.L = Ls[l], x.H = Hs[l], x.L_coarse = l ? Ls[l - 1] : 0, x.H_coarse = l ? Hs[l - 1] : 0;
    PetscCall(LevelDraw(comm, models[l], l ? models[l - 1] : std::vector<Settings>(), s.study.samples,
                        CellSeeds(v, Ls[l], Hs[l]), &x));
    levels.push_back(std::move(x));
  }
  double se = 0;
  std::string said;
  for (int round = 0;; ++round) {
    se = 0;
    for (const Level &x : levels) se += x.var / (double)x.samples;
    se = std::sqrt(se);
    if (s.study.target <= 0) break;
    if (1.96 * se <= s.study.target || round == 3) {
      said = 1.96 * se <= s.study.target ? "met" : "not met after three rounds";
      break;
    }
    const std::vector<PetscInt> want = LevelsAllocation(levels, s.study.target);
    bool more = false;
    for (size_t l = 0; l < levels.size(); ++l) {
      const PetscInt n = std::min(most, want[l]);
      if (n <= levels[l].samples) continue;
      more = true;
      PetscCall(LevelDraw(comm, models[l], l ? models[l - 1] : std::vector<Settings>(), n - levels[l].samples,
                          CellSeeds(v, Ls[l], Hs[l]), &levels[l]));
    }
    if (!more) { // every level the allocation wants more of is at study.max_samples
      said = "not met: study.max_samples reached";
      break;
    }
  }
  LevelsCheck(&levels);
  const LevelRates r = LevelsRates(levels);
  PetscCall(LevelsPrint(comm, v, levels, r));
  double estimate = 0, cost = 0;
  for (const Level &x : levels) estimate += x.mean, cost += x.cost * (double)x.samples;
  // Plain sampling of the finest model to the same standard error: its
  // variance over se^2 samples, each costing half of the top level's pair.
  const double plain = levels.back().var_fine / (se * se) * levels.back().cost / 2;
  PetscCall(PetscPrintf(comm, "variant %zu: E P(%" PetscInt_FMT " x %" PetscInt_FMT ") = %.6e +- %.2e (95%%), "
                              "%.3g s of samples; plain sampling to the same interval: %.3g s%s%s\n",
                        v, Ls.back(), Hs.back(), estimate, 1.96 * se, cost, plain, said.empty() ? "" : "; target ",
                        said.c_str()));
  for (size_t l = 0; l < levels.size(); ++l) {
    const Level &x = levels[l];
    rows->push_back(csv({std::to_string(v), std::to_string(l), std::to_string(x.L), std::to_string(x.H),
                         std::to_string(x.L_coarse), std::to_string(x.H_coarse), std::to_string(x.samples), num(x.mean),
                         num(x.var), num(x.mean_fine), num(x.var_fine), num(x.kurtosis), num(x.cost), num(x.check)}));
  }
  fits->push_back(csv({std::to_string(v), num(r.alpha), num(r.beta), num(r.gamma), num(estimate), num(1.96 * se),
                       num(s.study.target), quoted(said), num(cost), num(plain), num(seconds() - t0)}));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode LevelsRun(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, int *status) {
  std::vector<PetscInt> Ls, Hs;
  std::vector<std::string> rows, fits;
  PetscFunctionBeginUser;
  const std::string problem = LevelsProblem(s, &Ls, &Hs);
  PetscCheck(problem.empty(), comm, PETSC_ERR_USER_INPUT, "%s", problem.c_str());
  for (const char *key : {"limit.paths", "limit.steps", "limit.step_heads", "limit.richardson", "limit.coupling"})
    PetscCheck(!s.is_explicit(key), comm, PETSC_ERR_USER_INPUT,
               "%s does not apply to study.levels: its levels are finite models, no limit's paths are drawn", key);
  PetscCall(StudyDirCreate(comm, s.study.dir));
  const double t0 = seconds();
  PetscCall(PetscPrintf(comm, "mft study in law, levels: L x H = %" PetscInt_FMT " fixed, L in {%s}, %" PetscInt_FMT
                              " samples a level (the pilot%s) | %zu probe sets | %s\n",
                        Ls.back() * Hs.back(), s.study.L.c_str(), s.study.samples,
                        s.study.target > 0 ? ", then Giles's allocation" : "", probe_sets(s).size(),
                        s.study.dir.c_str()));
  for (size_t v = 0; v < StudyVariants(s).size(); ++v) PetscCall(LevelsVariant(comm, args, s, v, &rows, &fits));
  PetscCall(WriteTable(comm, s.study.dir + "/levels.csv",
                       "variant,level,L,H,L_coarse,H_coarse,samples,mean,var,mean_fine,var_fine,kurtosis,cost,check",
                       rows));
  PetscCall(WriteTable(comm, s.study.dir + "/levels_fits.csv",
                       "variant,alpha,beta,gamma,estimate,half_width,target,met,sample_seconds,plain_seconds,seconds",
                       fits));
  PetscCall(PetscPrintf(comm, "mft study in law, levels: wrote %s/levels.csv, levels_fits.csv\n", s.study.dir.c_str()));
  Summary sum;
  sum.add("command", std::string("study")).add("mode", std::string("levels")).add("dir", s.study.dir);
  sum.add("levels", (long long)rows.size()).add("seconds", seconds() - t0);
  PetscCall(sum.print(comm));
  *status = kExitOk;
  PetscFunctionReturn(0);
}

PetscErrorCode LevelsList(MPI_Comm comm, const Settings &s, double *evaluations) {
  std::vector<PetscInt> Ls, Hs;
  PetscFunctionBeginUser;
  *evaluations = 0;
  const std::string problem = LevelsProblem(s, &Ls, &Hs);
  PetscCheck(problem.empty(), comm, PETSC_ERR_USER_INPUT, "%s", problem.c_str());
  const double sets = (double)probe_sets(s).size(), S = (double)s.study.samples;
  for (size_t v = 0; v < StudyVariants(s).size(); ++v)
    for (size_t l = 0; l < Ls.size(); ++l) {
      const double n = sets * S * (double)(Ls[l] * Hs[l]) * (l ? 2 : 1);
      PetscCall(PetscPrintf(comm, "variant %zu level %zu: %" PetscInt_FMT " x %" PetscInt_FMT "%s: %.4g head "
                                  "evaluations (the pilot)\n", v, l, Ls[l], Hs[l], l ? " and its coarse model" : "", n));
      *evaluations += n;
    }
  PetscFunctionReturn(0);
}

} // namespace mft
