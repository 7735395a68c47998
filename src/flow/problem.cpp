// Problem assembly: data, teacher targets, initial heads; forward and adjoint.
#include "mft/flow/problem.hpp"

#include "mft/flow/cost.hpp"
#include "mft/flow/data.hpp"
#include "mft/flow/families.hpp"
#include "mft/layout/random.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sched.h>

namespace mft {

// Tokens of the owned range, sequence by sequence from the family.
static PetscErrorCode GenerateTokens(const DataSettings &s, const TokenLayout &t, Vec x0) {
  PetscScalar *xa;
  std::vector<double> seq((size_t)(t.N * t.d));
  PetscFunctionBeginUser;
  PetscCall(VecGetArray(x0, &xa));
  for (PetscInt tok = t.owned.begin; tok < t.owned.end;) {
    const PetscInt m = tok / t.N;
    family_sample(s, t.d, m, t.N, seq.data());
    const PetscInt last = std::min(t.owned.end, (m + 1) * t.N);
    for (; tok < last; ++tok)
      for (PetscInt c = 0; c < t.d; ++c) xa[(tok - t.owned.begin) * t.d + c] = seq[(tok - m * t.N) * t.d + c];
  }
  PetscCall(VecRestoreArray(x0, &xa));
  PetscFunctionReturn(0);
}

// The teacher's model: data.teacher_L x data.teacher_H with its exponents
// and head dimension (each 0: the student's).
static ModelSettings TeacherModel(const Settings &s) {
  ModelSettings m = s.model;
  if (s.data.teacher_L) m.L = s.data.teacher_L;
  if (s.data.teacher_H) m.H = s.data.teacher_H;
  if (s.data.teacher_k) m.k = s.data.teacher_k, m.infinite_head = false;
  if (s.data.teacher_mlp_width) m.mlp_width = s.data.teacher_mlp_width;
  if (s.data.teacher_depth_exponent > 0) m.depth_exponent = s.data.teacher_depth_exponent;
  if (s.data.teacher_head_exponent > 0) m.head_exponent = s.data.teacher_head_exponent;
  if (s.data.embed > 0) m.d = s.data.embed; // the task's own space
  return m;
}

// x(1) of a teacher of another shape or exponents (its own problem on the
// same data), into the student's layout of x1 (a teacher in R^data.embed
// padded with zeros).
static PetscErrorCode TeacherOutput(Problem *p, const ModelSettings &m) {
  const Settings &s = p->settings;
  Settings ts = s;
  Problem teacher;
  std::vector<double> all;
  PetscFunctionBeginUser;
  PetscCheck(s.data.teacher_perturbation == 0, p->grid.comm, PETSC_ERR_USER_INPUT,
             "data.teacher_perturbation needs a teacher of the student's shape and exponents (data.teacher_L = %" PetscInt_FMT
             ", data.teacher_H = %" PetscInt_FMT " against model.L = %" PetscInt_FMT ", model.H = %" PetscInt_FMT ")",
             m.L, m.H, s.model.L, s.model.H);
  ts.model = m;
  ts.data.teacher_L = ts.data.teacher_H = ts.data.teacher_mlp_width = 0;
  ts.init = TeacherInit(s);
  ts.init.seed = s.data.teacher_seed;
  ts.data.teacher_init.clear();
  ts.scheme.zero_targets = true; // no teacher of its own
  ts.parallel.head_groups = 0;
  ts.output.trajectory = 0; // the student's depths
  PetscCall(ProblemCreate(p->grid.comm, ts, &teacher));
  PetscCall(VecCopy(teacher.x0, teacher.x1));
  PetscCall(FlowForward(&teacher.flow, teacher.x1));
  PetscCall(GatherAll(teacher.x1, &all));
  PetscCall(ProblemDestroy(&teacher));
  PetscScalar *x;
  PetscInt lo, hi;
  PetscCall(VecGetOwnershipRange(p->x1, &lo, &hi));
  PetscCall(VecGetArray(p->x1, &x));
  const PetscInt d = s.model.d, dt = m.d;
  for (PetscInt i = lo; i < hi; ++i) x[i - lo] = i % d < dt ? all[(size_t)(i / d * dt + i % d)] : 0.0;
  PetscCall(VecRestoreArray(p->x1, &x));
  PetscFunctionReturn(0);
}

// Targets from the teacher: x(1) (token) or W xbar(1) (pooled) of a random
// model, of the student's shape and exponents or of TeacherModel's.
static PetscErrorCode TeacherTargets(Problem *p) {
  Settings &s = p->settings;
  Targets &y = p->targets;
  PetscFunctionBeginUser;
  if (y.kind == LossKind::pooled) {
    y.c = s.loss.c;
    y.W.resize((size_t)(y.c * s.model.d));
    Stream r(s.loss.readout_seed, kReadout);
    for (auto &w : y.W) w = r.normal() / std::sqrt((double)s.model.d);
  }
  const ModelSettings tm = TeacherModel(s);
  const bool own = tm.L == s.model.L && tm.H == s.model.H && tm.d == s.model.d &&
                   tm.depth_exponent == s.model.depth_exponent &&
                   tm.head_exponent == s.model.head_exponent && tm.k == s.model.k &&
                   tm.infinite_head == s.model.infinite_head && tm.mlp_width == s.model.mlp_width;
  if (!own) {
    PetscCall(TeacherOutput(p, tm));
  } else if (s.data.teacher_perturbation > 0) { // near the student's start: a small initial risk
    PetscCall(ProblemDraw(p, s.init, s.init.seed));
    PetscCall(HeadsPerturb(p->heads, s.data.teacher_seed, s.data.teacher_perturbation, p->heads.theta));
  } else {
    PetscCall(ProblemDraw(p, TeacherInit(s), s.data.teacher_seed));
  }
  if (own) {
    PetscCall(ProblemSetHeads(p));
    PetscCall(VecCopy(p->x0, p->x1));
    PetscCall(FlowForward(&p->flow, p->x1));
  }
  if (y.kind == LossKind::token) {
    PetscCall(VecDuplicate(p->x1, &y.y));
    PetscCall(VecCopy(p->x1, y.y));
  } else {
    PetscCall(PooledOutputs(p->tokens, y.W, y.c, p->x1, y.z));
  }
  PetscFunctionReturn(0);
}

// More threads than the CPUs a rank may run on (mpiexec binds each rank to
// one core by default) would share one core: said once, on rank 0.
static PetscErrorCode ThreadsCheck(MPI_Comm comm, PetscInt threads) {
  static bool said = false;
  cpu_set_t set;
  int cpus = 0, fewest;
  PetscFunctionBeginUser;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
  PetscCallMPI(MPI_Allreduce(&cpus, &fewest, 1, MPI_INT, MPI_MIN, comm));
  const bool short_of_cpus = threads > 1 && fewest > 0 && fewest < threads;
  if (short_of_cpus && !said)
    PetscCall(PetscPrintf(comm,
                          "mft: warning: parallel.threads = %" PetscInt_FMT " but a rank may run on %d CPU(s): its "
                          "threads share them (mpiexec binds each rank to one core: use --bind-to none, or "
                          "--map-by slot:PE=%" PetscInt_FMT ")\n",
                          threads, fewest, threads));
  said = said || short_of_cpus;
  const char *env = std::getenv("OMP_NUM_THREADS");
  static bool capped = false;
  if (!capped && threads == kMaxThreads && env && std::atoi(env) > kMaxThreads)
    PetscCall(PetscPrintf(comm, "mft: warning: OMP_NUM_THREADS = %s is more than %d threads a rank: %d are run\n", env,
                          (int)kMaxThreads, (int)kMaxThreads));
  capped = capped || (threads == kMaxThreads && env && std::atoi(env) > kMaxThreads);
  PetscFunctionReturn(0);
}

// On p->grid, for `models` models of p->settings folded (an ensemble's,
// whose velocity runs the lanes kernels; else one): the token layout, the
// heads, the velocity, the flow and the problem's vectors.
static PetscErrorCode ProblemSolver(Problem *p, PetscInt threads, PetscInt models, bool ensemble) {
  const Settings &s = p->settings;
  PetscFunctionBeginUser;
  PetscCall(TokenLayoutCreate(p->grid, s.data.M * models, s.data.N, s.model.d, &p->tokens));
  ModelSettings layers = s.model;
  if (s.scheme.shared) layers.L = 1; // one ensemble of heads for every depth
  layers.H *= models;
  PetscCall(HeadsCreate(p->grid, layers, &p->heads));
  p->heads.seeds = models;
  p->heads.overlap = s.parallel.overlap;
  PetscCall(VelocityCreate(p->grid, p->tokens, &p->heads, s.model, p->predicted.form, threads, &p->velocity,
                           ensemble ? models : 0));
  PetscCall(FlowCreate(&p->velocity, s.model.L, s.model.norm, s.scheme, &p->flow));
  if (s.model.mlp() && s.scheme.expected_mlp) {
    MlpCreateExpected(s.model, s.init, &p->mlp);
    PetscCall(FlowAddMlp(&p->flow, &p->mlp, nullptr));
  } else if (s.model.mlp()) {
    PetscCall(NeuronsCreate(p->grid.comm, layers, &p->neurons, models));
    MlpCreate(&p->neurons, &p->mlp);
    PetscCall(VecDuplicate(p->neurons.theta, &p->neuron_grad));
    PetscCall(FlowAddMlp(&p->flow, &p->mlp, p->neuron_grad));
  }
  PetscCall(VecDuplicate(p->tokens.state, &p->x0));
  PetscCall(VecDuplicate(p->tokens.state, &p->x1));
  PetscCall(VecDuplicate(p->tokens.state, &p->adjoint));
  PetscCall(VecDuplicate(p->heads.theta, &p->grad));
  p->targets.kind = s.loss.kind;
  p->active.assign((size_t)(s.data.M * models), 1);
  p->velocity.active = &p->active;
  PetscFunctionReturn(0);
}

// The whole of `from` (one model's state layout, on one rank), `models` times into `to`.
static PetscErrorCode Replicate(Vec from, PetscInt models, Vec to) {
  const PetscScalar *a;
  PetscScalar *b;
  PetscInt n;
  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(from, &n));
  PetscCall(VecGetArrayRead(from, &a));
  PetscCall(VecGetArray(to, &b));
  for (PetscInt s = 0; s < models; ++s) std::copy(a, a + n, b + s * n);
  PetscCall(VecRestoreArray(to, &b));
  PetscCall(VecRestoreArrayRead(from, &a));
  PetscFunctionReturn(0);
}

