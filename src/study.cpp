// Convergence studies: cases, their runs, and the aggregation into errors and fits.
#include "mft/study.hpp"

#include "mft/error.hpp"
#include "mft/fit.hpp"
#include "mft/h5.hpp"
#include "mft/limit.hpp"
#include "mft/optimizer.hpp"
#include "mft/random.hpp"
#include "mft/runfile.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <tuple>

namespace mft {

namespace {

std::vector<std::string> words(const std::string &text, char sep = ' ') {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; std::getline(in, w, sep);) {
    const size_t a = w.find_first_not_of(" \t"), b = w.find_last_not_of(" \t");
    if (a != std::string::npos) out.push_back(w.substr(a, b - a + 1));
  }
  return out;
}

std::vector<PetscInt> integers(const std::string &text) {
  std::vector<PetscInt> out;
  for (auto &w : words(text)) out.push_back((PetscInt)std::stoll(w));
  return out;
}

// "data.N=16 model.d=4" -> --data.N 16 --model.d 4
std::vector<std::string> overrides(const std::string &variant) {
  std::vector<std::string> out;
  for (auto &kv : words(variant)) {
    const size_t eq = kv.find('=');
    out.push_back("--" + kv.substr(0, eq));
    out.push_back(eq == std::string::npos ? "" : kv.substr(eq + 1));
  }
  return out;
}

PetscErrorCode CaseSettings(MPI_Comm comm, std::vector<std::string> args, const std::vector<std::string> &extra,
                            Settings *s) {
  PetscBool help;
  PetscFunctionBeginUser;
  args.insert(args.end(), extra.begin(), extra.end());
  PetscCall(SettingsParse(comm, "study", args, s, &help));
  PetscFunctionReturn(0);
}

std::string case_path(const std::string &dir, PetscInt i) { return dir + "/case-" + std::to_string(i) + ".h5"; }

// The probe sets: family f with study.probe_M sequences of its own seed.
std::vector<std::string> probe_overrides(const Settings &s, size_t f) {
  const auto families = words(s.study.probes);
  return {"--data.family", families[f], "--data.M", std::to_string(s.study.probe_M), "--data.seed",
          std::to_string(s.data.seed + 7919 * (f + 1)), "--data.file", ""};
}

// Trains a model of settings ts for study.steps steps; all of its heads on every rank.
PetscErrorCode TrainHeads(MPI_Comm comm, const Settings &ts, std::vector<double> *heads) {
  Problem p;
  Optimizer opt;
  PetscFunctionBeginUser;
  PetscCall(ProblemCreate(comm, ts, &p));
  PetscCall(OptimizerCreate(ts.train, p.heads, &opt));
  for (PetscInt step = 0; step < ts.study.steps; ++step) {
    ProblemSetBatch(&p, step);
    PetscCall(ProblemEvaluate(&p, PETSC_TRUE));
    PetscCheck(std::isfinite(p.risk), comm, PETSC_ERR_NOT_CONVERGED, "training diverged at step %" PetscInt_FMT, step);
    PetscCall(OptimizerStep(&opt, p.heads.theta, p.grad));
    PetscCall(ProblemSetHeads(&p));
  }
  PetscCall(GatherAll(p.heads.theta, heads));
  PetscCall(OptimizerDestroy(&opt));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(0);
}

} // namespace

std::string StudyCase::describe() const {
  std::ostringstream os;
  os << "case " << index << " (variant " << variant << ", ";
  if (reference) os << "reference)";
  else os << "L=" << L << ", H=" << H << ", seed " << seed << ")";
  return os.str();
}

std::vector<std::string> StudyVariants(const Settings &s) {
  auto v = words(s.study.variants, ';');
  if (v.empty()) v.push_back("");
  return v;
}

