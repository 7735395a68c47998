// Trained studies in law (study_in_law_trained.hpp): every set of models trained as
// one ensemble, their probes recorded at every time, the sets compared in
// law, the tables.
#include "mft/studies/study_in_law_trained.hpp"

#include "mft/files/report.hpp"
#include "mft/files/runfile.hpp"
#include "mft/files/training.hpp"
#include "mft/flow/ensemble.hpp"
#include "mft/flow/samples.hpp"
#include "mft/statistics/power_fit.hpp"
#include "mft/statistics/two_sample.hpp"
#include "mft/studies/study_in_law.hpp"
#include "mft/layout/grid.hpp"
#include "mft/layout/h5.hpp"
#include "mft/settings/error.hpp"
#include "mft/studies/study.hpp"
#include "mft/studies/study_cases.hpp"
#include "mft/studies/study_tables.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace mft {

using namespace study;

namespace {

// A set's seeds: init.seed + CellSeeds / 2 (below 2^63, so that mft train
// --init.seed takes any of them), the references' this far above, fewer
// than this many models a set.
constexpr std::uint64_t kReferenceSeeds = 5000000;

// One set of models: a cell of a variant, or its references.
struct ModelSet {
  size_t variant = 0;
  PetscInt L = 0, H = 0, models = 0;
  std::string k; // its head dimension when set by study.k or study.reference_k ("" the variant's)
  bool reference = false;
  std::uint64_t first = 0;          // model i's seed: first + i
  std::vector<std::string> options; // the model's: its variant's, L, H, k, the teacher
  std::string name;                 // its files' stem
};

// The cell L x H (x k) of variant v, or (reference) its references.
ModelSet SetOf(const Settings &s, size_t v, PetscInt L, PetscInt H, const std::string &k, bool reference) {
  ModelSet m;
  m.variant = v, m.L = L, m.H = H, m.k = k, m.reference = reference;
  m.models = reference ? s.study.references : s.study.seeds;
  const std::vector<std::string> variant = overrides(StudyVariants(s)[v]);
  for (size_t i = 0; i + 1 < variant.size(); i += 2) // the set's k in place of the variant's
    if (k.empty() || variant[i] != "--model.k") m.options.insert(m.options.end(), {variant[i], variant[i + 1]});
  if (!k.empty()) m.options.insert(m.options.end(), {"--model.k", k});
  const auto shape = StudyShapeOptions(s, L, H);
  m.options.insert(m.options.end(), shape.begin(), shape.end());
  const auto teacher = StudyTeacherOptions(s);
  m.options.insert(m.options.end(), teacher.begin(), teacher.end());
  const PetscInt kk = k.empty() ? 0 : k == "inf" ? -1 : std::stoll(k);
  m.first = s.init.seed + CellSeeds(v, L, H, kk) / 2 + (reference ? kReferenceSeeds : 0);
  m.name = (reference ? "reference-v" : "trained-v") + std::to_string(v) + "-L" + std::to_string(L) + "-H" +
           std::to_string(H) + (k.empty() ? "" : "-k" + k);
  return m;
}

// Variant v's references: those of the first variant whose references run
// the same options (variants over model.k with study.reference_k share them).
ModelSet ReferencesOf(const Settings &s, size_t v) {
  auto own = [&](size_t u) { return SetOf(s, u, s.study.reference_L, s.study.reference_H, s.study.reference_k, true); };
  const ModelSet mine = own(v);
  for (size_t u = 0; u < v; ++u)
    if (own(u).options == mine.options) return own(u);
  return mine;
}

// Variant v's cells: L x H, times study.k's head dimensions when given.
std::vector<ModelSet> CellsOf(const Settings &s, size_t v) {
  std::vector<ModelSet> cells;
  std::vector<std::string> ks = {""};
  if (!s.study.k.empty()) {
    ks.clear();
    for (PetscInt k : integers(s.study.k)) ks.push_back(std::to_string(k));
  }
  for (PetscInt L : integers(s.study.L))
    for (PetscInt H : integers(s.study.H))
      for (const std::string &k : ks) cells.push_back(SetOf(s, v, L, H, k, false));
  return cells;
}

std::string TimePath(const Settings &s, const ModelSet &m, PetscInt t) {
  return s.study.dir + "/" + m.name + "-t" + std::to_string(t) + ".h5";
}

// The set's training settings and the identity its files record.
PetscErrorCode SetSettings(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, const ModelSet &m,
                           Settings *ts, std::string *identity) {
  std::vector<std::string> train = m.options;
  train.insert(train.end(), {"--train.steps", std::to_string(s.study.steps), "--checkpoint.dir",
                             s.study.dir + "/" + m.name + "-checkpoints"});
  PetscFunctionBeginUser;
  PetscCall(CaseSettings(comm, args, train, ts));
  ts->restart = "auto";
  *identity = case_identity(*ts) + "ensemble.models=" + std::to_string(m.models) +
              "\nensemble.first_seed=" + std::to_string(m.first) + "\n";
  PetscFunctionReturn(0);
}

// Whether every time's file of the set is there, verified, of this identity.
PetscErrorCode SetDone(MPI_Comm comm, const Settings &s, const ModelSet &m, const std::string &identity, bool *done) {
  PetscFunctionBeginUser;
  *done = true;
  for (PetscInt t : StudyTimes(s)) {
    if (!*done) break;
    std::string problem;
    PetscMPIInt exists = 0, rank;
    PetscCallMPI(MPI_Comm_rank(comm, &rank));
    if (rank == 0) exists = std::filesystem::exists(TimePath(s, m, t));
    PetscCallMPI(MPI_Bcast(&exists, 1, MPI_INT, 0, comm));
    if (!exists) {
      *done = false;
      break;
    }
    PetscCall(ReadVerified(
        TimePath(s, m, t),
        [&](h5::File &f) -> PetscErrorCode {
          std::string id;
          if (!h5::ReadAttribute(f, "study.case_identity", &id) || id != identity) problem = "other settings";
          return 0;
        },
        &problem, comm));
    *done = problem.empty();
  }
  PetscFunctionReturn(0);
}

// Per model of the block: |theta - theta0| / |theta0| over its heads.
PetscErrorCode HeadChange(const Ensemble &e, Vec theta0, std::vector<double> *change) {
  const Heads &hd = e.p.heads;
  const PetscInt H = hd.H / hd.seeds, n = hd.shape.size;
  const PetscScalar *a, *b;
  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(hd.theta, &a));
  PetscCall(VecGetArrayRead(theta0, &b));
  change->assign((size_t)e.models(), 0.0);
  for (PetscInt s = 0; s < e.models(); ++s) {
    double moved = 0, size = 0;
    for (PetscInt l = 0; l < hd.L; ++l)
      for (PetscInt h = 0; h < H; ++h)
        for (PetscInt i = EnsembleHead(e, s, l, h) * n, end = i + n; i < end; ++i)
          moved += (a[i] - b[i]) * (a[i] - b[i]), size += b[i] * b[i];
    (*change)[(size_t)s] = std::sqrt(moved / size);
  }
  PetscCall(VecRestoreArrayRead(theta0, &b));
  PetscCall(VecRestoreArrayRead(hd.theta, &a));
  PetscFunctionReturn(0);
}

