// Running one case of a study: its model, its training (the loop of mft
// train) and its probe outputs at every recorded time.
#include "mft/studies/study.hpp"
#include "mft/studies/study_cases.hpp"

#include "mft/files/checkpoint.hpp"
#include "mft/settings/error.hpp"
#include "mft/files/heldout.hpp"
#include "mft/flow/limit.hpp"
#include "mft/flow/optimizer.hpp"
#include "mft/files/runfile.hpp"
#include "mft/files/training.hpp"
#include "mft/flow/diversity.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <list>

namespace mft {

using namespace study;

namespace {

// The probe outputs x(1), p(0) of every family for the model of `model`: at
// `params` (all of its heads and neurons, on every rank), or with params == nullptr at the
// settings' own draw (at initialisation; the mean-field reference when
// `limit`: the shared ensemble, adaptive depth). *cs: the last probe's settings.
// With `diversity` (a finite model at `params`), the heads' diversity
// (diversity.hpp) at the tokens entering each layer, its mean over the sets.
PetscErrorCode Probe(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                     const std::vector<std::string> &model, bool limit, const ModelParams *params,
                     std::vector<LimitResult> *results, Settings *cs, double *diversity = nullptr) {
  const auto sets = probe_sets(s);
  PetscFunctionBeginUser;
  results->assign(sets.size(), LimitResult());
  if (diversity) *diversity = 0;
  for (size_t f = 0; f < sets.size(); ++f) {
    std::vector<std::string> extra = model;
    const auto probes = probe_overrides(s, sets[f]);
    extra.insert(extra.end(), probes.begin(), probes.end());
    PetscCall(CaseSettings(comm, args, extra, cs, true));
    if (limit) *cs = LimitSettingsFor(*cs);
    Trajectory layers;
    if (diversity) cs->output.trajectory = cs->model.L;
    PetscCall(LimitSolve(comm, *cs, &(*results)[f], params, diversity ? &layers : nullptr));
    if (!diversity) continue;
    double D;
    PetscCall(HeadDiversity(comm, cs->model, params->heads, layers, (*results)[f].weights, &D));
    PetscCall(TrajectoryDestroy(&layers));
    *diversity += D / (double)sets.size();
  }
  PetscFunctionReturn(0);
}

// The probe outputs of every set, as a case file holds them.
CaseData ProbeData(const std::vector<LimitResult> &results) {
  CaseData d;
  for (const LimitResult &x : results) d.tokens.push_back(x.tokens), d.adjoint.push_back(x.adjoint), d.weights.push_back(x.weights);
  return d;
}

// The arrays of probe outputs under `prefix` (/probes/<family>/tokens,
// adjoint, and a weighted set's weights): M sequences of tokens in R^d each,
// of the set's own N.
void ProbeArrays(const std::string &prefix, const std::vector<std::string> &names, const CaseData &probes,
                 unsigned long long M, unsigned long long d, std::vector<ResultArray> *arrays) {
  for (size_t f = 0; f < names.size(); ++f) {
    const std::vector<unsigned long long> dims = {M, probes.tokens[f].size() / (M * d), d};
    arrays->push_back({prefix + "/probes/" + names[f] + "/tokens", dims, probes.tokens[f].data()});
    arrays->push_back({prefix + "/probes/" + names[f] + "/adjoint", dims, probes.adjoint[f].data()});
    if (f < probes.weights.size() && !probes.weights[f].empty())
      arrays->push_back({prefix + "/probes/" + names[f] + "/weights", {M, dims[1]}, probes.weights[f].data()});
  }
}

// What every part of running one case needs.
struct CaseRun {
  MPI_Comm comm;
  const std::vector<std::string> &args;
  const Settings &s;
  const StudyCase &c;
  Settings vs;                          // the variant's settings: its data.N and data.seed are its probes' defaults
  std::vector<std::string> model;       // the case's options: the variant's, its size and seed, the teacher
  std::vector<std::string> families;    // the probe sets' names
  std::vector<std::pair<std::string, std::string>> attributes; // of its files
  std::vector<double> loss;             // a trained case: its risk before every step (the training curve)
};

std::string checkpoints_of(const CaseRun &r) {
  return r.s.study.dir + "/case-" + std::to_string(r.c.index) + "-checkpoints";
}

// A trained case: the training loop of mft train, resumed from the case's own
// checkpoints when there are any; at every time of study.times its probes, the
// heads' movement and the full-batch risk go to a file each
// (case-<i>-t<step>.h5) as they are reached.
PetscErrorCode TrainCase(CaseRun &r, int *signal) {
  MPI_Comm comm = r.comm;
  const Settings &s = r.s;
  std::vector<std::string> train = r.model;
  train.insert(train.end(), {"--train.steps", std::to_string(s.study.steps), "--checkpoint.dir", checkpoints_of(r)});
  Settings ts, cs;
  Problem p;
  Optimizer opt;
  History history;
  PetscInt start = 0, saved = -1;
  std::vector<LimitResult> results;
  PetscFunctionBeginUser;
  PetscCall(CaseSettings(comm, r.args, train, &ts));
  ts.restart = "auto";
  PetscCall(ProblemCreate(comm, ts, &p));
  PetscCall(OptimizerCreate(ts, p.heads, &opt, &p.neurons));
  PetscCall(TrainResume(&p, &opt, &history, r.c.describe() + ": ", &start, &saved));
  const std::vector<PetscInt> times = StudyTimes(s);
  ModelParams at_step; // its heads and neurons at a recorded step
  std::vector<double> &heads = at_step.heads, heads0;
  Vec theta0; // the initial heads, for |theta_t - theta_0| / |theta_0|
  PetscCall(VecDuplicate(p.heads.theta, &theta0));
  PetscCall(HeadsInitialize(&p.heads, ts.init, ts.init.seed, theta0));
  PetscCall(GatherAll(theta0, &heads0));
  Heldout heldout;
  PetscCall(HeldoutCreate(p, &heldout));
  auto record = [&](PetscInt step) -> PetscErrorCode {
    PetscReal n0, dn;
    Vec diff;
    PetscFunctionBeginUser;
    if (!std::binary_search(times.begin(), times.end(), step)) PetscFunctionReturn(0);
    PetscCall(GatherAll(p.heads.theta, &heads));
    if (p.neurons.theta) PetscCall(GatherAll(p.neurons.theta, &at_step.neurons));
    double diversity;
    PetscCall(Probe(comm, r.args, r.vs, r.model, false, &at_step, &results, &cs, &diversity));
    const CaseData probes = ProbeData(results);
    std::vector<ResultArray> at;
    ProbeArrays("", r.families, probes, s.study.probe_M, cs.model.d, &at);
    // What training has done by this step: the heads' movement and the full-batch risk.
    PetscCall(VecDuplicate(theta0, &diff));
    PetscCall(VecWAXPY(diff, -1.0, theta0, p.heads.theta));
    PetscCall(VecNorm(theta0, NORM_2, &n0));
    PetscCall(VecNorm(diff, NORM_2, &dn));
    PetscCall(VecDestroy(&diff));
    ProblemSetBatch(&p, -1);
    PetscCall(ProblemEvaluate(&p, PETSC_FALSE));
    const double change = dn / n0, risk = p.risk;
    const std::vector<double> blocks = HeadsBlockChange(p.heads.shape, ts.model.L, ts.model.H, heads, heads0);
    if (s.study.worst) at.push_back({"/params/theta", {heads.size()}, heads.data()}); // for the worst input's search
    if (s.study.worst && !at_step.neurons.empty())
      at.push_back({"/params/neurons", {at_step.neurons.size()}, at_step.neurons.data()});
    at.push_back({"/training/head_change", {1}, &change});
    at.push_back({"/training/block_change",
                  {(unsigned long long)ts.model.L, (unsigned long long)p.heads.shape.blocks()}, blocks.data()});
    at.push_back({"/training/risk", {1}, &risk});
    at.push_back({"/training/diversity", {1}, &diversity});
    if (heldout.file) { // the held-out file's risk at the same heads
      History scratch;
      PetscCall(HeldoutEvaluate(&p, &heldout, step, &scratch));
      at.push_back({"/training/heldout_risk", {1}, &heldout.risk});
    }
    PetscCall(ResultFileWrite(comm, cs, at, r.attributes, partial_path(s.study.dir, r.c.index, step)));
    PetscFunctionReturn(0);
  };
  TrainingStop stop;
  PetscCall(TrainLoop(&p, &opt, &history, start, saved, record, &stop));
  *signal = stop.signal;
  r.loss = history.loss;
  PetscCall(HeldoutDestroy(&heldout));
  PetscCall(VecDestroy(&theta0));
  PetscCall(OptimizerDestroy(&opt));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(0);
}

// A trained case's file from its recordings: every recorded time under
// /times/<step> (probes and training), the last also under /probes; then its
// recordings and checkpoints go.
PetscErrorCode WriteTrainedCase(CaseRun &r) {
  MPI_Comm comm = r.comm;
  const Settings &s = r.s;
  const std::vector<PetscInt> times = StudyTimes(s);
  std::vector<ResultArray> arrays;
  std::list<CaseData> kept;
  std::string problem;
  Settings cs;
  PetscMPIInt rank;
  PetscFunctionBeginUser;
  PetscCall(CaseSettings(comm, r.args, r.model, &cs));
  for (PetscInt t : times) {
    kept.emplace_back();
    PetscCall(ReadCase(partial_path(s.study.dir, r.c.index, t), r.families, "", &kept.back(), &problem));
    PetscCheck(problem.empty(), comm, PETSC_ERR_FILE_READ, "%s", problem.c_str());
    CaseData &d = kept.back();
    d.reduction = kept.front().risk / d.risk;
    ProbeArrays("/times/" + std::to_string(t), r.families, d, s.study.probe_M, d.d, &arrays);
    struct Figure {
      const char *name;
      const double *value;
      bool optional; // written where finite: a recording may not have it
    };
    for (const Figure &x : {Figure{"head_change", &d.head_change, false}, Figure{"risk", &d.risk, false},
                            Figure{"risk_reduction", &d.reduction, false}, Figure{"diversity", &d.diversity, true},
                            Figure{"heldout_risk", &d.heldout_risk, true}})
      if (!x.optional || std::isfinite(*x.value))
        arrays.push_back({"/times/" + std::to_string(t) + "/training/" + x.name, {1}, x.value});
    if (!d.block_change.empty())
      arrays.push_back({"/times/" + std::to_string(t) + "/training/block_change",
                        {d.block_change.size() / (size_t)d.blocks, (unsigned long long)d.blocks},
                        d.block_change.data()});
    if (!d.heads.empty())
      arrays.push_back({"/times/" + std::to_string(t) + "/params/theta", {d.heads.size()}, d.heads.data()});
    if (!d.neurons.empty())
      arrays.push_back({"/times/" + std::to_string(t) + "/params/neurons", {d.neurons.size()}, d.neurons.data()});
    if (t == times.back()) ProbeArrays("", r.families, d, s.study.probe_M, d.d, &arrays);
  }
  if (!r.loss.empty()) arrays.push_back({"/training/loss", {(unsigned long long)r.loss.size()}, r.loss.data()});
  // What training did to the heads (printed and kept): |theta_T - theta_0| / |theta_0|, risk reduction.
  const double moved = kept.back().head_change, reduction = kept.back().reduction;
  auto attributes = r.attributes;
  attributes.emplace_back("study.times", s.study.times);
  attributes.emplace_back("study.head_change", num(moved));
  attributes.emplace_back("study.risk_reduction", num(reduction));
  PetscCall(PetscPrintf(comm, "%s: heads moved |theta_T - theta_0| / |theta_0| = %.4g, risk reduced %.4gx\n",
                        r.c.describe().c_str(), moved, reduction));
  PetscCall(ResultFileWrite(comm, cs, arrays, attributes, case_path(s.study.dir, r.c.index)));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Barrier(comm));
  if (rank == 0) {
    std::error_code ec;
    for (PetscInt t : times) std::filesystem::remove(partial_path(s.study.dir, r.c.index, t), ec);
    std::filesystem::remove_all(checkpoints_of(r), ec);
  }
  PetscFunctionReturn(0);
}

} // namespace

