// TS callbacks (named after what PETSc calls them for) and the two solves.
#include "mft/flow/flow.hpp"

// PetscObjectStateGet is public API, but 3.18 declares it in this header only.
#include <petsc/private/petscimpl.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

namespace mft {

static PetscErrorCode StepLayer(TS ts, const Flow *flow, PetscInt *l) {
  const PetscInt L = flow->L;
  PetscFunctionBeginUser;
  if (flow->scheme.shared) { // one ensemble of heads at every depth
    *l = 0;
    PetscFunctionReturn(0);
  }
  PetscCall(TSGetStepNumber(ts, l));
  PetscCheck(*l >= 0 && *l < L, PetscObjectComm((PetscObject)ts), PETSC_ERR_PLIB,
             "time step %" PetscInt_FMT " is not a layer of the %" PetscInt_FMT "-layer model", *l, L);
  PetscFunctionReturn(0);
}

// The Euler step h of a sphere's retracted step; 0 for the adaptive solve's P v.
static double SphereH(const Flow *f) { return f->scheme.adaptive ? 0.0 : 1.0 / (double)f->L; }

// Where a sphere's step keeps v: the forward's copy of the step (L steps), or the stage's.
static Vec SphereVelocity(const Flow *f, PetscInt step) { return f->scheme.adaptive ? f->read : f->velocities[step]; }

// The step of the block's y = x + h f_a(x): the Euler model's 1/L, 0 for the adaptive solve.
static double BlockH(const Flow *f) { return f->scheme.adaptive ? 0.0 : 1.0 / (double)f->L; }

// Where the block keeps step's y: the forward's copy (Euler), or the stage's.
static Vec BlockMid(const Flow *f, PetscInt step) { return f->scheme.adaptive ? f->mid : f->mids[step]; }

// Where the sphere's sublayer keeps step's v_m: the forward's copy (Euler), or the stage's.
static Vec MlpVelocity(const Flow *f, PetscInt step) {
  return f->scheme.adaptive ? f->mlp_velocities[0] : f->mlp_velocities[step];
}

// The MLP sublayer's read of y: y itself, or n(y) with pre-LN.
static PetscErrorCode BlockRead(Flow *f, Vec y, Vec *read) {
  PetscFunctionBeginUser;
  *read = y;
  if (f->norm != TokenNorm::pre) PetscFunctionReturn(0);
  PetscCall(NormRead(y, f->d, f->mid_read));
  *read = f->mid_read;
  PetscFunctionReturn(0);
}

static PetscErrorCode AttentionFunction(TS ts, Flow *flow, PetscInt l, Vec x, Vec f) {
  PetscInt step;
  PetscFunctionBeginUser;
  switch (flow->norm) {
  case TokenNorm::none:
    PetscCall(VelocityEvaluate(flow->velocity, l, x, f));
    break;
  case TokenNorm::pre:
    PetscCall(NormRead(x, flow->d, flow->read));
    PetscCall(VelocityEvaluate(flow->velocity, l, flow->read, f));
    break;
  case TokenNorm::sphere:
    PetscCall(TSGetStepNumber(ts, &step));
    PetscCall(VelocityEvaluate(flow->velocity, l, x, SphereVelocity(flow, step)));
    PetscCall(SphereStep(x, SphereVelocity(flow, step), flow->d, SphereH(flow), f));
    break;
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode RHSFunction(TS ts, PetscReal depth, Vec x, Vec f, void *ctx) {
  Flow *flow = (Flow *)ctx;
  PetscInt l, step;
  Vec y, read;
  PetscFunctionBeginUser;
  PetscCall(StepLayer(ts, flow, &l));
  PetscCall(AttentionFunction(ts, flow, l, x, f));
  if (!flow->mlp) PetscFunctionReturn(0);
  PetscCall(TSGetStepNumber(ts, &step));
  y = BlockMid(flow, step);
  PetscCall(VecWAXPY(y, BlockH(flow), f, x));
  if (flow->norm == TokenNorm::sphere) { // F = f + (R(y + h P_y v_m) - y) / h
    const Vec v = MlpVelocity(flow, step);
    PetscCall(VecSet(v, 0.0));
    PetscCall(MlpEvaluate(flow->mlp, l, y, v));
    PetscCall(SphereStep(y, v, flow->d, SphereH(flow), flow->mlp_step));
    PetscCall(VecAXPY(f, 1.0, flow->mlp_step));
    PetscFunctionReturn(0);
  }
  PetscCall(BlockRead(flow, y, &read));
  PetscCall(MlpEvaluate(flow->mlp, l, read, f));
  PetscFunctionReturn(0);
}

// The transposes' point: the velocity's state of layer l (at n(x) for pre),
// and what the normalization's transposes read.
static PetscErrorCode Prepare(TS ts, Flow *flow, PetscInt l, Vec x) {
  PetscFunctionBeginUser;
  flow->lam_id = 0;
  flow->block_id = 0;
  if (flow->mlp) PetscCall(TSGetStepNumber(ts, &flow->step));
  if (flow->mlp && flow->scheme.adaptive) PetscCall(VecCopy(x, flow->mid)); // h = 0: y = x
  if (flow->mlp && flow->scheme.adaptive && flow->norm == TokenNorm::sphere) { // the stage's v_m
    PetscCall(VecSet(MlpVelocity(flow, 0), 0.0));
    PetscCall(MlpEvaluate(flow->mlp, l, x, MlpVelocity(flow, 0)));
  }
  if (flow->norm == TokenNorm::none) {
    PetscCall(VelocityPrepare(flow->velocity, l, x));
    PetscFunctionReturn(0);
  }
  PetscCall(TSGetStepNumber(ts, &flow->step));
  PetscCall(VecCopy(x, flow->state));
  if (flow->norm == TokenNorm::pre) {
    PetscCall(NormRead(x, flow->d, flow->read));
    PetscCall(VelocityPrepare(flow->velocity, l, flow->read));
    PetscFunctionReturn(0);
  }
  if (flow->scheme.adaptive) PetscCall(VelocityEvaluate(flow->velocity, l, x, flow->read)); // the stage's v
  PetscCall(VelocityPrepare(flow->velocity, l, x));
  PetscFunctionReturn(0);
}

// The factor of the weights' gradient of the stage at `depth` (Flow::stage):
// what PETSc's adjoint step multiplies that stage's state part by.
static PetscErrorCode StageFactor(TS ts, Flow *flow, PetscReal depth) {
  PetscInt stages, found = -1, count = 0;
  const PetscReal *A, *b, *c;
  PetscBool fsal;
  PetscReal t, h;
  PetscFunctionBeginUser;
  if (!flow->scheme.adaptive) {
    flow->stage = 1.0 / (double)flow->L; // the model's Euler step, exactly
    PetscFunctionReturn(0);
  }
  PetscCall(TSRKGetTableau(ts, &stages, &A, &b, &c, nullptr, nullptr, nullptr, &fsal));
  PetscCall(TSGetTime(ts, &t));
  PetscCall(TSGetTimeStep(ts, &h));
  const double at = 1.0 - (depth - t) / h; // the adjoint's stage depth is t + h (1 - c_i)
  for (PetscInt i = 0; i < stages - (fsal ? 1 : 0); ++i) // (a last FSAL stage is not taken back)
    if (std::fabs(c[i] - at) < 1e-6) found = i, ++count;
  PetscCheck(count == 1, PetscObjectComm((PetscObject)ts), PETSC_ERR_SUP,
             "the weights' gradient needs the Runge-Kutta stage at depth %g, and the tableau has %" PetscInt_FMT
             " there: use another -ts_rk_type", (double)depth, count);
  flow->stage = b[found] != 0 ? -h * b[found] : -h;
  PetscFunctionReturn(0);
}

static PetscErrorCode RHSJacobian(TS ts, PetscReal depth, Vec x, Mat A, Mat B, void *ctx) {
  Flow *flow = (Flow *)ctx;
  PetscInt l;
  PetscFunctionBeginUser;
  PetscCall(StepLayer(ts, flow, &l));
  PetscCall(Prepare(ts, flow, l, x));
  if (flow->velocity->tokens->weighted()) PetscCall(StageFactor(ts, flow, depth));
  PetscFunctionReturn(0);
}

static PetscErrorCode RHSJacobianP(TS ts, PetscReal depth, Vec x, Mat A, void *ctx) {
  Flow *flow = (Flow *)ctx;
  PetscInt l;
  PetscFunctionBeginUser;
  PetscCall(StepLayer(ts, flow, &l));
  // RHSJacobian has gathered this layer's state already when PETSc keeps its order.
  if (flow->velocity->layer != l) PetscCall(Prepare(ts, flow, l, x));
  PetscFunctionReturn(0);
}

// The sphere's transpose parts for lam, unless they are made from it already.
static PetscErrorCode SphereTranspose(Flow *flow, Vec lam) {
  PetscObjectId id;
  PetscObjectState state;
  PetscFunctionBeginUser;
  PetscCall(PetscObjectGetId((PetscObject)lam, &id));
  PetscCall(PetscObjectStateGet((PetscObject)lam, &state));
  if (flow->lam_id == id && flow->lam_state == state) PetscFunctionReturn(0);
  PetscCall(SphereStepTranspose(flow->state, SphereVelocity(flow, flow->step), flow->d, SphereH(flow), lam,
                                flow->into_velocity, flow->rest));
  flow->lam_id = id, flow->lam_state = state;
  PetscFunctionReturn(0);
}

// The prepared stage's (df/dw)^T lam into Flow::weight_grad, with its factor.
static void AddWeightGradient(Flow *flow) {
  const TokenLayout &t = *flow->velocity->tokens;
  const std::vector<double> &g = flow->velocity->layer_weight_grad;
  double *at = flow->weight_grad.data() + t.seqs.begin * t.N;
  for (size_t e = 0; e < g.size(); ++e) at[e] += flow->stage * g[e];
}

// The block's transpose parts for lam (FlowAddMlp), unless made from it already:
// mu and the neurons' part at the prepared step's y, lam_attention = lam + h mu.
static PetscErrorCode BlockTranspose(Flow *flow, Vec lam, Vec *into_attention) {
  PetscObjectId id;
  PetscObjectState state;
  Vec y, read;
  PetscFunctionBeginUser;
  *into_attention = lam;
  if (!flow->mlp) PetscFunctionReturn(0);
  *into_attention = flow->lam_attention;
  PetscCall(PetscObjectGetId((PetscObject)lam, &id));
  PetscCall(PetscObjectStateGet((PetscObject)lam, &state));
  if (flow->block_id == id && flow->block_state == state) PetscFunctionReturn(0);
  y = BlockMid(flow, flow->step);
  if (flow->norm == TokenNorm::sphere) { // mu = rest + (dv_m/dy)^T into, the sphere step's split
    PetscCall(SphereStepTranspose(y, MlpVelocity(flow, flow->step), flow->d, SphereH(flow), lam, flow->mlp_into,
                                  flow->mlp_rest));
    PetscCall(MlpReverse(flow->mlp, flow->velocity->layer, y, flow->mlp_into, flow->mu));
    PetscCall(VecAXPY(flow->mu, 1.0, flow->mlp_rest));
  } else {
    PetscCall(BlockRead(flow, y, &read));
    PetscCall(MlpReverse(flow->mlp, flow->velocity->layer, read, lam,
                         flow->norm == TokenNorm::pre ? flow->mu_read : flow->mu));
    if (flow->norm == TokenNorm::pre) PetscCall(NormReadTranspose(y, flow->d, flow->mu_read, flow->mu));
  }
  PetscCall(VecWAXPY(flow->lam_attention, BlockH(flow), flow->mu, lam));
  flow->block_id = id, flow->block_state = state;
  PetscFunctionReturn(0);
}

static PetscErrorCode JacobianMultTranspose(Mat J, Vec lam_block, Vec out) {
  Flow *flow;
  Vec lam;
  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(J, &flow));
  PetscCall(BlockTranspose(flow, lam_block, &lam));
  switch (flow->norm) {
  case TokenNorm::none:
    PetscCall(VelocityReverse(flow->velocity, lam, out));
    break;
  case TokenNorm::pre:
    PetscCall(VelocityReverse(flow->velocity, lam, flow->rest));
    PetscCall(NormReadTranspose(flow->state, flow->d, flow->rest, out));
    break;
  case TokenNorm::sphere:
    PetscCall(SphereTranspose(flow, lam));
    PetscCall(VelocityReverse(flow->velocity, flow->into_velocity, out));
    PetscCall(VecAXPY(out, 1.0, flow->rest));
    break;
  }
  if (flow->mlp) PetscCall(VecAXPY(out, 1.0, flow->mu));
  if (flow->velocity->tokens->weighted()) AddWeightGradient(flow);
  PetscFunctionReturn(0);
}

static PetscErrorCode JacobianPMultTranspose(Mat Jp, Vec lam_block, Vec out) {
  Flow *flow;
  Vec lam;
  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(Jp, &flow));
  PetscCall(BlockTranspose(flow, lam_block, &lam));
  if (flow->norm == TokenNorm::sphere) PetscCall(SphereTranspose(flow, lam));
  // TSRK1FE scales the parameter part of step n by its step, 1/L: the model's
  // Euler step is exactly that (the TS's own step carries round-off).
  PetscCall(VelocityReverseParameters(flow->velocity, flow->norm == TokenNorm::sphere ? flow->into_velocity : lam,
                                      1.0 / (double)flow->L));
  if (flow->mlp) MlpReverseParameters(flow->mlp, 1.0 / (double)flow->L);
  if (!flow->scheme.shared) { // a layer's heads are done: its bucket's sum starts once all its layers are in
    PetscCall(PetscLogEventBegin(MFT_EXCHANGE, 0, 0, 0, 0));
    PetscCall(HeadsGradientLayer(flow->velocity->heads, flow->velocity->layer));
    PetscCall(PetscLogEventEnd(MFT_EXCHANGE, 0, 0, 0, 0));
  }
  PetscCall(VecSet(out, 0.0)); // the stand-in's entry: the gradient is in the heads' accumulator
  PetscFunctionReturn(0);
}

// The trajectory's slice at this point of a solve, or -1: the Euler model's
// steps n = k L / S, or the adaptive solve's steps that landed on depth k / S
// (step 0 is depth 0: PETSc's adjoint leaves the time of its last step there).
static PetscInt TrajectorySlice(const Flow *f, PetscInt step, PetscReal depth) {
  const PetscInt S = f->trajectory->S;
  if (step == 0) return 0;
  if (f->scheme.adaptive) {
    const PetscInt k = (PetscInt)std::lround(depth * (PetscReal)S);
    return std::fabs(depth - (PetscReal)k / (PetscReal)S) <= 1e-9 ? k : -1;
  }
  const PetscInt stride = f->L / S;
  return step % stride == 0 ? step / stride : -1;
}

static PetscErrorCode MonitorTrajectory(TS ts, PetscInt step, PetscReal depth, Vec x, void *ctx) {
  Flow *flow = (Flow *)ctx;
  PetscFunctionBeginUser;
  if (!flow->trajectory) PetscFunctionReturn(0);
  const PetscInt k = TrajectorySlice(flow, step, depth);
  if (k >= 0) PetscCall(TrajectoryRecord(flow->trajectory, k, x, false));
  PetscFunctionReturn(0);
}

static PetscErrorCode MonitorTrajectoryAdjoint(TS ts, PetscInt step, PetscReal depth, Vec x, PetscInt ncost, Vec *lam,
                                               Vec *mu, void *ctx) {
  Flow *flow = (Flow *)ctx;
  PetscFunctionBeginUser;
  if (flow->visit) PetscCall(flow->visit(step, lam));
  if (!flow->trajectory) PetscFunctionReturn(0);
  const PetscInt k = TrajectorySlice(flow, step, depth);
  if (k >= 0) PetscCall(TrajectoryRecord(flow->trajectory, k, lam[0], true));
  PetscFunctionReturn(0);
}

PetscErrorCode FlowRecord(Flow *f, Trajectory *t) {
  PetscFunctionBeginUser;
  f->trajectory = t;
  if (t && f->scheme.adaptive) {
    std::vector<PetscReal> depths((size_t)(t->S + 1));
    for (PetscInt k = 0; k <= t->S; ++k) depths[k] = t->depth(k);
    PetscCall(TSSetTimeSpan(f->ts, t->S + 1, depths.data()));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode FlowCreate(Velocity *v, PetscInt L, TokenNorm norm, const DepthScheme &scheme, Flow *f) {
  MPI_Comm comm = v->grid->comm;
  PetscInt nx, Nx;
  TSAdapt adapt;
  TSTrajectory trajectory;
  PetscFunctionBeginUser;
  f->velocity = v;
  f->L = L;
  f->scheme = scheme;
  f->norm = norm;
  f->d = v->tokens->d;
  if (norm != TokenNorm::none) {
    for (Vec *w : {&f->read, &f->state, &f->into_velocity, &f->rest}) PetscCall(VecDuplicate(v->tokens->state, w));
    if (norm == TokenNorm::sphere && !scheme.adaptive) PetscCall(VecDuplicateVecs(v->tokens->state, L, &f->velocities));
  }
  PetscCall(VecGetLocalSize(v->tokens->state, &nx));
  PetscCall(VecGetSize(v->tokens->state, &Nx));
  PetscCall(MatCreateShell(comm, nx, nx, Nx, Nx, f, &f->J));
  PetscCall(MatShellSetOperation(f->J, MATOP_MULT_TRANSPOSE, (void (*)(void))JacobianMultTranspose));
  PetscCall(VecCreateMPI(comm, 1, PETSC_DETERMINE, &f->sensitivity));
  PetscCall(MatCreateShell(comm, nx, 1, Nx, PETSC_DETERMINE, f, &f->Jp));
  PetscCall(MatShellSetOperation(f->Jp, MATOP_MULT_TRANSPOSE, (void (*)(void))JacobianPMultTranspose));

  PetscCall(TSCreate(comm, &f->ts));
  PetscCall(TSSetProblemType(f->ts, TS_NONLINEAR));
  PetscCall(TSSetRHSFunction(f->ts, nullptr, RHSFunction, f));
  PetscCall(TSSetRHSJacobian(f->ts, f->J, f->J, RHSJacobian, f));
  PetscCall(TSSetRHSJacobianP(f->ts, f->Jp, RHSJacobianP, f));
  if (scheme.adaptive) {
    // The mean-field reference: an embedded pair to a tight tolerance; the
    // options may change the pair or the tolerances.
    PetscCall(TSSetType(f->ts, TSRK));
    PetscCall(TSRKSetType(f->ts, TSRK5DP));
    PetscCall(TSSetTolerances(f->ts, scheme.atol, nullptr, scheme.rtol, nullptr));
    PetscCall(TSSetExactFinalTime(f->ts, TS_EXACTFINALTIME_MATCHSTEP));
    PetscCall(TSSetFromOptions(f->ts));
  } else {
    // Monitors and viewers (-ts_monitor, -ts_view) from the options; the scheme
    // itself is the model and is set after them.
    PetscCall(TSSetFromOptions(f->ts));
    PetscCall(TSSetType(f->ts, TSRK));
    PetscCall(TSRKSetType(f->ts, TSRK1FE));
    PetscCall(TSGetAdapt(f->ts, &adapt));
    PetscCall(TSAdaptSetType(adapt, TSADAPTNONE));
    PetscCall(TSSetExactFinalTime(f->ts, TS_EXACTFINALTIME_STEPOVER));
  }
  PetscCall(TSMonitorSet(f->ts, MonitorTrajectory, f, nullptr));
  PetscCall(TSAdjointMonitorSet(f->ts, MonitorTrajectoryAdjoint, f, nullptr));
  PetscCall(TSSetSaveTrajectory(f->ts));
  PetscCall(TSGetTrajectory(f->ts, &trajectory));
  PetscCall(TSTrajectorySetType(trajectory, f->ts, TSTRAJECTORYMEMORY));
  PetscFunctionReturn(0);
}

PetscErrorCode FlowAddMlp(Flow *f, Mlp *mlp, Vec neuron_grad) {
  const Vec state = f->velocity->tokens->state;
  PetscFunctionBeginUser;
  f->mlp = mlp;
  f->neuron_grad = neuron_grad;
  for (Vec *w : {&f->mid, &f->mid_read, &f->mu, &f->mu_read, &f->lam_attention}) PetscCall(VecDuplicate(state, w));
  if (!f->scheme.adaptive) PetscCall(VecDuplicateVecs(state, f->L, &f->mids));
  if (f->norm == TokenNorm::sphere) {
    for (Vec *w : {&f->mlp_into, &f->mlp_rest, &f->mlp_step}) PetscCall(VecDuplicate(state, w));
    PetscCall(VecDuplicateVecs(state, f->scheme.adaptive ? 1 : f->L, &f->mlp_velocities));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode FlowDestroy(Flow *f) {
  PetscFunctionBeginUser;
  for (Vec *w : {&f->mid, &f->mid_read, &f->mu, &f->mu_read, &f->lam_attention, &f->mlp_into, &f->mlp_rest, &f->mlp_step})
    PetscCall(VecDestroy(w));
  if (f->mids) PetscCall(VecDestroyVecs(f->L, &f->mids));
  if (f->mlp_velocities) PetscCall(VecDestroyVecs(f->scheme.adaptive ? 1 : f->L, &f->mlp_velocities));
  PetscCall(TSDestroy(&f->ts));
  PetscCall(MatDestroy(&f->J));
  PetscCall(MatDestroy(&f->Jp));
  PetscCall(VecDestroy(&f->sensitivity));
  for (Vec *w : {&f->read, &f->state, &f->into_velocity, &f->rest}) PetscCall(VecDestroy(w));
  if (f->velocities) PetscCall(VecDestroyVecs(f->L, &f->velocities));
  PetscFunctionReturn(0);
}

// The forward solve: a layer a step (the Euler model), or the adaptive reference's.
static PetscErrorCode Forward(Flow *f, Vec x) {
  PetscInt steps;
  TSTrajectory trajectory;
  PetscFunctionBeginUser;
  // The memory trajectory keeps the previous solve's stack: empty it.
  PetscCall(TSGetTrajectory(f->ts, &trajectory));
  PetscCall(TSTrajectoryReset(trajectory));
  // A reused TS is left at the first step with a negative step by the adjoint.
  PetscCall(TSSetTime(f->ts, 0.0));
  PetscCall(TSSetStepNumber(f->ts, 0));
  if (f->scheme.adaptive) {
    PetscReal depth;
    PetscCall(VelocityKeep(f->velocity, 0)); // its stages are not the steps' states
    PetscCall(TSSetTimeStep(f->ts, 1.0 / 64));
    PetscCall(TSSetMaxTime(f->ts, 1.0));
    PetscCall(TSSetMaxSteps(f->ts, 10000000));
    PetscCall(TSSolve(f->ts, x));
    PetscCall(TSGetStepNumber(f->ts, &f->steps));
    PetscCall(TSGetStepRejections(f->ts, &f->rejected));
    PetscCall(TSGetTime(f->ts, &depth));
    PetscCheck(std::fabs(depth - 1.0) < 1e-12, PetscObjectComm((PetscObject)f->ts), PETSC_ERR_NOT_CONVERGED,
               "the adaptive solve stopped at depth %g before 1", (double)depth);
    PetscFunctionReturn(0);
  }
  // The L layers' gathered states, kept for the adjoint (a layer is a step).
  PetscCall(VelocityKeep(f->velocity, f->scheme.shared ? 0 : f->L));
  PetscCall(TSSetTimeStep(f->ts, 1.0 / (PetscReal)f->L));
  PetscCall(TSSetMaxTime(f->ts, 1.0 + 0.5 / (PetscReal)f->L));
  PetscCall(TSSetMaxSteps(f->ts, f->L));
  PetscCall(TSSolve(f->ts, x));
  PetscCall(TSGetStepNumber(f->ts, &steps));
  f->steps = steps;
  PetscCheck(steps == f->L, PetscObjectComm((PetscObject)f->ts), PETSC_ERR_PLIB,
             "the forward solve took %" PetscInt_FMT " steps for %" PetscInt_FMT " layers", steps, f->L);
  PetscFunctionReturn(0);
}

// The weights' gradient summed over the ranks (each holds its stages' parts
// of its group's sequences).
static PetscErrorCode SumWeightGradient(Flow *f) {
  MPI_Comm comm = f->velocity->grid->comm;
  PetscFunctionBeginUser;
  PetscCheck(f->weight_grad.size() <= (size_t)INT_MAX, comm, PETSC_ERR_SUP,
             "the weights' gradient of %zu tokens is more than one message can carry", f->weight_grad.size());
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, f->weight_grad.data(), (int)f->weight_grad.size(), MPI_DOUBLE, MPI_SUM, comm));
  PetscFunctionReturn(0);
}

// The adjoint solve and the head gradients' sum (and the weights').
static PetscErrorCode Adjoint(Flow *f, Vec lam, Vec dtheta) {
  Heads &h = *f->velocity->heads;
  const TokenLayout &t = *f->velocity->tokens;
  PetscFunctionBeginUser;
  f->weight_grad.assign(t.weighted() ? (size_t)(t.M * t.N) : 0, 0.0);
  if (f->scheme.adaptive) { // the reference's adjoint of the state only
    PetscCall(VecSet(dtheta, 0.0));
    if (f->neuron_grad) PetscCall(VecSet(f->neuron_grad, 0.0));
    PetscCall(TSSetCostGradients(f->ts, 1, &lam, nullptr));
    PetscCall(TSAdjointSolve(f->ts));
  } else {
    PetscCall(HeadsGradientStart(&h));
    PetscCall(TSSetCostGradients(f->ts, 1, &lam, &f->sensitivity));
    PetscCall(TSAdjointSolve(f->ts));
    PetscCall(PetscLogEventBegin(MFT_EXCHANGE, 0, 0, 0, 0));
    PetscCall(HeadsReduceGradient(&h, dtheta));
    if (f->neuron_grad) PetscCall(NeuronsReduceGradient(f->mlp->neurons, f->neuron_grad));
    PetscCall(PetscLogEventEnd(MFT_EXCHANGE, 0, 0, 0, 0));
  }
  if (t.weighted()) PetscCall(SumWeightGradient(f));
  PetscFunctionReturn(0);
}

PetscErrorCode FlowForward(Flow *f, Vec x) {
  PetscFunctionBeginUser;
  PetscCall(PetscLogStagePush(MFT_FORWARD));
  const PetscErrorCode failed = Forward(f, x);
  PetscCall(PetscLogStagePop()); // also when it failed: the caller may go on (a study's next case)
  PetscCall(failed);
  PetscFunctionReturn(0);
}

PetscErrorCode FlowAdjoint(Flow *f, Vec lam, Vec dtheta) {
  PetscFunctionBeginUser;
  PetscCall(PetscLogStagePush(MFT_ADJOINT));
  const PetscErrorCode failed = Adjoint(f, lam, dtheta);
  PetscCall(PetscLogStagePop());
  PetscCall(failed);
  PetscFunctionReturn(0);
}

PetscErrorCode FlowAdjointStates(Flow *f, PetscInt K, Vec *lam, const AdjointVisit &visit) {
  PetscFunctionBeginUser;
  PetscCheck(!f->scheme.adaptive && !f->velocity->tokens->weighted(), PetscObjectComm((PetscObject)f->ts),
             PETSC_ERR_SUP, "the adjoints of several costs are the Euler model's of unweighted tokens");
  PetscCall(PetscLogStagePush(MFT_ADJOINT));
  f->visit = visit;
  PetscCall(TSSetCostGradients(f->ts, K, lam, nullptr));
  const PetscErrorCode failed = TSAdjointSolve(f->ts);
  f->visit = nullptr;
  PetscCall(PetscLogStagePop());
  PetscCall(failed);
  PetscFunctionReturn(0);
}

} // namespace mft
