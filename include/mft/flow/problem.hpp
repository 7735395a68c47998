// One problem: data, targets, heads and the flow that maps them to a risk.
//
// Creation reads or generates the data (the same on any number of ranks),
// makes the targets with a teacher (a random model of the same shape with its
// own seed, so that the global minimum of the risk is zero) or reads them,
// and draws the initial heads.
#pragma once

#include "mft/flow/cost.hpp"
#include "mft/flow/flow.hpp"
#include "mft/flow/risk.hpp"

namespace mft {

struct Problem {
  Settings settings;
  Grid grid;
  TokenLayout tokens;
  Heads heads;
  Velocity velocity;
  Flow flow;
  Vec x0 = nullptr;     // input tokens x(0)
  Targets targets;
  Vec x1 = nullptr;     // output tokens x(1) at the current heads
  Vec adjoint = nullptr;// dR/dx(1), then dR/dx(0) after an adjoint solve
  Vec grad = nullptr;   // g = L H dR/dtheta (docs/model.md, 'The gradient: a backward adjoint')
  // With weighted tokens (tokens.weights), dR/dw after an adjoint solve:
  // (M, N) on every rank, the risk's own part and the flow's.
  std::vector<double> weight_grad;
  double risk = 0;
  StepCost predicted;   // the cost model's training step on this grid
  std::vector<char> active; // sequences of the current mini-batch (all by default)
  // An ensemble's models folded into this one-rank problem (ensemble.hpp;
  // their count is velocity.seeds, heads.seeds): model s holds sequences
  // s M .. s M + M - 1 and heads s H .. s H + H - 1 of each layer; `risks`
  // each model's risk, `risk` their mean over the models in the batch.
  std::vector<double> risks;
  // MLP sublayers (model.mlp_width > 0): the neurons, the sublayer's
  // workspace, and g_m = L^a' m^c' dR/dneurons after an adjoint solve.
  Neurons neurons;
  Mlp mlp;
  Vec neuron_grad = nullptr;

  Problem() = default;
  Problem(const Problem &) = delete; // the flow points into it
  Problem &operator=(const Problem &) = delete;
};

// Builds everything from the settings (s is completed from a data file).
// Create and Destroy are collective on comm.
PetscErrorCode ProblemCreate(MPI_Comm comm, const Settings &s, Problem *p);
PetscErrorCode ProblemDestroy(Problem *p);

// An ensemble's problem on this rank alone (ensemble.hpp): the models of
// `seeds` (model s drawn from seeds[s] as ProblemCreate draws init.seed),
// folded on the same data and targets, which are made once (by a problem of
// the first seed). Not collective (PETSC_COMM_SELF).
PetscErrorCode ProblemCreateModels(const Settings &s, const std::vector<std::uint64_t> &seeds, Problem *p);

// Forward pass at the current heads (p->heads.theta): x1 and risk; with
// gradient, also the adjoint solve: grad, and adjoint = dR/dx(0) (with
// model.norm = sphere, its part tangent to the sphere at x(0): the gradient
// through the input's normalization), and with weighted tokens weight_grad.
// Collective on the problem's comm.
PetscErrorCode ProblemEvaluate(Problem *p, PetscBool gradient);

// With output.trajectory = S > 0, the solves that follow record the tokens
// (and adjoint) at S + 1 depths into t (destroyed by the caller, after the
// run file is written); with S = 0, nothing.
// Collective on the problem's comm.
PetscErrorCode ProblemRecordTrajectory(Problem *p, Trajectory *t);

// The whole of a distributed vector, on every rank.
// Collective on v's comm.
PetscErrorCode GatherAll(Vec v, std::vector<double> *all);

// The inverse of GatherAll: the owned entries of v from the whole of it
// (all of v, in its global order, on every rank).
// Not collective: each rank sets the entries it owns.
PetscErrorCode SetFromAll(Vec v, const std::vector<double> &all);

// A model's parameters on every rank: every head (theta's natural order) and
// every neuron of its MLP sublayers (empty: none), as SetFromAll takes them.
struct ModelParams {
  std::vector<double> heads, neurons;
};

// Draws the model's parameters from `seed` under the law s: every head
// (HeadsInitialize) and, with MLP sublayers, every neuron (NeuronsInitialize);
// ProblemSetHeads then makes them the model's.
// Not collective: each rank draws what it owns.
PetscErrorCode ProblemDraw(Problem *p, const InitSettings &s, std::uint64_t seed);

// After a change of p->heads.theta (or p->neurons.theta): refresh the replicas.
// Collective on the problem's comm (HeadsGather).
PetscErrorCode ProblemSetHeads(Problem *p);

// The mini-batch of training step `step` (train.batch sequences drawn from
// train.seed and the step, the same on any number of ranks; an ensemble's
// models each the same); step < 0 or train.batch = 0: every sequence.
// Not collective: every rank draws the same batch.
void ProblemSetBatch(Problem *p, PetscInt step);

} // namespace mft
