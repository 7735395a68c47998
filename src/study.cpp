// Convergence studies: cases, their runs, and the aggregation into errors and fits.
#include "mft/study.hpp"

#include "mft/error.hpp"
#include "mft/fit.hpp"
#include "mft/h5.hpp"
#include "mft/limit.hpp"
#include "mft/optimizer.hpp"
#include "mft/random.hpp"
#include "mft/runfile.hpp"
#include "mft/checkpoint.hpp"
#include "mft/training.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <list>
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

// The probe sets: each family of study.probes, with study.probe_M sequences
// of its own seed, at each N of study.probe_N (default data.N); named by the
// family, and "<family>_N<n>" when study.probe_N is given.
struct ProbeSet {
  std::string family, name;
  PetscInt N;
  std::uint64_t seed; // data.seed + 7919 (f + 1) for family f, + 104729 N when study.probe_N is given
};

std::vector<ProbeSet> probe_sets(const Settings &s) {
  const auto families = words(s.study.probes);
  std::vector<PetscInt> Ns = integers(s.study.probe_N);
  const bool named = !Ns.empty();
  if (Ns.empty()) Ns.push_back(s.data.N);
  std::vector<ProbeSet> sets;
  for (size_t f = 0; f < families.size(); ++f)
    for (PetscInt N : Ns)
      sets.push_back({families[f], named ? families[f] + "_N" + std::to_string(N) : families[f], N,
                      s.data.seed + 7919 * (f + 1) + (named ? 104729 * (std::uint64_t)N : 0)});
  return sets;
}

std::vector<std::string> probe_names(const Settings &s) {
  std::vector<std::string> names;
  for (const ProbeSet &p : probe_sets(s)) names.push_back(p.name);
  return names;
}

std::vector<std::string> probe_overrides(const Settings &s, const ProbeSet &p) {
  return {"--data.family", p.family, "--data.M", std::to_string(s.study.probe_M), "--data.N", std::to_string(p.N),
          "--data.seed", std::to_string(p.seed), "--data.file", ""};
}

} // namespace

std::string StudyCase::describe() const {
  std::ostringstream os;
  os << "case " << index << " (variant " << variant << ", ";
  if (reference) os << "reference " << reference_index << ")";
  else os << "L=" << L << ", H=" << H << ", seed " << seed << ")";
  return os.str();
}