// The set's file of time t: its models' x(1) on every probe set, their
// divergence so far, head change and full-batch risk.
PetscErrorCode RecordTime(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, const ModelSet &m,
                          const std::string &identity, Ensemble *e, Vec theta0, PetscInt t) {
  const std::vector<std::string> names = probe_names(s);
  std::vector<std::vector<double>> x(names.size()), inputs(names.size());
  std::vector<ResultArray> arrays;
  std::vector<double> change, diverged(e->diverged.begin(), e->diverged.end());
  PetscInt live;
  Settings cs;
  PetscFunctionBeginUser;
  EnsembleSetBatch(e, -1);
  PetscCall(EnsembleEvaluate(e, t, false, &live));
  PetscCall(HeadChange(*e, theta0, &change));
  const unsigned long long S = (unsigned long long)e->S;
  for (size_t k = 0; k < names.size(); ++k) {
    PetscCall(ProbeSettings(comm, args, s, m.options, k, &cs));
    PetscCall(EnsembleProbe(*e, cs, &x[k], &inputs[k]));
    const unsigned long long M = cs.data.M, N = cs.data.N, d = cs.model.d;
    arrays.push_back({"/probes/" + names[k] + "/inputs", {M, N, d}, inputs[k].data()});
    arrays.push_back({"/probes/" + names[k] + "/samples", {S, M, N, d}, x[k].data(), e->block});
  }
  std::vector<double> risk = e->p.risks;
  for (size_t i = 0; i < diverged.size(); ++i) diverged[i] = (double)e->diverged[i];
  arrays.push_back({"/models/diverged", {S}, diverged.data(), e->block});
  arrays.push_back({"/models/head_change", {S}, change.data(), e->block});
  arrays.push_back({"/models/risk", {S}, risk.data(), e->block});
  PetscCall(ResultFileWrite(comm, cs, arrays,
                            {{"study.case_identity", identity}, {"study.time", std::to_string(t)},
                             {"ensemble.models", std::to_string(m.models)}, {"ensemble.first_seed", std::to_string(m.first)}},
                            TimePath(s, m, t)));
  PetscFunctionReturn(0);
}