PetscErrorCode ProblemCreateModels(const Settings &settings, const std::vector<std::uint64_t> &seeds, Problem *p) {
  Problem one;
  Settings s1 = settings;
  PetscFunctionBeginUser;
  s1.init.seed = seeds.front();
  s1.parallel.head_groups = 0;
  PetscCall(ProblemCreate(PETSC_COMM_SELF, s1, &one)); // the data and targets, once
  const PetscInt models = (PetscInt)seeds.size();
  p->settings = one.settings;
  p->settings.init.seed = settings.init.seed;
  PetscCall(GridCreate(PETSC_COMM_SELF, 1, p->settings.model.H, 0, &p->grid));
  PetscCall(ProblemSolver(p, RankThreads(p->settings.parallel.threads), models, true));
  PetscCall(Replicate(one.x0, models, p->x0));
  for (PetscInt s = 0; s < models; ++s)
    p->tokens.weights.insert(p->tokens.weights.end(), one.tokens.weights.begin(), one.tokens.weights.end());
  p->targets.kind = one.targets.kind, p->targets.c = one.targets.c, p->targets.W = one.targets.W;
  if (one.targets.y) {
    PetscCall(VecDuplicate(p->x0, &p->targets.y));
    PetscCall(Replicate(one.targets.y, models, p->targets.y));
  }
  for (PetscInt s = 0; s < models; ++s)
    p->targets.z.insert(p->targets.z.end(), one.targets.z.begin(), one.targets.z.end());
  PetscCall(ProblemDestroy(&one));
  PetscCall(HeadsInitializeModels(&p->heads, p->settings.init, seeds, p->heads.theta));
  if (p->neurons.theta) PetscCall(NeuronsInitializeModels(p->neurons, p->settings.init, seeds, p->neurons.theta));
  PetscCall(ProblemSetHeads(p));
  PetscFunctionReturn(0);
}

