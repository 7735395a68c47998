// An ensemble: S independent models of one set of settings, model i drawn
// from seed first + i (mft train: init.seed + i), trained together on the
// same data (docs/model.md, 'Ensembles'). Where the trained model is random
// (the diffusive regime) its questions are about its law, and a law takes
// thousands of seeds: an ensemble trains them as one solve.
//
// The models are partitioned over the ranks in consecutive blocks
// (split(S, P, rank)); a rank folds its block into one problem of its own
// (ProblemCreateModels: model s's sequences and heads side by side, one TS
// and one adjoint for all of them), whose kernels take kLanes models at once
// (attention_seeds.hpp). Nothing crosses the network but the sums the
// progress table and the files need. A model is computed in the same
// operations whatever its lane, block or rank: an ensemble's model i is
// bitwise the same on any number of ranks, and equal to `mft train
// --init.seed <first + i>` alone to round-off (its kernels are the plain
// kernel's arithmetic, not the blocked kernels').
//
// With MLP sublayers each model has its own neurons (neurons.hpp, folded
// beside the others' in every layer), drawn from its seed.
// Each model has its own risk, gradient, optimizer moments and divergence:
// a model whose risk or gradient is not finite is flagged at that step,
// leaves the batch and keeps its heads from then on (kept and counted, not
// dropped); the others go on.
#pragma once

#include "mft/flow/problem.hpp"

#include <cstdint>
#include <vector>

namespace mft {

struct Ensemble {
  MPI_Comm comm = MPI_COMM_NULL;
  PetscInt S = 0;                 // models over every rank
  std::uint64_t first = 0;        // model i's seed: first + i
  Range block;                    // this rank's models
  Problem p;                      // this rank's block folded (PETSC_COMM_SELF)
  std::vector<PetscInt> diverged; // per model of the block: the step it diverged at, -1 while it has not
  std::vector<double> gnorm, hnorm; // per model of the block: |g|, and its largest head's norm, at the last evaluation

  Ensemble() = default;
  Ensemble(const Ensemble &) = delete; // the problem's flow points into it
  Ensemble &operator=(const Ensemble &) = delete;
  PetscInt models() const { return block.size(); }
};

// The bytes a rank needs for `models` models of s (its state, the forward's
// states kept for the adjoint and the TS trajectory, heads, gradients and
// moments, history), as EnsembleCreate prices them. Not collective.
double EnsembleBytes(const Settings &s, PetscInt models);

// S models of s, seeds first .. first + S - 1, on comm. Refuses, before any
// allocation, fewer models than ranks and a block beyond a rank's share of
// its node's memory. Create and Destroy are collective on comm.
PetscErrorCode EnsembleCreate(MPI_Comm comm, const Settings &s, PetscInt S, std::uint64_t first, Ensemble *e);
PetscErrorCode EnsembleDestroy(Ensemble *e);

// The batch of training step `step` (ProblemSetBatch, -1: all) without the
// models that diverged. Not collective.
void EnsembleSetBatch(Ensemble *e, PetscInt step);

// The risk of every model in the batch (p.risks) and, with `gradient`, its
// gradient, |g| and largest head norm; a model whose risk or gradient is not
// finite is flagged as diverged at `step`, its gradient zeroed. *live: the
// models not diverged, over every rank. Collective on e->comm (the count).
PetscErrorCode EnsembleEvaluate(Ensemble *e, PetscInt step, bool gradient, PetscInt *live);

// x(1) of every model of the block at its current heads on other data: the
// sequences of `probe` (the same model's settings, other data), (models, M,
// N, d) row-major, model by model; NaN for a diverged model. Collective on
// e's comm only in that every rank calls it (the problem is the rank's own).
// With inputs, also the probe sequences x(0), (M, N, d).
PetscErrorCode EnsembleProbe(const Ensemble &e, const Settings &probe, std::vector<double> *x1,
                             std::vector<double> *inputs = nullptr);

// Model i's heads (all L H of them, a model's own order), on every rank
// (its owner's broadcast). Collective on e's comm.
PetscErrorCode EnsembleModelHeads(const Ensemble &e, PetscInt i, std::vector<double> *heads);

// The folded flat head (theta's head index) of head h of layer l of model s
// of the block. Not collective.
PetscInt EnsembleHead(const Ensemble &e, PetscInt s, PetscInt l, PetscInt h);

// The folded flat neuron (MLP sublayers: the neurons' unit index) of neuron j
// of layer l of model s of the block, and the model of a folded neuron. Not
// collective.
PetscInt EnsembleNeuron(const Ensemble &e, PetscInt s, PetscInt l, PetscInt j);
PetscInt EnsembleNeuronModel(const Ensemble &e, PetscInt flat);

} // namespace mft