// Trains the set as one ensemble, resumed from its checkpoints, recording
// every time of the study; *signal as the training loop sets it.
PetscErrorCode TrainSet(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, const ModelSet &m,
                        int *signal) {
  Settings ts;
  std::string identity;
  Ensemble e;
  Optimizer opt;
  History h;
  TrainingStop stop;
  Vec theta0;
  PetscInt start = 0, saved = -1;
  bool done;
  PetscFunctionBeginUser;
  *signal = 0;
  PetscCall(SetSettings(comm, args, s, m, &ts, &identity));
  PetscCall(SetDone(comm, s, m, identity, &done));
  if (done) PetscFunctionReturn(0);
  const double t0 = seconds();
  PetscCall(EnsembleCreate(comm, ts, m.models, m.first, &e));
  PetscCall(OptimizerCreate(e.p.settings, e.p.heads, &opt, &e.p.neurons));
  PetscCall(EnsembleTrainResume(&e, &opt, &h, m.name + ": ", &start, &saved));
  std::vector<std::uint64_t> seeds;
  for (PetscInt i = e.block.begin; i < e.block.end; ++i) seeds.push_back(m.first + (std::uint64_t)i);
  PetscCall(VecDuplicate(e.p.heads.theta, &theta0));
  PetscCall(HeadsInitializeModels(&e.p.heads, ts.init, seeds, theta0));
  const std::vector<PetscInt> times = StudyTimes(s);
  auto record = [&](PetscInt step) -> PetscErrorCode {
    if (!std::binary_search(times.begin(), times.end(), step)) return 0;
    return RecordTime(comm, args, s, m, identity, &e, theta0, step);
  };
  PetscCall(EnsembleTrainLoop(&e, &opt, &h, start, saved, record, &stop));
  *signal = stop.signal;
  PetscInt diverged = 0;
  for (PetscInt d : e.diverged) diverged += d >= 0;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &diverged, 1, MPIU_INT, MPI_SUM, comm));
  PetscCall(PetscPrintf(comm, "%s: %" PetscInt_FMT " models trained %" PetscInt_FMT " steps in %.1f s, %" PetscInt_FMT
                        " diverged%s\n", m.name.c_str(), m.models, s.study.steps, seconds() - t0, diverged,
                        stop.signal ? " (stopped by a signal: rerun to resume)" : ""));
  PetscCall(VecDestroy(&theta0));
  PetscCall(OptimizerDestroy(&opt));
  PetscCall(EnsembleDestroy(&e));
  PetscMPIInt rank;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  std::error_code ec;
  if (!stop.signal && rank == 0) std::filesystem::remove_all(s.study.dir + "/" + m.name + "-checkpoints", ec);
  PetscFunctionReturn(0);
}

// A set's models at time t that never diverged, each rank its block's: one
// Samples per probe set, and the models' and survivors' counts.
struct SetLaw {
  std::vector<Samples> x;
  PetscInt models = 0, survivors = 0;
};