// Seeds: models init.seed + 1 .. + seeds; reference r init.seed + 100003 r
// (reference 0: init.seed itself), far from every model's.
std::vector<std::string> study::CaseModel(const Settings &s, const StudyCase &c) {
  const bool trained = s.study.state == StudyState::trained;
  std::vector<std::string> model = overrides(StudyVariants(s)[c.variant]);
  const std::string seed = std::to_string(s.init.seed + (c.reference ? 100003 * c.reference_index : c.seed));
  if (c.reference && trained && !s.study.reference_k.empty()) { // the reference's k in place of the variant's
    std::vector<std::string> kept;
    for (size_t i = 0; i + 1 < model.size(); i += 2)
      if (model[i] != "--model.k") kept.insert(kept.end(), {model[i], model[i + 1]});
    model = kept;
    model.insert(model.end(), {"--model.k", s.study.reference_k});
  }
  if (!c.reference || trained) {
    const auto shape = StudyShapeOptions(s, c.L, c.H);
    model.insert(model.end(), shape.begin(), shape.end());
  }
  model.insert(model.end(), {"--init.seed", seed}); // a reference at initialisation: the ensemble's own draw
  if (s.study.grow_d) { // d = k H: the last model.k given, else the study's
    PetscInt k = s.model.k;
    for (size_t i = 0; i + 1 < model.size(); i += 2)
      if (model[i] == "--model.k") k = std::stol(model[i + 1]);
    model.insert(model.end(), {"--model.d", std::to_string(std::max(s.data.embed, k * c.H))});
  }
  if (trained) { // one learning problem for every model: the targets of one teacher
    const auto teacher = StudyTeacherOptions(s);
    model.insert(model.end(), teacher.begin(), teacher.end());
  }
  return model;
}