PetscErrorCode ProblemCreate(MPI_Comm comm, const Settings &settings, Problem *p) {
  PetscFunctionBeginUser;
  p->settings = settings;
  Settings &s = p->settings;
  if (!s.data.file.empty()) PetscCall(DataFileConform(comm, &s));
  PetscCall(SettingsCheck(comm, s));
  if (SettingsReads(s.command, "output.trajectory")) // elsewhere a config's value is not used
    PetscCall(TrajectoryCheck(comm, s, s.command == "train" || s.command == "limit" || s.gradient));
  PetscMPIInt size;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  // The grid's exchange buffers (cost.hpp) must fit in a rank's share of its
  // node's available memory: the least share of any rank, so that every rank
  // chooses the same grid. The nodes in rank order (grid.hpp) are the
  // network's and the cut rows' node sharing's.
  double available, share;
  PetscMPIInt sharing_memory;
  PetscInt node_ranks;
  PetscCall(NodeMemory(comm, &available, &sharing_memory));
  share = available / (double)sharing_memory;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &share, 1, MPI_DOUBLE, MPI_MIN, comm));
  PetscCall(NodeRanks(comm, s.parallel.node_ranks, &node_ranks));
  const Network net = NetworkOf(s.parallel, node_ranks);
  p->predicted = ChooseGrid(s.model, s.data.M, s.data.N, size, s.parallel.rate, net, s.parallel.head_groups,
                            CutFormSetting(s.parallel), share);
  PetscCheck(p->predicted.Ph > 0 || p->predicted.memory >= 0, comm, PETSC_ERR_USER_INPUT,
             "%d ranks are more than the %" PetscInt_FMT " tokens times %" PetscInt_FMT " heads can share", size,
             s.data.M * s.data.N, s.model.H);
  PetscCheck(p->predicted.Ph > 0, comm, PETSC_ERR_USER_INPUT,
             "the exchanges need %.3g GiB a rank (the forward's gathered states kept for the adjoint and the rows of "
             "sequences cut across token groups), more than the %.3g GiB a rank has: use more ranks%s",
             p->predicted.memory / 1073741824.0, share / 1073741824.0,
             s.parallel.cut_sequences == CutSequences::projections ? " or parallel.cut_sequences = tokens" : "");
  PetscCall(GridCreate(comm, p->predicted.Ph, s.model.H, node_ranks, &p->grid));
  // The grid is chosen as for one thread, so that the thread count changes no
  // result; the predicted step counts the threads.
  const PetscInt threads = RankThreads(s.parallel.threads);
  PetscCall(ThreadsCheck(comm, threads));
  if (threads > 1)
    p->predicted = PredictStep(s.model, s.data.M, s.data.N, size, p->predicted.Ph, p->predicted.form, s.parallel.rate,
                               net, threads, share);
  PetscCall(ProblemSolver(p, threads, 1, false));
  p->velocity.memory = share; // what is left of it keeps the queries' statistics
  // The tokens: drawn, or a data file's; the targets: zero (a probe's), the file's, or the teacher's.
  if (s.data.file.empty()) PetscCall(GenerateTokens(s.data, p->tokens, p->x0));
  else PetscCall(DataFileRead(comm, s.data.file, p->tokens, p->x0, s.scheme.zero_targets ? nullptr : &p->targets));
  if (p->tokens.weighted() && s.model.causal) { // the mask orders the tokens: a measure has no order
    PetscCheck(UniformWeights(p->tokens), comm, PETSC_ERR_USER_INPUT,
               "data file %s has weights other than 1/N, and model.causal = true orders the tokens: a weighted "
               "measure of tokens has no order (give uniform weights, or no /data/weights)", s.data.file.c_str());
    p->tokens.weights.clear(); // uniform: the unweighted model
  }
  PetscCall(NormInputs(s.model.norm, s.data.N, s.model.d, p->x0));
  if (s.scheme.zero_targets) {
    p->targets.kind = LossKind::token;
    PetscCall(VecDuplicate(p->x0, &p->targets.y));
    PetscCall(VecSet(p->targets.y, 0.0));
  } else if (s.data.file.empty()) {
    PetscCall(TeacherTargets(p));
  }
  PetscCall(ProblemDraw(p, s.init, s.init.seed));
  PetscCall(ProblemSetHeads(p));
  PetscFunctionReturn(0);
}