PetscErrorCode ReadSet(MPI_Comm comm, const Settings &s, const ModelSet &m, PetscInt t, SetLaw *out) {
  const std::vector<std::string> names = probe_names(s);
  PetscMPIInt size, rank;
  std::string problem;
  std::vector<double> diverged;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  const Range block = split(m.models, size, rank);
  diverged.resize((size_t)block.size());
  auto last = [&](h5::File &f) { // a model that diverged at any time is left out at every time
    return h5::ReadRows(f, "/models/diverged", {(hsize_t)m.models}, 1, block, diverged.data());
  };
  PetscCall(ReadVerified(TimePath(s, m, StudyTimes(s).back()), last, &problem, comm));
  out->x.assign(names.size(), Samples());
  auto read = [&](h5::File &f) -> PetscErrorCode {
    PetscFunctionBeginUser;
    for (size_t k = 0; k < names.size(); ++k) {
      Samples &x = out->x[k];
      const auto dims = h5::Shape(f, "/probes/" + names[k] + "/samples");
      PetscCheck(dims.size() == 4 && dims[0] == (hsize_t)m.models, comm, PETSC_ERR_FILE_UNEXPECTED,
                 "%s holds no samples of %s", TimePath(s, m, t).c_str(), names[k].c_str());
      x.M = (PetscInt)dims[1], x.N = (PetscInt)dims[2], x.d = (PetscInt)dims[3];
      const size_t n = (size_t)(x.M * x.N * x.d);
      std::vector<double> rows((size_t)block.size() * n);
      PetscCall(h5::ReadRows(f, "/probes/" + names[k] + "/samples", dims, 1, block, rows.data()));
      for (PetscInt i = 0; i < block.size(); ++i)
        if (diverged[(size_t)i] < 0) x.tokens.insert(x.tokens.end(), rows.begin() + (std::ptrdiff_t)(i * n),
                                                     rows.begin() + (std::ptrdiff_t)((i + 1) * n));
    }
    PetscFunctionReturn(0);
  };
  if (problem.empty()) PetscCall(ReadVerified(TimePath(s, m, t), read, &problem, comm));
  PetscCheck(problem.empty(), comm, PETSC_ERR_FILE_READ, "%s: %s", TimePath(s, m, t).c_str(), problem.c_str());
  PetscInt mine = (PetscInt)std::count_if(diverged.begin(), diverged.end(), [](double d) { return d < 0; });
  out->models = m.models;
  PetscCallMPI(MPI_Allreduce(&mine, &out->survivors, 1, MPIU_INT, MPI_SUM, comm));
  for (Samples &x : out->x) x.S = out->survivors, x.block = Range{0, mine};
  PetscFunctionReturn(0);
}

// One cell at one time against its references.
struct CellAt {
  ModelSet cell;
  PetscInt time = 0, models = 0, survivors = 0, references = 0, reference_survivors = 0;
  LawGap law;
  double reference_sampling = 0;
};

PetscErrorCode CompareAt(MPI_Comm comm, const Settings &s, const ModelSet &cell, const SetLaw &refs, PetscInt t,
                         CellAt *c) {
  const std::vector<std::string> names = probe_names(s);
  SetLaw x;
  std::vector<Law> laws;
  PetscFunctionBeginUser;
  PetscCall(ReadSet(comm, s, cell, t, &x));
  for (const Samples &y : refs.x) laws.push_back({SamplesSet(y)});
  PetscCall(LawGapOf(comm, names, SamplesBlocks(x.x), laws, SamplesBlocks(refs.x), &c->law));
  c->cell = cell, c->time = t, c->models = x.models, c->survivors = x.survivors;
  c->references = refs.models, c->reference_survivors = refs.survivors;
  for (const Samples &y : refs.x) {
    std::vector<double> mean, se;
    PetscCall(GramOf(comm, {SamplesSet(y)}, y.M, y.N, y.d, &mean, &se));
    for (size_t e = 0; e < se.size(); ++e) se[e] += mean[e];
    c->reference_sampling = std::max(c->reference_sampling, GramRelative(se, mean, y.M, y.N));
  }
  PetscFunctionReturn(0);
}