std::vector<StudyCase> StudyCases(const Settings &s) {
  std::vector<StudyCase> cases;
  const auto Ls = integers(s.study.L), Hs = integers(s.study.H);
  const PetscInt nv = (PetscInt)StudyVariants(s).size();
  for (PetscInt v = 0; v < nv; ++v) {
    StudyCase ref;
    ref.index = (PetscInt)cases.size(), ref.variant = v, ref.reference = true;
    ref.L = s.study.state == "trained" ? s.study.reference_L : 0;
    ref.H = s.study.state == "trained" ? s.study.reference_H : s.limit.heads;
    cases.push_back(ref);
    for (PetscInt L : Ls)
      for (PetscInt H : Hs)
        for (PetscInt seed = 1; seed <= s.study.seeds; ++seed) {
          StudyCase c;
          c.index = (PetscInt)cases.size(), c.variant = v, c.L = L, c.H = H, c.seed = seed;
          cases.push_back(c);
        }
  }
  return cases;
}

PetscErrorCode StudyRunCase(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                            const StudyCase &c) {
  const std::vector<std::string> variant = overrides(StudyVariants(s)[c.variant]);
  const bool trained = s.study.state == "trained";
  std::vector<std::string> model = variant;
  if (!c.reference || trained)
    model.insert(model.end(), {"--model.L", std::to_string(c.L), "--model.H", std::to_string(c.H), "--init.seed",
                               std::to_string(s.init.seed + (c.reference ? 0 : c.seed))});
  std::vector<double> heads;
  Settings cs;
  PetscFunctionBeginUser;
  if (trained) {
    Settings ts;
    PetscCall(CaseSettings(comm, args, model, &ts));
    PetscCall(TrainHeads(comm, ts, &heads));
  }
  const auto families = words(s.study.probes);
  std::vector<LimitResult> results(families.size());
  for (size_t f = 0; f < families.size(); ++f) {
    std::vector<std::string> extra = model;
    const auto probes = probe_overrides(s, f);
    extra.insert(extra.end(), probes.begin(), probes.end());
    PetscCall(CaseSettings(comm, args, extra, &cs));
    if (c.reference && !trained) cs = LimitSettingsFor(cs);
    cs.scheme.zero_targets = true;
    cs.loss.kind = LossKind::token;
    PetscCall(LimitSolve(comm, cs, &results[f], trained ? &heads : nullptr));
  }
  std::vector<ResultArray> arrays;
  std::vector<std::string> names;
  const unsigned long long M = s.study.probe_M, N = cs.data.N, d = cs.model.d;
  for (size_t f = 0; f < families.size(); ++f) {
    arrays.push_back({"/probes/" + families[f] + "/tokens", {M, N, d}, results[f].tokens.data()});
    arrays.push_back({"/probes/" + families[f] + "/adjoint", {M, N, d}, results[f].adjoint.data()});
  }
  PetscCall(ResultFileWrite(comm, cs, arrays,
                            {{"study.case", std::to_string(c.index)},
                             {"study.variant", std::to_string(c.variant)},
                             {"study.reference", c.reference ? "true" : "false"},
                             {"study.case_L", std::to_string(c.L)},
                             {"study.case_H", std::to_string(c.H)},
                             {"study.case_seed", std::to_string(c.seed)}},
                            case_path(s.study.dir, c.index)));
  PetscFunctionReturn(0);
}