PetscErrorCode ProblemDestroy(Problem *p) {
  PetscFunctionBeginUser;
  if (p->neurons.theta) PetscCall(NeuronsDestroy(&p->neurons));
  PetscCall(VecDestroy(&p->neuron_grad));
  PetscCall(VecDestroy(&p->x0));
  PetscCall(VecDestroy(&p->x1));
  PetscCall(VecDestroy(&p->adjoint));
  PetscCall(VecDestroy(&p->grad));
  PetscCall(TargetsDestroy(&p->targets));
  PetscCall(FlowDestroy(&p->flow));
  PetscCall(VelocityDestroy(&p->velocity));
  PetscCall(HeadsDestroy(&p->heads));
  PetscCall(TokenLayoutDestroy(&p->tokens));
  PetscCall(GridDestroy(&p->grid));
  PetscFunctionReturn(0);
}

PetscErrorCode ProblemRecordTrajectory(Problem *p, Trajectory *t) {
  const PetscInt S = p->settings.output.trajectory;
  PetscFunctionBeginUser;
  if (S == 0) PetscFunctionReturn(0);
  PetscCall(TrajectoryCreate(p->tokens.state, p->tokens.M, p->tokens.N, p->tokens.d, S, t));
  PetscCall(FlowRecord(&p->flow, t));
  PetscFunctionReturn(0);
}