std::string RowOf(const CellAt &c) {
  const GramGap &g = c.law.gap;
  std::vector<std::string> row = {std::to_string(c.cell.variant), std::to_string(c.cell.L), std::to_string(c.cell.H),
                                  c.cell.k, std::to_string(c.time), std::to_string(c.models),
                                  std::to_string(c.models - c.survivors), std::to_string(c.references),
                                  std::to_string(c.references - c.reference_survivors), num(g.err), num(g.lo),
                                  num(g.hi), num(g.floor), g.resolved ? "true" : "false", quoted(c.law.probe),
                                  std::to_string(g.sequence)};
  for (const std::string &e : EnergyCells(c.law)) row.push_back(e);
  row.push_back(num(c.reference_sampling));
  return csv(row);
}

// law_fits.csv's row, and the line that says it.
PetscErrorCode FitRow(MPI_Comm comm, const CellAt &c, const std::string &over, const PowerFit &f,
                      std::vector<std::string> *fits) {
  PetscFunctionBeginUser;
  const std::string L = over == "k" ? std::to_string(c.cell.L) : "", H = over == "k" ? std::to_string(c.cell.H) : "";
  const bool p = f.cells > 0 && f.fits_p, q = f.cells > 0 && f.fits_q; // (no fit: empty)
  std::vector<std::string> row = {std::to_string(c.cell.variant), std::to_string(c.time), over, L, H,
                                  std::to_string(f.cells), f.cells ? num(f.C) : "", p ? num(f.p) : "",
                                  p ? num(f.p_lo) : "", p ? num(f.p_hi) : "", q ? num(f.q) : "", q ? num(f.q_lo) : "",
                                  q ? num(f.q_hi) : ""};
  for (const std::string &m : PowerFitMisfit(f)) row.push_back(m);
  fits->push_back(csv(row));
  if (f.cells == 0) {
    PetscCall(PetscPrintf(comm, "variant %zu t=%" PetscInt_FMT ": too few resolved cells to fit%s\n", c.cell.variant,
                          c.time, over == "k" ? " err_law = C k^-r" : " err_law = C L^-p H^-q"));
    PetscFunctionReturn(0);
  }
  char text[256];
  if (over == "k")
    snprintf(text, sizeof text, "err_law = %.3g k^-r at L=%" PetscInt_FMT " H=%" PetscInt_FMT ": r = %.3f [%.3f, %.3f]",
             f.C, c.cell.L, c.cell.H, f.q, f.q_lo, f.q_hi);
  else
    snprintf(text, sizeof text, "err_law = %.3g L^-p H^-q: p = %s, q = %s", f.C,
             f.fits_p ? (num(f.p) + " [" + num(f.p_lo) + ", " + num(f.p_hi) + "]").c_str() : "(L fixed)",
             f.fits_q ? (num(f.q) + " [" + num(f.q_lo) + ", " + num(f.q_hi) + "]").c_str() : "(H fixed)");
  PetscCall(PetscPrintf(comm, "variant %zu t=%" PetscInt_FMT ": %s over %" PetscInt_FMT " resolved cells; %s\n",
                        c.cell.variant, c.time, text, f.cells,
                        PowerFitVerdict(f, "p", over == "k" ? "r" : "q").c_str()));
  PetscFunctionReturn(0);
}