PetscErrorCode StudyRunCase(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                            const StudyCase &c, int *signal) {
  CaseRun r{comm, args, s, c, Settings(), CaseModel(s, c), probe_names(s),
            {{"study.case", std::to_string(c.index)},
             {"study.variant", std::to_string(c.variant)},
             {"study.reference", c.reference ? "true" : "false"},
             {"study.reference_index", std::to_string(c.reference_index)},
             {"study.case_L", std::to_string(c.L)},
             {"study.case_H", std::to_string(c.H)},
             {"study.case_seed", std::to_string(c.seed)}},
            {}};
  Settings ms;
  PetscFunctionBeginUser;
  *signal = 0;
  PetscCall(CaseSettings(comm, args, overrides(StudyVariants(s)[c.variant]), &r.vs));
  PetscCall(CaseSettings(comm, args, r.model, &ms));
  r.attributes.emplace_back("study.case_identity", case_identity(ms)); // a rerun keeps the file (StudyCaseFinished)
  if (s.study.state != StudyState::trained) { // at initialisation: the probes of the case's own draw
    Settings cs;
    std::vector<LimitResult> results;
    std::vector<ResultArray> arrays;
    PetscCall(Probe(comm, args, r.vs, r.model, c.reference, nullptr, &results, &cs));
    const CaseData probes = ProbeData(results);
    ProbeArrays("", r.families, probes, s.study.probe_M, cs.model.d, &arrays);
    PetscCall(ResultFileWrite(comm, cs, arrays, r.attributes, case_path(s.study.dir, c.index)));
    PetscFunctionReturn(0);
  }
  PetscCall(TrainCase(r, signal));
  if (!*signal) PetscCall(WriteTrainedCase(r));
  PetscFunctionReturn(0);
}

} // namespace mft