namespace {

// The probe outputs of one case: per family, tokens and adjoints.
struct CaseData {
  std::vector<std::vector<double>> tokens, adjoint;
  PetscInt N = 0, d = 0; // from the arrays' shapes (M, N, d)
};

// Reads a case file (verified); on failure *problem says why.
PetscErrorCode ReadCase(const std::string &path, const std::vector<std::string> &families, CaseData *out,
                        std::string *problem) {
  std::uint64_t stored = 0, computed = 0;
  PetscFunctionBeginUser;
  problem->clear();
  PetscCall(PetscPushErrorHandler(ErrorCapture, nullptr));
  PetscErrorCode err = h5::Verify(PETSC_COMM_SELF, path, &stored, &computed);
  if (!err && stored == computed) {
    h5::File f;
    err = h5::Open(PETSC_COMM_SELF, path, false, &f);
    for (size_t i = 0; !err && i < families.size(); ++i)
      for (int q = 0; q < 2 && !err; ++q) {
        const std::string name = "/probes/" + families[i] + (q ? "/adjoint" : "/tokens");
        const auto dims = h5::Shape(f, name);
        if (dims.size() != 3) {
          *problem = path + " has no " + name;
          break;
        }
        out->N = (PetscInt)dims[1], out->d = (PetscInt)dims[2];
        std::vector<double> a((size_t)(dims[0] * dims[1] * dims[2]));
        Range all;
        all.end = (PetscInt)dims[0];
        err = h5::ReadRows(f, name, dims, 1, all, a.data());
        (q ? out->adjoint : out->tokens).push_back(a);
      }
    if (!err) err = h5::Close(&f);
  } else if (!err) {
    *problem = path + " is damaged (checksum)";
  }
  PetscCall(PetscPopErrorHandler());
  if (err) *problem = captured_error();
  PetscFunctionReturn(0);
}

// max over probe sequences of (1/N) sum_i |a_i - b_i|^2, over all families.
double max_sequence_error(const std::vector<std::vector<double>> &a, const std::vector<std::vector<double>> &b,
                          PetscInt N, PetscInt d) {
  double worst = 0;
  for (size_t f = 0; f < a.size(); ++f) {
    const size_t M = a[f].size() / (size_t)(N * d);
    for (size_t m = 0; m < M; ++m) {
      double e = 0;
      for (size_t k = m * N * d; k < (m + 1) * N * d; ++k) e += (a[f][k] - b[f][k]) * (a[f][k] - b[f][k]);
      worst = std::fmax(worst, e / (double)N);
    }
  }
  return worst;
}

struct Grid2 {
  std::vector<PetscInt> L, H;
  // Per (L, H): the squared errors of each available seed, x and p.
  std::vector<std::vector<double>> e2x, e2p;
};

double err_of(const std::vector<double> &e2) {
  if (e2.empty()) return NAN;
  double s = 0;
  for (double v : e2) s += v;
  return std::sqrt(s / (double)e2.size());
}

struct Fits {
  double slope_L = NAN, slope_H = NAN, a = NAN, b = NAN, C1 = NAN, C2 = NAN, joint_rms = NAN;
};

// Slopes, and with `joint` the fit of C1/L + C2 L^-a H^-b (a grid search).
Fits fit_grid(const Grid2 &g, const std::vector<double> &err, bool joint = true) {
  Fits f;
  const size_t nL = g.L.size(), nH = g.H.size();
  std::vector<double> x, y;
  for (size_t i = 0; i < nL; ++i) // slope in L at the largest H
    if (std::isfinite(err[i * nH + nH - 1]) && err[i * nH + nH - 1] > 0)
      x.push_back(std::log((double)g.L[i])), y.push_back(std::log(err[i * nH + nH - 1]));
  if (x.size() >= 2) f.slope_L = fit_line(x, y).slope;
  x.clear(), y.clear();
  for (size_t j = 0; j < nH; ++j) // slope in H at the largest L
    if (std::isfinite(err[(nL - 1) * nH + j]) && err[(nL - 1) * nH + j] > 0)
      x.push_back(std::log((double)g.H[j])), y.push_back(std::log(err[(nL - 1) * nH + j]));
  if (x.size() >= 2) f.slope_H = fit_line(x, y).slope;
  if (!joint) return f;
  // err ~ C1/L + C2 L^-a H^-b: for each (a, b) on a grid, C1, C2 >= 0 by least
  // squares on relative residuals; keep the best.
  double best = INFINITY;
  for (int ia = 0; ia <= 150; ++ia)
    for (int ib = 0; ib <= 150; ++ib) {
      const double a = ia * 0.01, b = ib * 0.01;
      double s11 = 0, s12 = 0, s22 = 0, r1 = 0, r2 = 0;
      int n = 0;
      for (size_t i = 0; i < nL; ++i)
        for (size_t j = 0; j < nH; ++j) {
          const double e = err[i * nH + j];
          if (!std::isfinite(e) || e <= 0) continue;
          const double u = 1.0 / g.L[i] / e, v = std::pow((double)g.L[i], -a) * std::pow((double)g.H[j], -b) / e;
          s11 += u * u, s12 += u * v, s22 += v * v, r1 += u, r2 += v, ++n;
        }
      if (n < 3) continue;
      double C1, C2;
      const double det = s11 * s22 - s12 * s12;
      C1 = (r1 * s22 - r2 * s12) / det, C2 = (s11 * r2 - s12 * r1) / det;
      if (!(C1 >= 0 && C2 >= 0) || !std::isfinite(C1)) { // one term only
        const double c1 = r1 / s11, c2 = r2 / s22;
        const double q1 = n - 2 * c1 * r1 + c1 * c1 * s11, q2 = n - 2 * c2 * r2 + c2 * c2 * s22;
        if (q1 < q2) C1 = c1, C2 = 0;
        else C1 = 0, C2 = c2;
      }
      const double q = n - 2 * (C1 * r1 + C2 * r2) + C1 * C1 * s11 + 2 * C1 * C2 * s12 + C2 * C2 * s22;
      if (q < best) best = q, f.a = a, f.b = b, f.C1 = C1, f.C2 = C2, f.joint_rms = std::sqrt(std::fmax(q, 0) / n);
    }
  return f;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// 2.5% and 97.5% quantiles.
std::pair<double, double> interval(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.size() < 2) return {NAN, NAN};
  std::sort(v.begin(), v.end());
  return {v[(size_t)(0.025 * (v.size() - 1))], v[(size_t)(0.975 * (v.size() - 1))]};
}

} // namespace

