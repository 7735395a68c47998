// The worst input (docs/model.md, 'The worst input'): seed 2 bounds the error
// of a finite model against the mean-field limit uniformly over a compact set
// of inputs, token measures. This searches that set, sequences of N tokens
// with every token in the ball |x_i| <= r (on the unit sphere for
// model.norm = sphere), or measures sum_j w_j delta_{a_j} of K weighted atoms
// there (worst.atoms), for the input that maximises
//
//   err(mu)^2 = sum_i w_i |x_i(1) - xbar_i(1)|^2,   xbar = mean of the search references' outputs,
//
// (w_i = 1/N for a sequence) by projected gradient ascent from many starts at
// once (the starts are the sequences of one batch: sequences never interact).
// The gradient is exact: one adjoint solve for the model, p(1) = 2 w_i (x(1)
// - xbar(1)), and one per search reference, p(1) = -2 w_i (x(1) - xbar(1)) /
// |A|, each giving J^T p(1) as its p(0) and, for a measure, its part of dF/dw
// (the flow's), to which the objective's own |x_i - xbar_i|^2 is added. A
// start's step is accepted when it raises its objective (the step then
// doubles), else halved. A measure's step moves its atoms along the gradient
// per unit of mass (the Wasserstein gradient) and its weights by the
// exponentiated gradient, w_j <- w_j exp(tau (dF/dw_j / F - 1)), renormalised
// (the Fisher-Rao gradient; docs/design.md, 'The worst input's search').
//
// No search can lose what a simpler one had: every search starts from the
// collapsed input too (every token at the best one-token input, which for
// model.norm = none is r v with v the top right singular vector of the
// one-token difference D = the model's map minus the search references'
// mean map: its figure is r sigma_max(D)), and from an earlier input
// (worst.start, a study's previous N) as it is and slightly perturbed.
//
// No figure inflated by its own search: with R >= 2 references the search
// maximises against the first half A (floor(R/2) of them) and the input found
// is scored on the other half B, which the search never saw. With |B| >= 2
// the score is the studies' corrected estimator (study_statistics.hpp),
//   e2 = sum_i w_i |x - mean_B x^b|^2 - floor2_B / |B|,  floor2_B = mean over pairs of 1/2 sum_i w_i |x^a - x^b|^2,
// clipped at 0. Every figure is a lower bound on the supremum: the search may
// miss the maximum.
#pragma once

#include "mft/flow/problem.hpp"

#include <string>
#include <vector>