PetscErrorCode GatherAll(Vec v, std::vector<double> *all) {
  VecScatter sc;
  Vec whole;
  PetscInt n;
  const PetscScalar *a;
  PetscFunctionBeginUser;
  PetscCall(VecScatterCreateToAll(v, &sc, &whole));
  PetscCall(VecScatterBegin(sc, v, whole, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sc, v, whole, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGetSize(whole, &n));
  PetscCall(VecGetArrayRead(whole, &a));
  all->assign(a, a + n);
  PetscCall(VecRestoreArrayRead(whole, &a));
  PetscCall(VecScatterDestroy(&sc));
  PetscCall(VecDestroy(&whole));
  PetscFunctionReturn(0);
}

PetscErrorCode SetFromAll(Vec v, const std::vector<double> &all) {
  PetscInt lo, hi, n;
  PetscScalar *a;
  PetscFunctionBeginUser;
  PetscCall(VecGetSize(v, &n));
  PetscCheck((size_t)n == all.size(), PetscObjectComm((PetscObject)v), PETSC_ERR_ARG_SIZ,
             "%zu entries for a vector of %" PetscInt_FMT, all.size(), n);
  PetscCall(VecGetOwnershipRange(v, &lo, &hi));
  PetscCall(VecGetArray(v, &a));
  for (PetscInt i = lo; i < hi; ++i) a[i - lo] = all[i];
  PetscCall(VecRestoreArray(v, &a));
  PetscFunctionReturn(0);
}

PetscErrorCode ProblemDraw(Problem *p, const InitSettings &s, std::uint64_t seed) {
  PetscFunctionBeginUser;
  PetscCall(HeadsInitialize(&p->heads, s, seed, p->heads.theta));
  if (p->neurons.theta) PetscCall(NeuronsInitialize(p->neurons, s, seed, p->neurons.theta));
  PetscFunctionReturn(0);
}

PetscErrorCode ProblemSetHeads(Problem *p) {
  PetscFunctionBeginUser;
  PetscCall(HeadsGather(&p->heads));
  if (p->neurons.theta) PetscCall(NeuronsGather(&p->neurons));
  PetscFunctionReturn(0);
}

void ProblemSetBatch(Problem *p, PetscInt step) {
  const PetscInt models = p->heads.seeds, M = p->tokens.M / models, b = p->settings.train.batch;
  if (step < 0 || b == 0 || b >= M) {
    p->active.assign((size_t)(M * models), 1);
    return;
  }
  // The first b of a Fisher-Yates shuffle drawn from (train.seed, step).
  std::vector<PetscInt> order((size_t)M);
  for (PetscInt m = 0; m < M; ++m) order[m] = m;
  Stream r(p->settings.train.seed, kBatch, (std::uint64_t)step);
  for (PetscInt i = 0; i < b; ++i) std::swap(order[i], order[i + (PetscInt)(r.uniform() * (double)(M - i))]);
  p->active.assign((size_t)(M * models), 0);
  for (PetscInt s = 0; s < models; ++s)
    for (PetscInt i = 0; i < b; ++i) p->active[s * M + order[i]] = 1;
}

PetscErrorCode ProblemEvaluate(Problem *p, PetscBool gradient) {
  PetscFunctionBeginUser;
  PetscCall(VecCopy(p->x0, p->x1));
  PetscCall(FlowForward(&p->flow, p->x1));
  const bool weights = gradient && p->tokens.weighted();
  const PetscInt models = p->velocity.seeds; // an ensemble's (0: one model)
  if (models > 0) p->risks.resize((size_t)models);
  PetscCall(RiskEvaluate(p->tokens, p->targets, &p->active, p->x1, gradient ? p->adjoint : nullptr, &p->risk,
                         weights ? &p->weight_grad : nullptr, models > 0 ? &p->risks : nullptr));
  if (models > 0) { // the mean over the models in the batch
    const PetscInt M = p->tokens.M / models;
    double sum = 0;
    PetscInt in = 0;
    for (PetscInt s = 0; s < models; ++s)
      if (std::any_of(p->active.begin() + s * M, p->active.begin() + (s + 1) * M, [](char a) { return a != 0; }))
        sum += p->risks[(size_t)s], ++in;
    p->risk = in ? sum / (double)in : NAN;
  }
  if (gradient) {
    PetscCall(FlowAdjoint(&p->flow, p->adjoint, p->grad));
    for (size_t e = 0; weights && e < p->weight_grad.size(); ++e) p->weight_grad[e] += p->flow.weight_grad[e];
    PetscCall(VecScale(p->grad, (PetscScalar)GradientScale(p->settings.model, p->heads.L, p->heads.H / p->heads.seeds)));
    if (p->neuron_grad) PetscCall(VecScale(p->neuron_grad, (PetscScalar)NeuronGradientScale(p->settings.model, p->neurons.L)));
    // On the sphere the input is normalized first: dR/dx(0) through it, the
    // part tangent to the sphere (the same for the L-layer model and the limit).
    if (p->settings.model.norm == TokenNorm::sphere) PetscCall(SphereTangent(p->x0, p->tokens.d, p->adjoint));
  }
  PetscFunctionReturn(0);
}

} // namespace mft