PetscErrorCode StudyAggregate(MPI_Comm comm, const Settings &s, const std::string &dir, PetscInt *missing) {
  PetscMPIInt rank;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  *missing = 0;
  if (rank == 0) {
    const auto cases = StudyCases(s);
    const auto variants = StudyVariants(s);
    const auto families = words(s.study.probes);
    const PetscInt B = 1000; // bootstrap resamples over the seeds
    std::ofstream table(dir + "/study.csv"), fits(dir + "/fits.csv");
    table << "variant,overrides,L,H,seeds,err_x,err_x_lo,err_x_hi,err_p,err_p_lo,err_p_hi\n";
    fits << "variant,overrides,quantity,slope_L,slope_L_lo,slope_L_hi,slope_H,slope_H_lo,slope_H_hi,a,b,C1,C2,joint_rms\n";
    std::vector<ResultArray> arrays;
    std::vector<std::vector<double>> keep; // storage behind the arrays
    keep.reserve(64 * variants.size());
    std::vector<std::pair<std::string, std::string>> attributes;
    for (size_t v = 0; v < variants.size(); ++v) {
      Grid2 g;
      g.L = integers(s.study.L), g.H = integers(s.study.H);
      const size_t nL = g.L.size(), nH = g.H.size();
      g.e2x.assign(nL * nH, {}), g.e2p.assign(nL * nH, {});
      CaseData ref;
      std::string problem;
      for (const StudyCase &c : cases) {
        if (c.variant != (PetscInt)v) continue;
        CaseData data;
        PetscCall(ReadCase(case_path(dir, c.index), families, &data, &problem));
        if (!problem.empty()) {
          PetscCall(PetscPrintf(PETSC_COMM_SELF, "mft study: %s is missing or failed: %s\n", c.describe().c_str(),
                                problem.c_str()));
          ++*missing;
          if (c.reference) { // nothing of this variant can be measured
            PetscCall(PetscPrintf(PETSC_COMM_SELF, "mft study: variant %zu (%s) has no reference: not measured\n", v,
                                  variants[v].c_str()));
            break;
          }
          continue;
        }
        if (c.reference) {
          ref = data;
          continue;
        }
        const size_t i = std::find(g.L.begin(), g.L.end(), c.L) - g.L.begin(),
                     j = std::find(g.H.begin(), g.H.end(), c.H) - g.H.begin();
        if (data.N != ref.N || data.d != ref.d || data.tokens.size() != ref.tokens.size()) {
          PetscCall(PetscPrintf(PETSC_COMM_SELF, "mft study: %s does not match its reference's shapes\n",
                                c.describe().c_str()));
          ++*missing;
          continue;
        }
        g.e2x[i * nH + j].push_back(max_sequence_error(data.tokens, ref.tokens, ref.N, ref.d));
        g.e2p[i * nH + j].push_back(max_sequence_error(data.adjoint, ref.adjoint, ref.N, ref.d));
      }
      std::vector<double> errq[2], loq[2], hiq[2];
      for (int q = 0; q < 2; ++q) {
        const auto &e2 = q ? g.e2p : g.e2x;
        std::vector<double> &err = errq[q], &lo = loq[q], &hi = hiq[q];
        err.resize(nL * nH), lo.resize(nL * nH), hi.resize(nL * nH);
        for (size_t k = 0; k < nL * nH; ++k) err[k] = err_of(e2[k]);
        // Bootstrap over the seeds: errors and fits of resampled seed sets.
        std::vector<std::vector<double>> boot_err(nL * nH);
        std::vector<double> bL, bH;
        Stream r(20261129, 7, v * 2 + q);
        for (PetscInt b = 0; b < B; ++b) {
          std::vector<double> eb(nL * nH);
          for (size_t k = 0; k < nL * nH; ++k) {
            std::vector<double> pick;
            for (size_t t = 0; t < e2[k].size(); ++t) pick.push_back(e2[k][(size_t)(r.uniform() * e2[k].size())]);
            eb[k] = err_of(pick);
            boot_err[k].push_back(eb[k]);
          }
          const Fits fb = fit_grid(g, eb, false);
          bL.push_back(fb.slope_L), bH.push_back(fb.slope_H);
        }
        for (size_t k = 0; k < nL * nH; ++k) std::tie(lo[k], hi[k]) = interval(boot_err[k]);
        const Fits f = fit_grid(g, err);
        const auto ciL = interval(bL), ciH = interval(bH);
        const char *quantity = q ? "adjoint" : "tokens";
        fits << v << ",\"" << variants[v] << "\"," << quantity << "," << num(f.slope_L) << "," << num(ciL.first) << ","
             << num(ciL.second) << "," << num(f.slope_H) << "," << num(ciH.first) << "," << num(ciH.second) << ","
             << num(f.a) << "," << num(f.b) << "," << num(f.C1) << "," << num(f.C2) << "," << num(f.joint_rms) << "\n";
        const std::string prefix = "/v" + std::to_string(v) + "/" + quantity;
        for (auto *a : {&err, &lo, &hi}) keep.push_back(*a);
        arrays.push_back({prefix + "/err", {nL, nH}, keep[keep.size() - 3].data()});
        arrays.push_back({prefix + "/err_lo", {nL, nH}, keep[keep.size() - 2].data()});
        arrays.push_back({prefix + "/err_hi", {nL, nH}, keep[keep.size() - 1].data()});
        for (auto &kv : std::vector<std::pair<std::string, double>>{
                 {"slope_L", f.slope_L}, {"slope_H", f.slope_H}, {"a", f.a}, {"b", f.b}, {"C1", f.C1}, {"C2", f.C2}})
          attributes.emplace_back("v" + std::to_string(v) + "." + quantity + "." + kv.first, num(kv.second));
      }
      for (size_t i = 0; i < nL; ++i)
        for (size_t j = 0; j < nH; ++j) {
          const size_t k = i * nH + j;
          table << v << ",\"" << variants[v] << "\"," << g.L[i] << "," << g.H[j] << "," << g.e2x[k].size();
          for (int q = 0; q < 2; ++q) table << "," << num(errq[q][k]) << "," << num(loq[q][k]) << "," << num(hiq[q][k]);
          table << "\n";
        }
      std::vector<double> Ld(g.L.begin(), g.L.end()), Hd(g.H.begin(), g.H.end());
      keep.push_back(Ld), keep.push_back(Hd);
      arrays.push_back({"/v" + std::to_string(v) + "/L", {nL}, keep[keep.size() - 2].data()});
      arrays.push_back({"/v" + std::to_string(v) + "/H", {nH}, keep[keep.size() - 1].data()});
      attributes.emplace_back("v" + std::to_string(v) + ".overrides", variants[v].empty() ? "(none)" : variants[v]);
    }
    attributes.emplace_back("study.variants_count", std::to_string(variants.size()));
    attributes.emplace_back("study.missing", std::to_string(*missing));
    PetscCall(ResultFileWrite(PETSC_COMM_SELF, s, arrays, attributes, dir + "/study.h5"));
  }
  PetscCallMPI(MPI_Bcast(missing, 1, MPIU_INT, 0, comm));
  PetscFunctionReturn(0);
}

} // namespace mft