// The fits of one variant at one time: in k at each (L, H) with study.k,
// else in L and H.
PetscErrorCode Fits(MPI_Comm comm, const Settings &s, const SetLaw &refs, const std::vector<CellAt> &cells,
                    std::vector<std::string> *fits) {
  std::vector<Law> shared;
  for (const Samples &y : refs.x) shared.push_back({SamplesSet(y)});
  PetscFunctionBeginUser;
  std::vector<std::pair<PetscInt, PetscInt>> groups;
  for (const CellAt &c : cells)
    if (std::find(groups.begin(), groups.end(), std::make_pair(c.cell.L, c.cell.H)) == groups.end())
      groups.emplace_back(c.cell.L, c.cell.H);
  if (s.study.k.empty()) groups = {{0, 0}};
  for (auto [L, H] : groups) {
    std::vector<double> a, b;
    std::vector<LawGap> gaps;
    const CellAt *one = nullptr;
    for (const CellAt &c : cells) {
      if (L && (c.cell.L != L || c.cell.H != H)) continue;
      one = &c;
      a.push_back(L ? 1.0 : (double)c.cell.L), b.push_back(L ? std::stod(c.cell.k) : (double)c.cell.H);
      gaps.push_back(c.law);
    }
    LawFitPoints x;
    PetscCall(LawFitPointsOf(comm, gaps, shared, &x));
    // The references' sizes, where the fit's law runs through them (a gap
    // to a finite reference closes at it: power_fit.hpp).
    const ModelSet ref = ReferencesOf(s, one->cell.variant);
    const bool same_shape = ref.L == one->cell.L && ref.H == one->cell.H;
    const double k_ref = ref.k == "inf" ? INFINITY : ref.k.empty() ? (s.model.infinite_head ? INFINITY : (double)s.model.k) : std::stod(ref.k);
    const double a_ref = L ? 1.0 : (double)ref.L, b_ref = L ? (same_shape ? k_ref : INFINITY) : (double)ref.H;
    const PowerFit f = PowerFitOf(a, b, x.err_power, x.err_se, x.resolved, x.rho, x.widen, a_ref, b_ref);
    PetscCall(FitRow(comm, *one, L ? "k" : "L H", f, fits));
  }
  PetscFunctionReturn(0);
}

// Every set of the study in its order (each variant's references, unless
// shared, then its cells).
std::vector<ModelSet> AllSets(const Settings &s) {
  std::vector<ModelSet> sets;
  for (size_t v = 0; v < StudyVariants(s).size(); ++v) {
    const ModelSet refs = ReferencesOf(s, v);
    if (refs.variant == v) sets.push_back(refs);
    for (const ModelSet &c : CellsOf(s, v)) sets.push_back(c);
  }
  return sets;
}

// A rank's seconds per model and training step of set m, from a pilot
// ensemble of kLanes models a rank trained 3 steps (the last two timed).
PetscErrorCode PilotSet(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, const ModelSet &m,
                        double *per) {
  Settings ts;
  std::string identity;
  Ensemble e;
  Optimizer opt;
  History h;
  PetscMPIInt size;
  PetscInt live;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(SetSettings(comm, args, s, m, &ts, &identity));
  const PetscInt models = kLanes * size;
  PetscCall(EnsembleCreate(comm, ts, models, m.first, &e));
  PetscCall(OptimizerCreate(e.p.settings, e.p.heads, &opt, &e.p.neurons));
  double t0 = 0;
  for (PetscInt step = 0; step < 3; ++step) {
    if (step == 1) t0 = seconds();
    EnsembleSetBatch(&e, step);
    PetscCall(EnsembleEvaluate(&e, step, true, &live));
    PetscCall(OptimizerStepAll(&opt, &e.p.heads, e.p.grad, &e.p.neurons, e.p.neuron_grad));
    PetscCall(ProblemSetHeads(&e.p));
  }
  double elapsed = seconds() - t0;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, comm));
  *per = elapsed / 2.0 / kLanes;
  PetscCall(OptimizerDestroy(&opt));
  PetscCall(EnsembleDestroy(&e));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode StudyTrainedInLawList(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s) {
  PetscMPIInt size;
  double total = 0, peak = 0, tokens = 0;
  PetscFunctionBeginUser;
  PetscCall(StudyTrainedInLawCheck(comm, s));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  const double ranks = s.study.plan_cores > 0 ? (double)s.study.plan_cores : (double)size;
  for (const ProbeSet &set : probe_sets(s)) tokens += (double)(s.study.probe_M * (set.N ? set.N : s.data.N) * s.model.d);
  const double times = (double)StudyTimes(s).size();
  std::vector<ModelSet> sets = AllSets(s);
  for (const ModelSet &m : sets) {
    Settings ts;
    std::string identity;
    double per = 0;
    PetscCall(SetSettings(comm, args, s, m, &ts, &identity));
    PetscCall(PilotSet(comm, args, s, m, &per));
    // The steps, and at every time a forward of the probes (about a third of a step) and the full batch.
    const double model_steps = (double)m.models * ((double)s.study.steps + 0.7 * times);
    // A rank's block trains, and at every time runs its probes through a
    // problem of the same models on the largest probe set.
    Settings probe;
    double largest = 0;
    for (size_t k = 0; k < probe_sets(s).size(); ++k) {
      Settings cs;
      PetscCall(ProbeSettings(comm, args, s, m.options, k, &cs));
      if ((double)(cs.data.M * cs.data.N) > largest) largest = (double)(cs.data.M * cs.data.N), probe = cs;
    }
    probe.train.steps = 0;
    const PetscInt block = (PetscInt)std::ceil(m.models / ranks);
    const double secs = model_steps * per / ranks, bytes = EnsembleBytes(ts, block) + EnsembleBytes(probe, block);
    total += secs, peak = std::max(peak, bytes);
    PetscCall(PetscPrintf(comm, "%s: %" PetscInt_FMT " models x %" PetscInt_FMT " steps, %.3g us a model-step (pilot): "
                          "%.3g s on %.0f ranks, %.3g GB a rank\n", m.name.c_str(), m.models, s.study.steps, per * 1e6,
                          secs, ranks, bytes / 1e9));
  }
  // The aggregation: at each time every cell's and its references' blocks of
  // probe outputs, and a rank's share of one sequence's sorted projections.
  const double held = 8.0 * tokens * (double)(s.study.seeds + s.study.references) / ranks;
  const double energy = 2.0 * kEnergyBytesPerRow * (double)(s.study.seeds + s.study.references) / ranks;
  PetscCall(PetscPrintf(comm, "aggregation: %.3g GB a rank of probe outputs (%.0f times, one at a time) and %.3g GB for "
                        "the energy distance, a rank on %.0f ranks\n", held / 1e9, times, energy / 1e9, ranks));
  PetscCall(PetscPrintf(comm, "study in law, trained: %.3g s on %.0f ranks (pilots on %d), %.3g GB a rank at most, "
                        "and the process (about 0.07 GB)\n", total, ranks, size, std::max(peak, held + energy) / 1e9));
  PetscCall(PetscPrintf(comm, "%zu cells in %s\n", sets.size(), s.study.dir.c_str()));
  PetscFunctionReturn(0);
}