namespace mft {

// One side of the comparison: a discrete model's settings (model.*) and its
// heads (and neurons), from a run file or checkpoint (file) or all of them in
// natural order on every rank (params).
struct WorstSide {
  Settings settings;
  std::string file;
  const ModelParams *params = nullptr; // a study's trained case: its heads and neurons
};

// An input: a sequence of n tokens (weights empty: 1/n each) or a measure of
// n weighted atoms.
struct WorstInput {
  std::vector<double> tokens;  // (n, d)
  std::vector<double> weights; // (n), summing to 1; empty: a sequence
  bool measure() const { return !weights.empty(); }
};

// The input `in` (of tokens in R^d) as a start of a search of n tokens (a
// sequence: each of its tokens repeated n / size times, n a multiple of its
// size; a measure is refused) or of n atoms (`measure`: a sequence's tokens
// with weight 1 / size, or the measure itself, its heaviest atom split in
// two halves until there are n; n below its size is refused). The same
// measure, so the same figure. A refusal names `what`.
// Not collective (comm carries the refusal).
PetscErrorCode WorstInputAs(MPI_Comm comm, const WorstInput &in, PetscInt d, PetscInt n, bool measure,
                            const std::string &what, WorstInput *out);

// A start of its own for each model (the collapsed input, an earlier one):
// its name and every model's input of the search's size.
struct ModelStart {
  std::string name;
  std::vector<WorstInput> inputs;
};

// The starts of each model from an earlier input, from[j] for model j (a
// worst.start, a study's previous N): "start", that input taken to the
// search's size (WorstInputAs) and into the set searched
// (WorstProjectStart), and "start+noise", each of its coordinates moved by
// 0.01 r N(0, 1) and brought back into the domain (copies of one token can
// then part). A model without one (from[j] empty) has its `collapsed` input
// there instead; no model with one: no starts. Collective on comm.
PetscErrorCode WorstStartsFrom(MPI_Comm comm, const Settings &s, PetscInt d, const std::vector<WorstInput> &from,
                               const std::vector<WorstInput> &collapsed, std::vector<ModelStart> *starts);

// The input of an earlier search's result file (mft worst: /worst/tokens, or
// /worst/atoms and /worst/weights).
// Collective on comm.
PetscErrorCode WorstInputRead(MPI_Comm comm, const std::string &path, PetscInt d, WorstInput *in);

struct WorstResult {
  PetscInt N = 0, d = 0, starts = 0, best = 0;   // N: tokens or atoms; best: the start whose search objective is largest
  bool measure = false;                          // a measure of N weighted atoms (weights), or a sequence of N tokens
  std::vector<std::string> start_names;          // "discrete/0", ..., "random/7", "collapsed", "start", "start+noise"
  std::vector<double> tokens;                    // the worst input found, (N, d): its tokens or atoms
  std::vector<double> weights;                   // a measure's weights, (N)
  std::vector<double> output;                    // the model's x(1) there, (N, d)
  std::vector<double> reference_output;          // the mean of the search references' x(1) there, (N, d)
  std::vector<double> heldout_output;            // the mean of the held-out references' x(1) (empty: none)
  std::vector<double> objective;                 // the best raw err before the search and after each iteration
  std::vector<double> start_err;                 // each start's raw err at its end (NaN: not ascended)
  // At the input found, per held-out reference b: sum_i w_i |x - x^b|^2; per
  // pair a < b of them: 1/2 sum_i w_i |x^a - x^b|^2 (for the studies' jackknife).
  std::vector<double> heldout_e2, heldout_pairs;
  double initial = 0;        // the best raw err of the starts before the search
  double collapsed = NAN;    // the collapsed start's raw err (the one-token figure)
  double raw = 0;            // err against the search references at the input found (what was maximised)
  double heldout_raw = NAN;  // err against the mean of the held-out references
  double floor = NAN;        // the held-out references' own spread, (floor2_B)^(1/2)
  double err = 0;            // the figure: cross-fitted and corrected (|B| >= 2), cross-fitted raw (|B| = 1), or raw
  std::string estimator;     // "cross-fit corrected", "cross-fit raw" or "raw (search references only)"
  PetscInt search_references = 0, heldout_references = 0;
  PetscInt iterations = 0, evaluations = 0; // objective evaluations with their gradient
  double seconds = 0;        // of the whole search (every model searched with it)
  // worst.check: the search again with twice the starts and steps; its raw
  // figure, and the relative gain raw_check / raw - 1.
  double check_raw = NAN, check_gain = NAN;
  WorstInput input() const { return WorstInput{tokens, weights}; }
};

// Every token of x (tokens in R^d, in a row) brought into the search's
// domain: the ball |x_i| <= worst.radius (onto its surface), or with
// model.norm = sphere the unit sphere.
// Not collective.
void WorstProject(const Settings &s, PetscInt d, std::vector<double> *x);

// Collective on comm (rank 0 prints). A start taken into the set searched
// (WorstProject), and said so when a token moved by more than round-off.
PetscErrorCode WorstProjectStart(MPI_Comm comm, const Settings &s, PetscInt d, std::vector<double> *x);

// The common starts of a search of n tokens or atoms in R^d: study.probe_M
// sequences of each study.probes family (the studies' probe sequences, of n
// tokens; a measure's weights 1/n), then worst.starts random ones, each token
// uniform in the ball (a measure's weights a Dirichlet(1) draw); every token
// outside the ball is brought to its surface (on the sphere with model.norm
// = sphere). (S, n, d) row-major and (S, n) weights (measures), the same on
// every rank.
// Not collective: every rank draws the same starts.
std::vector<double> WorstStarts(const Settings &s, PetscInt n, PetscInt d, bool measure,
                                std::vector<std::string> *names, std::vector<double> *weights);

// The iterations of a search: worst.steps; a measure search (worst.atoms >
// 0), whose weights move too, takes twice the default when worst.steps is
// not given, and so does the sequence search that starts it in mft worst
// (at 100 the budget check gained above 1% on 2 of 8 pairs of small models,
// at 200 at most 0.82% on 9). Not collective.
PetscInt WorstSteps(const Settings &s);

// Checked before a search starts (an error naming the sizes): every
// reference runs every model's starts (`own` of them each besides the common
// ones), a vector PETSc must index; every rank holds all of their inputs,
// gradients and outputs, and each side's states along depth are shared by
// the ranks: together within the node's available memory.
// Collective on comm (the node's memory).
PetscErrorCode WorstSearchFits(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &models,
                               const std::vector<WorstSide> &references, PetscInt own);

// Searches for the worst input of each of `models` against the same
// `references` (worst.* of s: radius, starts, keep, steps, seed, log_every,
// crossfit, atoms, check; data.N tokens), all in one batch: each reference
// runs every model's starts at once. Besides the common starts, each model
// starts from its collapsed input and, when `from` holds one for it
// (from[j] not empty), from that input (WorstInputAs) and a perturbation of
// it. Every start is evaluated; the worst.keep best of each model's (all
// when 0) are ascended. With worst.crossfit, the references are split into
// search (A) and held-out (B) halves as above; without, all of them are
// searched against and err is the raw figure. Progress on rank 0 every
// worst.log_every iterations, with an ETA, when `progress` is not empty
// (its text leads each line).
// Collective on comm.
PetscErrorCode WorstSearch(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &models,
                           const std::vector<WorstSide> &references, const std::string &progress,
                           std::vector<WorstResult> *results, const std::vector<WorstInput> &from = {});

// The search objective err^2 of every start and its gradients dF/dx and (a
// measure: weights given, (models S, n)) dF/dw, at the inputs x (every
// model's S starts in turn, (models S, n, d)): what the ascent uses, for
// checks against finite differences.
// Collective on comm.
PetscErrorCode WorstObjective(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &models,
                              const std::vector<WorstSide> &references, const std::vector<double> &x,
                              const std::vector<double> &weights, std::vector<double> *F, std::vector<double> *G,
                              std::vector<double> *GW);

} // namespace mft