std::pair<PetscInt, PetscInt> StudyTeacher(const Settings &s) {
  return {s.data.teacher_L ? s.data.teacher_L : s.study.reference_L,
          s.data.teacher_H ? s.data.teacher_H : s.study.reference_H};
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
    for (PetscInt r = 0; r < s.study.references; ++r) {
      StudyCase ref;
      ref.index = (PetscInt)cases.size(), ref.variant = v, ref.reference = true, ref.reference_index = r;
      ref.L = s.study.state == "trained" ? s.study.reference_L : 0;
      ref.H = s.study.state == "trained" ? s.study.reference_H : s.limit.heads;
      cases.push_back(ref);
    }
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

namespace {

// The probe outputs of one case: per probe set, tokens and adjoints.
struct CaseData {
  std::vector<std::vector<double>> tokens, adjoint;
  std::vector<PetscInt> N; // per set, from the arrays' shapes (M, N, d)
  PetscInt d = 0;
};

// Reads a case file (verified); on failure *problem says why.
PetscErrorCode ReadCase(const std::string &path, const std::vector<std::string> &families, const std::string &prefix,
                        CaseData *out, std::string *problem) {
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
        const std::string name = prefix + "/probes/" + families[i] + (q ? "/adjoint" : "/tokens");
        const auto dims = h5::Shape(f, name);
        if (dims.size() != 3) {
          *problem = path + " has no " + name;
          break;
        }
        if (q == 0) out->N.push_back((PetscInt)dims[1]);
        out->d = (PetscInt)dims[2];
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

// Per probe sequence, over all probe sets in order: (1/N) sum_i |a_i - b_i|^2
// (b empty: |a_i|^2).
std::vector<double> sequence_errors(const std::vector<std::vector<double>> &a, const std::vector<std::vector<double>> &b,
                                    const std::vector<PetscInt> &Ns, PetscInt d) {
  std::vector<double> out;
  for (size_t f = 0; f < a.size(); ++f) {
    const PetscInt N = Ns[f];
    const size_t M = a[f].size() / (size_t)(N * d);
    for (size_t m = 0; m < M; ++m) {
      double e = 0;
      for (size_t k = m * N * d; k < (m + 1) * N * d; ++k) {
        const double diff = a[f][k] - (b.empty() ? 0.0 : b[f][k]);
        e += diff * diff;
      }
      out.push_back(e / (double)N);
    }
  }
  return out;
}

// One model case measured against each reference r: the max over probe
// sequences of the raw squared error, of the corrected one (the references'
// floor^2 subtracted per sequence, clipped at 0), and of the corrected one
// relative to the reference's mean square |x_i(1)|^2 on that sequence.
struct Sample {
  std::vector<double> raw, corrected, relative;
  std::vector<double> per_set; // against reference 0: the corrected max over each probe set's sequences
  PetscInt clipped = 0, probes = 0; // against reference 0: sequences whose error fell below the floor
};

Sample measure(const std::vector<std::vector<double>> &model, const std::vector<CaseData> &refs, bool adjoint,
               const std::vector<double> &floor2, const std::vector<PetscInt> &N, PetscInt d) {
  Sample s;
  for (size_t r = 0; r < refs.size(); ++r) {
    const auto &ref = adjoint ? refs[r].adjoint : refs[r].tokens;
    const std::vector<double> e2 = sequence_errors(model, ref, N, d), ms = sequence_errors(ref, {}, N, d);
    double raw = 0, corr = 0, rel = 0;
    size_t set = 0, next = model.empty() ? 0 : model[0].size() / (size_t)(N[0] * d); // first sequence of the next set
    if (r == 0) s.per_set.assign(model.size(), 0.0);
    for (size_t q = 0; q < e2.size(); ++q) {
      while (q >= next && set + 1 < model.size()) ++set, next += model[set].size() / (size_t)(N[set] * d);
      const double c = std::fmax(0.0, e2[q] - floor2[q]);
      if (r == 0) s.per_set[set] = std::fmax(s.per_set[set], c);
      raw = std::fmax(raw, e2[q]), corr = std::fmax(corr, c), rel = std::fmax(rel, ms[q] > 0 ? c / ms[q] : 0.0);
      if (r == 0) s.clipped += e2[q] < floor2[q], ++s.probes;
    }
    s.raw.push_back(raw), s.corrected.push_back(corr), s.relative.push_back(rel);
  }
  return s;
}

struct Grid2 {
  std::vector<PetscInt> L, H;
};

// err = (mean over seeds of the squared errors)^(1/2); NaN without seeds.
double err_of(const std::vector<double> &e2) {
  if (e2.empty()) return NAN;
  double s = 0;
  for (double v : e2) s += v;
  return std::sqrt(s / (double)e2.size());
}

struct Fits {
  double slope_L = NAN, slope_H = NAN, a = NAN, b = NAN, C1 = NAN, C2 = NAN, joint_rms = NAN;
};

// Slopes, and with `joint` the fit of C1/L + C2 L^-a H^-b (a grid search of
// a, b in [0, 1.5] with this step).
Fits fit_grid(const Grid2 &g, const std::vector<double> &err, bool joint = true, double step = 0.01) {
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
  const int n_steps = (int)std::lround(1.5 / step);
  std::vector<double> powL((size_t)(n_steps + 1) * nL), powH((size_t)(n_steps + 1) * nH); // L^-a, H^-b on the grid
  for (int k = 0; k <= n_steps; ++k) {
    for (size_t i = 0; i < nL; ++i) powL[k * nL + i] = std::pow((double)g.L[i], -k * step);
    for (size_t j = 0; j < nH; ++j) powH[k * nH + j] = std::pow((double)g.H[j], -k * step);
  }
  for (int ia = 0; ia <= n_steps; ++ia)
    for (int ib = 0; ib <= n_steps; ++ib) {
      const double a = ia * step, b = ib * step;
      double s11 = 0, s12 = 0, s22 = 0, r1 = 0, r2 = 0;
      int n = 0;
      for (size_t i = 0; i < nL; ++i)
        for (size_t j = 0; j < nH; ++j) {
          const double e = err[i * nH + j];
          if (!std::isfinite(e) || e <= 0) continue;
          const double u = 1.0 / g.L[i] / e, v = powL[ia * nL + i] * powH[ib * nH + j] / e;
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

namespace {

// The probe outputs x(1), p(0) of every family for the model of `model`: at
// `heads` (all of its heads, on every rank), or with heads == nullptr at the
// settings' own draw (at initialisation; the mean-field reference when
// `limit`: the shared ensemble, adaptive depth). *cs: the last probe's settings.
PetscErrorCode Probe(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                     const std::vector<std::string> &model, bool limit, const std::vector<double> *heads,
                     std::vector<LimitResult> *results, Settings *cs) {
  const auto sets = probe_sets(s);
  PetscFunctionBeginUser;
  results->assign(sets.size(), LimitResult());
  for (size_t f = 0; f < sets.size(); ++f) {
    std::vector<std::string> extra = model;
    const auto probes = probe_overrides(s, sets[f]);
    extra.insert(extra.end(), probes.begin(), probes.end());
    PetscCall(CaseSettings(comm, args, extra, cs));
    if (limit) *cs = LimitSettingsFor(*cs);
    cs->scheme.zero_targets = true;
    cs->loss.kind = LossKind::token;
    PetscCall(LimitSolve(comm, *cs, &(*results)[f], heads));
  }
  PetscFunctionReturn(0);
}

// The arrays of probe outputs under `prefix` (/probes/<family>/tokens, adjoint).
void ProbeArrays(const std::string &prefix, const std::vector<std::string> &names,
                 const std::vector<std::vector<double>> &tokens, const std::vector<std::vector<double>> &adjoint,
                 unsigned long long M, const std::vector<PetscInt> &Ns, unsigned long long d,
                 std::vector<ResultArray> *arrays) {
  for (size_t f = 0; f < names.size(); ++f) {
    const std::vector<unsigned long long> dims = {M, (unsigned long long)Ns[f], d};
    arrays->push_back({prefix + "/probes/" + names[f] + "/tokens", dims, tokens[f].data()});
    arrays->push_back({prefix + "/probes/" + names[f] + "/adjoint", dims, adjoint[f].data()});
  }
}

std::vector<PetscInt> set_sizes(const Settings &s) {
  std::vector<PetscInt> Ns;
  for (const ProbeSet &p : probe_sets(s)) Ns.push_back(p.N);
  return Ns;
}

std::string partial_path(const std::string &dir, PetscInt i, PetscInt t) {
  return dir + "/case-" + std::to_string(i) + "-t" + std::to_string(t) + ".h5";
}

} // namespace

std::vector<PetscInt> StudyTimes(const Settings &s) {
  if (s.study.state != "trained") return {0};
  std::vector<PetscInt> t = integers(s.study.times);
  t.push_back(0), t.push_back(s.study.steps);
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  return t;
}

PetscErrorCode StudyRunCase(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                            const StudyCase &c, int *signal) {
  const std::vector<std::string> variant = overrides(StudyVariants(s)[c.variant]);
  const bool trained = s.study.state == "trained";
  const auto families = probe_names(s);
  std::vector<std::string> model = variant;
  // Seeds: models init.seed + 1 .. + seeds; reference r init.seed + 100003 r
  // (reference 0: init.seed itself), far from every model's.
  const std::string seed = std::to_string(s.init.seed + (c.reference ? 100003 * c.reference_index : c.seed));
  if (!c.reference || trained)
    model.insert(model.end(), {"--model.L", std::to_string(c.L), "--model.H", std::to_string(c.H), "--init.seed", seed});
  else
    model.insert(model.end(), {"--init.seed", seed}); // the reference ensemble's own draw
  // One learning problem for every model of a trained study: the targets of
  // one teacher, by default of the reference's shape.
  if (trained) {
    const auto teacher = StudyTeacher(s);
    model.insert(model.end(), {"--data.teacher_L", std::to_string(teacher.first), "--data.teacher_H",
                               std::to_string(teacher.second)});
  }
  Settings cs;
  std::vector<LimitResult> results;
  std::vector<ResultArray> arrays;
  std::vector<std::pair<std::string, std::string>> attributes = {
      {"study.case", std::to_string(c.index)},
      {"study.variant", std::to_string(c.variant)},
      {"study.reference", c.reference ? "true" : "false"},
      {"study.reference_index", std::to_string(c.reference_index)},
      {"study.case_L", std::to_string(c.L)},
      {"study.case_H", std::to_string(c.H)},
      {"study.case_seed", std::to_string(c.seed)}};
  PetscFunctionBeginUser;
  *signal = 0;
  if (!trained) {
    PetscCall(Probe(comm, args, s, model, c.reference, nullptr, &results, &cs));
    std::vector<std::vector<double>> tokens, adjoint;
    for (auto &r : results) tokens.push_back(r.tokens), adjoint.push_back(r.adjoint);
    ProbeArrays("", families, tokens, adjoint, s.study.probe_M, set_sizes(s), cs.model.d, &arrays);
    PetscCall(ResultFileWrite(comm, cs, arrays, attributes, case_path(s.study.dir, c.index)));
    PetscFunctionReturn(0);
  }
  // Trained: the training loop of mft train, resumed from the case's own
  // checkpoints when there are any; the probes at every time of study.times
  // go to a file each (case-<i>-t<step>.h5) as they are reached.
  const std::string checkpoints = s.study.dir + "/case-" + std::to_string(c.index) + "-checkpoints";
  std::vector<std::string> train = model;
  train.insert(train.end(), {"--train.steps", std::to_string(s.study.steps), "--checkpoint.dir", checkpoints});
  Settings ts;
  PetscCall(CaseSettings(comm, args, train, &ts));
  ts.restart = "auto";
  Problem p;
  Optimizer opt;
  History history;
  PetscInt start = 0, saved = -1;
  std::string from;
  PetscCall(ProblemCreate(comm, ts, &p));
  PetscCall(OptimizerCreate(ts.train, p.heads, &opt));
  PetscCall(CheckpointResolve(comm, ts, &from));
  if (!from.empty()) {
    PetscCall(CheckpointCompatible(comm, ts, from));
    PetscCall(RunFileRead(from, &p, &opt, &history, &start));
    saved = start;
    PetscCall(PetscPrintf(comm, "%s: resuming from %s at step %" PetscInt_FMT "\n", c.describe().c_str(), from.c_str(),
                          start));
  }
  const std::vector<PetscInt> times = StudyTimes(s);
  std::vector<double> heads;
  auto record = [&](PetscInt step) -> PetscErrorCode {
    PetscFunctionBeginUser;
    if (!std::binary_search(times.begin(), times.end(), step)) PetscFunctionReturn(0);
    PetscCall(GatherAll(p.heads.theta, &heads));
    PetscCall(Probe(comm, args, s, model, false, &heads, &results, &cs));
    std::vector<std::vector<double>> tokens, adjoint;
    for (auto &r : results) tokens.push_back(r.tokens), adjoint.push_back(r.adjoint);
    std::vector<ResultArray> at;
    ProbeArrays("", families, tokens, adjoint, s.study.probe_M, set_sizes(s), cs.model.d, &at);
    PetscCall(ResultFileWrite(comm, cs, at, attributes, partial_path(s.study.dir, c.index, step)));
    PetscFunctionReturn(0);
  };
  TrainingStop stop;
  PetscCall(TrainLoop(&p, &opt, &history, start, saved, record, &stop));
  // What training did to the heads (printed and kept): |theta_T - theta_0| / |theta_0|, risk reduction.
  double moved = NAN, reduction = NAN;
  if (!stop.signal) {
    Vec theta0;
    PetscReal n0, dn;
    PetscCall(VecDuplicate(p.heads.theta, &theta0));
    PetscCall(HeadsInitialize(&p.heads, ts.init, ts.init.seed, theta0));
    PetscCall(VecNorm(theta0, NORM_2, &n0));
    PetscCall(VecAXPY(theta0, -1.0, p.heads.theta));
    PetscCall(VecNorm(theta0, NORM_2, &dn));
    PetscCall(VecDestroy(&theta0));
    moved = dn / n0;
    ProblemSetBatch(&p, -1);
    PetscCall(ProblemEvaluate(&p, PETSC_FALSE));
    reduction = history.loss.empty() ? NAN : history.loss.front() / p.risk;
  }
  PetscCall(OptimizerDestroy(&opt));
  PetscCall(ProblemDestroy(&p));
  if (stop.signal) {
    *signal = stop.signal;
    PetscFunctionReturn(0);
  }
  // The case file: every recorded time under /times/<step>, the last also under /probes.
  std::list<CaseData> kept;
  std::string problem;
  for (PetscInt t : times) {
    kept.emplace_back();
    PetscCall(ReadCase(partial_path(s.study.dir, c.index, t), families, "", &kept.back(), &problem));
    PetscCheck(problem.empty(), comm, PETSC_ERR_FILE_READ, "%s", problem.c_str());
    const CaseData &d = kept.back();
    ProbeArrays("/times/" + std::to_string(t), families, d.tokens, d.adjoint, s.study.probe_M, d.N, d.d, &arrays);
    if (t == times.back()) ProbeArrays("", families, d.tokens, d.adjoint, s.study.probe_M, d.N, d.d, &arrays);
  }
  attributes.emplace_back("study.times", s.study.times);
  attributes.emplace_back("study.head_change", num(moved));
  attributes.emplace_back("study.risk_reduction", num(reduction));
  PetscCall(PetscPrintf(comm, "%s: heads moved |theta_T - theta_0| / |theta_0| = %.4g, risk reduced %.4gx\n",
                        c.describe().c_str(), moved, reduction));
  PetscCall(ResultFileWrite(comm, cs, arrays, attributes, case_path(s.study.dir, c.index)));
  // The case is done: its partial files and checkpoints go.
  PetscMPIInt rank;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Barrier(comm));
  if (rank == 0) {
    std::error_code ec;
    for (PetscInt t : times) std::filesystem::remove(partial_path(s.study.dir, c.index, t), ec);
    std::filesystem::remove_all(checkpoints, ec);
  }
  PetscFunctionReturn(0);
}

PetscErrorCode StudyAggregate(MPI_Comm comm, const Settings &s, const std::string &dir, PetscInt *missing) {
  PetscMPIInt rank;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  *missing = 0;
  if (rank == 0) {
    const auto cases = StudyCases(s);
    const auto variants = StudyVariants(s);
    const auto families = probe_names(s);
    const PetscInt B = 1000; // bootstrap resamples over the seeds and the references
    const std::vector<PetscInt> times = StudyTimes(s);
    std::ofstream table(dir + "/study.csv"), fits(dir + "/fits.csv"), sets_table(dir + "/probes.csv");
    sets_table << "variant,overrides,L,H,time,probe_set,N,err_corrected_x,err_corrected_p,attains_max_x\n";
    table << "variant,overrides,L,H,seeds,err_x,err_x_lo,err_x_hi,err_p,err_p_lo,err_p_hi,time,err_floor_x,"
             "err_corrected_x,err_corrected_x_lo,err_corrected_x_hi,err_floor_p,err_corrected_p,err_corrected_p_lo,"
             "err_corrected_p_hi,clipped_x,clipped_p,err_coord_x,err_rel_x,references\n";
    fits << "variant,overrides,quantity,slope_L,slope_L_lo,slope_L_hi,slope_H,slope_H_lo,slope_H_hi,a,b,C1,C2,joint_rms,"
            "time,corrected,a_lo,a_hi,b_lo,b_hi\n";
    std::vector<ResultArray> arrays;
    std::list<std::vector<double>> keep; // storage behind the arrays
    std::vector<std::pair<std::string, std::string>> attributes;
    // Every recorded time under /t<step> and t<step>.*; the last one also
    // without the prefix (the state at the end of training, or at initialisation).
    for (const PetscInt time : times) {
    const bool last = time == times.back();
    const std::string at = "/t" + std::to_string(time), at_key = "t" + std::to_string(time) + ".";
    const std::string prefix_in = s.study.state == "trained" ? "/times/" + std::to_string(time) : "";
    auto store = [&](const std::string &name, std::vector<unsigned long long> dims, std::vector<double> values) {
      keep.push_back(std::move(values));
      arrays.push_back({at + name, dims, keep.back().data()});
      if (last) arrays.push_back({name, dims, keep.back().data()});
    };
    auto attribute = [&](const std::string &key, const std::string &value) {
      attributes.emplace_back(at_key + key, value);
      if (last) attributes.emplace_back(key, value);
    };
    for (size_t v = 0; v < variants.size(); ++v) {
      Grid2 g;
      g.L = integers(s.study.L), g.H = integers(s.study.H);
      const size_t nL = g.L.size(), nH = g.H.size();
      std::vector<CaseData> refs;
  
      std::vector<std::vector<Sample>> samples[2]; // per quantity, per cell: the seeds
      samples[0].assign(nL * nH, {}), samples[1].assign(nL * nH, {});
      std::vector<std::pair<size_t, CaseData>> found;
      std::string problem;
      for (const StudyCase &c : cases) {
        if (c.variant != (PetscInt)v) continue;
        CaseData data;
        PetscCall(ReadCase(case_path(dir, c.index), families, prefix_in, &data, &problem));
        if (!problem.empty()) {
          if (last) { // named once
            PetscCall(PetscPrintf(PETSC_COMM_SELF, "mft study: %s is missing or failed: %s\n", c.describe().c_str(),
                                  problem.c_str()));
            ++*missing;
          }
          continue;
        }
        if (c.reference) {
          if (!refs.empty() && (data.N != refs[0].N || data.d != refs[0].d || data.tokens.size() != refs[0].tokens.size())) {
            if (last) PetscCall(PetscPrintf(PETSC_COMM_SELF, "mft study: %s does not match reference 0's shapes\n",
                                            c.describe().c_str()));
            *missing += last;
            continue;
          }
          refs.push_back(data);
          continue;
        }
        if (refs.empty()) continue; // named below
        const size_t i = std::find(g.L.begin(), g.L.end(), c.L) - g.L.begin(),
                     j = std::find(g.H.begin(), g.H.end(), c.H) - g.H.begin();
        if (data.N != refs[0].N || data.d != refs[0].d || data.tokens.size() != refs[0].tokens.size()) {
          if (last) PetscCall(PetscPrintf(PETSC_COMM_SELF, "mft study: %s does not match its reference's shapes\n",
                                          c.describe().c_str()));
          *missing += last;
          continue;
        }
        found.emplace_back(i * nH + j, std::move(data));
      }
      if (refs.empty()) { // nothing of this variant can be measured
        if (last) PetscCall(PetscPrintf(PETSC_COMM_SELF, "mft study: variant %zu (%s) has no reference: not measured\n", v,
                              variants[v].c_str()));
        continue;
      }
      const std::vector<PetscInt> N = refs[0].N;
      const PetscInt d = refs[0].d, R = (PetscInt)refs.size();
      // The references' own squared error per probe sequence (0 with one reference).
      std::vector<double> floor2[2];
      for (int q = 0; q < 2; ++q) {
        floor2[q].assign(sequence_errors(refs[0].tokens, {}, N, d).size(), 0.0);
        PetscInt pairs = 0;
        for (PetscInt a = 0; a < R; ++a)
          for (PetscInt b = a + 1; b < R; ++b, ++pairs) {
            const auto e2 = sequence_errors(q ? refs[a].adjoint : refs[a].tokens, q ? refs[b].adjoint : refs[b].tokens, N, d);
            for (size_t k = 0; k < e2.size(); ++k) floor2[q][k] += 0.5 * e2[k];
          }
        for (double &f : floor2[q]) f /= pairs ? (double)pairs : 1.0;
      }
      for (auto &[cell, data] : found)
        for (int q = 0; q < 2; ++q)
          samples[q][cell].push_back(measure(q ? data.adjoint : data.tokens, refs, q == 1, floor2[q], N, d));

      // Point estimates against reference 0, and bootstrap intervals that
      // resample the seeds of every cell and the reference compared with.
      std::vector<double> err[2][2], lo[2][2], hi[2][2]; // [quantity][corrected]
      std::vector<double> rel(nL * nH), clipped[2];
      for (int q = 0; q < 2; ++q) {
        clipped[q].assign(nL * nH, NAN);
        for (int c = 0; c < 2; ++c) err[q][c].assign(nL * nH, NAN), lo[q][c] = hi[q][c] = err[q][c];
        for (size_t k = 0; k < nL * nH; ++k) {
          std::vector<double> e2[2], r2;
          PetscInt clip = 0, probes = 0;
          for (const Sample &x : samples[q][k])
            e2[0].push_back(x.raw[0]), e2[1].push_back(x.corrected[0]), r2.push_back(x.relative[0]),
                clip += x.clipped, probes += x.probes;
          for (int c = 0; c < 2; ++c) err[q][c][k] = err_of(e2[c]);
          if (q == 0) rel[k] = err_of(r2);
          if (probes) clipped[q][k] = (double)clip / (double)probes;
        }
        Stream r(20261129, 7, v * 2 + q);
        std::vector<std::vector<double>> boot[2];
        std::vector<double> bL[2], bH[2], ba[2], bb[2];
        boot[0].assign(nL * nH, {}), boot[1].assign(nL * nH, {});
        for (PetscInt b = 0; b < B; ++b) {
          const size_t ref = R > 1 ? std::min((size_t)(r.uniform() * R), (size_t)R - 1) : 0;
          std::vector<double> eb[2] = {std::vector<double>(nL * nH), std::vector<double>(nL * nH)};
          for (size_t k = 0; k < nL * nH; ++k) {
            const auto &seeds = samples[q][k];
            std::vector<double> pick[2];
            for (size_t t = 0; t < seeds.size(); ++t) {
              const Sample &x = seeds[(size_t)(r.uniform() * seeds.size())];
              pick[0].push_back(x.raw[ref]), pick[1].push_back(x.corrected[ref]);
            }
            for (int c = 0; c < 2; ++c) eb[c][k] = err_of(pick[c]), boot[c][k].push_back(eb[c][k]);
          }
          for (int c = 0; c < 2; ++c) { // the joint fit on a coarser grid: 1000 of them
            const Fits fb = fit_grid(g, eb[c], true, 0.02);
            bL[c].push_back(fb.slope_L), bH[c].push_back(fb.slope_H), ba[c].push_back(fb.a), bb[c].push_back(fb.b);
          }
        }
        const char *quantity = q ? "adjoint" : "tokens";
        const std::string prefix = "/v" + std::to_string(v) + "/" + quantity;
        for (int c = 0; c < 2; ++c) {
          for (size_t k = 0; k < nL * nH; ++k) std::tie(lo[q][c][k], hi[q][c][k]) = interval(boot[c][k]);
          const Fits f = fit_grid(g, err[q][c]);
          const auto ciL = interval(bL[c]), ciH = interval(bH[c]), cia = interval(ba[c]), cib = interval(bb[c]);
          fits << v << ",\"" << variants[v] << "\"," << quantity << "," << num(f.slope_L) << "," << num(ciL.first)
               << "," << num(ciL.second) << "," << num(f.slope_H) << "," << num(ciH.first) << "," << num(ciH.second)
               << "," << num(f.a) << "," << num(f.b) << "," << num(f.C1) << "," << num(f.C2) << "," << num(f.joint_rms)
               << "," << time << "," << c << "," << num(cia.first) << "," << num(cia.second) << "," << num(cib.first)
               << "," << num(cib.second) << "\n";
          const std::string tag = c ? "_corrected" : "";
          store(prefix + "/err" + tag, {nL, nH}, err[q][c]);
          store(prefix + "/err" + tag + "_lo", {nL, nH}, lo[q][c]);
          store(prefix + "/err" + tag + "_hi", {nL, nH}, hi[q][c]);
          const std::string key = "v" + std::to_string(v) + "." + quantity + (c ? ".corrected." : ".");
          for (auto &kv : std::vector<std::pair<std::string, double>>{{"slope_L", f.slope_L},
                                                                      {"slope_L_lo", ciL.first},
                                                                      {"slope_L_hi", ciL.second},
                                                                      {"slope_H", f.slope_H},
                                                                      {"slope_H_lo", ciH.first},
                                                                      {"slope_H_hi", ciH.second},
                                                                      {"a", f.a},
                                                                      {"b", f.b},
                                                                      {"a_lo", cia.first},
                                                                      {"a_hi", cia.second},
                                                                      {"b_lo", cib.first},
                                                                      {"b_hi", cib.second},
                                                                      {"C1", f.C1},
                                                                      {"C2", f.C2}})
            attribute(key + kv.first, num(kv.second));
        }
        const double fl = std::sqrt(*std::max_element(floor2[q].begin(), floor2[q].end()));
        store(prefix + "/err_floor", {1}, {fl});
        attribute("v" + std::to_string(v) + "." + quantity + ".floor", num(fl));
      }
      // Per probe set (family and N): the corrected err over its sequences alone,
      // and how often (over seeds) it attains the max over all sets.
      for (size_t k = 0; k < nL * nH; ++k)
        for (size_t f = 0; f < families.size(); ++f) {
          std::vector<double> e2[2];
          PetscInt attains = 0;
          for (int q = 0; q < 2; ++q)
            for (const Sample &x : samples[q][k]) {
              e2[q].push_back(x.per_set[f]);
              if (q == 0) attains += x.per_set[f] >= *std::max_element(x.per_set.begin(), x.per_set.end());
            }
          if (e2[0].empty()) continue;
          sets_table << v << ",\"" << variants[v] << "\"," << g.L[k / nH] << "," << g.H[k % nH] << "," << time << ","
                     << families[f] << "," << N[f] << "," << num(err_of(e2[0])) << "," << num(err_of(e2[1])) << ","
                     << num((double)attains / (double)e2[0].size()) << "\n";
        }
      const double floor_x = std::sqrt(*std::max_element(floor2[0].begin(), floor2[0].end())),
                   floor_p = std::sqrt(*std::max_element(floor2[1].begin(), floor2[1].end()));
      for (size_t i = 0; i < nL; ++i)
        for (size_t j = 0; j < nH; ++j) {
          const size_t k = i * nH + j;
          table << v << ",\"" << variants[v] << "\"," << g.L[i] << "," << g.H[j] << "," << samples[0][k].size();
          for (int q = 0; q < 2; ++q) table << "," << num(err[q][0][k]) << "," << num(lo[q][0][k]) << "," << num(hi[q][0][k]);
          table << "," << time << "," << num(floor_x) << "," << num(err[0][1][k]) << "," << num(lo[0][1][k]) << ","
                << num(hi[0][1][k]) << "," << num(floor_p) << "," << num(err[1][1][k]) << "," << num(lo[1][1][k]) << ","
                << num(hi[1][1][k]) << "," << num(clipped[0][k]) << "," << num(clipped[1][k]) << ","
                << num(err[0][1][k] / std::sqrt((double)d)) << "," << num(rel[k]) << "," << R << "\n";
        }
      store("/v" + std::to_string(v) + "/L", {nL}, std::vector<double>(g.L.begin(), g.L.end()));
      store("/v" + std::to_string(v) + "/H", {nH}, std::vector<double>(g.H.begin(), g.H.end()));
      attribute("v" + std::to_string(v) + ".overrides", variants[v].empty() ? "(none)" : variants[v]);
      attribute("v" + std::to_string(v) + ".references", std::to_string(R));
    }
    }
    std::string listed;
    for (PetscInt t : times) listed += (listed.empty() ? "" : " ") + std::to_string(t);
    attributes.emplace_back("study.recorded_times", listed);
    attributes.emplace_back("study.variants_count", std::to_string(variants.size()));
    attributes.emplace_back("study.missing", std::to_string(*missing));
    PetscCall(ResultFileWrite(PETSC_COMM_SELF, s, arrays, attributes, dir + "/study.h5"));
  }
  PetscCallMPI(MPI_Bcast(missing, 1, MPIU_INT, 0, comm));
  PetscFunctionReturn(0);
}

} // namespace mft