PetscErrorCode StudyTrainedInLawCheck(MPI_Comm comm, const Settings &s) {
  PetscFunctionBeginUser;
  PetscCheck(s.aggregate.empty(), comm, PETSC_ERR_USER_INPUT,
             "a trained study in law makes its tables as it runs: run it again (its files are kept) instead of "
             "--aggregate");
  for (const char *key : {"study.worst", "study.fluctuation", "study.only", "study.samples", "study.target", "study.levels"})
    PetscCheck(!s.is_explicit(key), comm, PETSC_ERR_USER_INPUT,
               "%s does not apply to a trained study in law (a = c = 0.5, trained, with references): every cell "
               "trains study.seeds models against study.references references", key);
  PetscCheck(s.study.k.empty() || !s.study.reference_k.empty(), comm,
             PETSC_ERR_USER_INPUT, "study.k in a trained study compares each k with references of study.reference_k: "
             "give it (inf: infinite heads)");
  PetscCheck(s.study.references < (PetscInt)kReferenceSeeds && s.study.seeds < (PetscInt)kReferenceSeeds, comm,
             PETSC_ERR_USER_INPUT, "a trained study in law trains fewer than %llu models a cell and references",
             (unsigned long long)kReferenceSeeds);
  PetscCheck(s.study.references >= 2 && s.study.seeds >= 2, comm, PETSC_ERR_USER_INPUT,
             "a trained study in law compares laws: give study.seeds and study.references of 2 or more (given %"
             PetscInt_FMT " and %" PetscInt_FMT ")", s.study.seeds, s.study.references);
  PetscFunctionReturn(0);
}

PetscErrorCode StudyTrainedInLawRun(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                                    int *status) {
  std::vector<std::string> rows, fits;
  PetscInt resolved = 0;
  int signal = 0;
  PetscFunctionBeginUser;
  PetscCall(StudyTrainedInLawCheck(comm, s));
  PetscCall(StudyDirCreate(comm, s.study.dir));
  const double t0 = seconds();
  const size_t variants = StudyVariants(s).size();
  PetscCall(PetscPrintf(comm, "mft study in law, trained: a = c = 1/2, %zu variants, L in {%s}, H in {%s}%s%s, %"
                        PetscInt_FMT " models a cell against %" PetscInt_FMT " references of %" PetscInt_FMT " x %"
                        PetscInt_FMT "%s%s, %" PetscInt_FMT " steps | probes: %zu sets | %s\n", variants,
                        s.study.L.c_str(), s.study.H.c_str(), s.study.k.empty() ? "" : ", k in ", s.study.k.c_str(),
                        s.study.seeds, s.study.references, s.study.reference_L, s.study.reference_H,
                        s.study.reference_k.empty() ? "" : " k=", s.study.reference_k.c_str(), s.study.steps,
                        probe_sets(s).size(), s.study.dir.c_str()));
  for (size_t v = 0; v < variants && !signal; ++v) { // every set trained (the references first)
    PetscCall(TrainSet(comm, args, s, ReferencesOf(s, v), &signal));
    for (const ModelSet &cell : CellsOf(s, v))
      if (!signal) PetscCall(TrainSet(comm, args, s, cell, &signal));
  }
  if (signal) {
    *status = kExitResubmit;
    PetscCall(PetscPrintf(comm, "mft: stopped by a signal; the sets trained so far are kept, a rerun resumes\n"));
    PetscFunctionReturn(0);
  }
  for (size_t v = 0; v < variants; ++v)
    for (PetscInt t : StudyTimes(s)) {
      SetLaw refs;
      PetscCall(ReadSet(comm, s, ReferencesOf(s, v), t, &refs));
      std::vector<CellAt> at;
      for (const ModelSet &cell : CellsOf(s, v)) {
        at.emplace_back();
        PetscCall(CompareAt(comm, s, cell, refs, t, &at.back()));
        const CellAt &c = at.back();
        rows.push_back(RowOf(c));
        resolved += c.law.gap.resolved;
        PetscCall(PetscPrintf(comm, "variant %zu L=%" PetscInt_FMT " H=%" PetscInt_FMT "%s%s t=%" PetscInt_FMT
                              ": err_law %.3e [%.3e, %.3e]%s, energy %.3e +- %.1e, %" PetscInt_FMT " models (%"
                              PetscInt_FMT " diverged) against %" PetscInt_FMT " references (%" PetscInt_FMT
                              " diverged)\n", v, cell.L, cell.H, cell.k.empty() ? "" : " k=", cell.k.c_str(), t,
                              c.law.gap.err, c.law.gap.lo, c.law.gap.hi, c.law.gap.resolved ? " resolved" : "",
                              c.law.energy.value, c.law.energy.se, c.models, c.models - c.survivors, c.references,
                              c.references - c.reference_survivors));
      }
      PetscCall(Fits(comm, s, refs, at, &fits));
    }
  PetscCall(WriteTable(comm, s.study.dir + "/law.csv",
                       "variant,L,H,k,time,models,diverged,references,references_diverged,err_law,err_law_lo,"
                       "err_law_hi,err_law_floor,resolved,probe,sequence," + std::string(kEnergyColumns) +
                           ",reference_sampling",
                       rows));
  PetscCall(WriteTable(comm, s.study.dir + "/law_fits.csv",
                       std::string("variant,time,over,L,H,cells,C,p,p_lo,p_hi,q,q_lo,q_hi,") + kPowerFitMisfit, fits));
  PetscCall(PetscPrintf(comm, "mft study in law, trained: %zu cells, %" PetscInt_FMT " resolved; wrote %s/law.csv, "
                        "law_fits.csv\n", rows.size(), resolved, s.study.dir.c_str()));
  Summary sum;
  sum.add("command", std::string("study")).add("mode", std::string("law trained")).add("dir", s.study.dir);
  sum.add("cells", (long long)rows.size()).add("resolved", (long long)resolved).add("seconds", seconds() - t0);
  PetscCall(sum.print(comm));
  *status = kExitOk;
  PetscFunctionReturn(0);
}

} // namespace mft
