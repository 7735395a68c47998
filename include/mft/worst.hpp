// The worst input (docs/model.md, 'The worst input'): seed 2 bounds the error
// of a finite model against the mean-field limit uniformly over a compact set
// of inputs. This searches that set, sequences of N tokens with every token
// in the ball |x_i| <= r, for the input that maximises
//
//   err(x0)^2 = (1/N) sum_i |x_i(1) - xbar_i(1)|^2,   xbar = mean of the search references' outputs,
//
// by projected gradient ascent from many starts at once (the starts are the
// sequences of one batch: sequences never interact). The gradient is exact:
// one adjoint solve for the model, p(1) = (2/N)(x(1) - xbar(1)), and one per
// search reference, p(1) = -(2/N)(x(1) - xbar(1)) / |A|, each giving J^T p(1)
// as its p(0). A start's step is accepted when it raises its objective
// (the step then doubles), else halved.
//
// No figure inflated by its own search: with R >= 2 references the search
// maximises against the first half A (floor(R/2) of them) and the input found
// is scored on the other half B, which the search never saw. With |B| >= 2
// the score is the studies' corrected estimator (study_statistics.hpp),
//   e2 = (1/N)|x - mean_B x^b|^2 - floor2_B / |B|,  floor2_B = mean over pairs of 1/2 (1/N)|x^a - x^b|^2,
// clipped at 0. Every figure is a lower bound on the supremum: the search may
// miss the maximum.
#pragma once

#include "mft/problem.hpp"

#include <string>
#include <vector>

namespace mft {

// One side of the comparison: a discrete model's settings (model.*) and its
// heads, from a run file or checkpoint (file) or all of theta in natural order
// on every rank (heads).
struct WorstSide {
  Settings settings;
  std::string file;
  const std::vector<double> *heads = nullptr;
};

struct WorstResult {
  PetscInt N = 0, d = 0, starts = 0, best = 0;   // best: the start whose search objective is largest
  std::vector<std::string> start_names;          // "discrete/0", ..., "random/7"
  std::vector<double> tokens;                    // the worst input found, (N, d)
  std::vector<double> output;                    // the model's x(1) there, (N, d)
  std::vector<double> reference_output;          // the mean of the search references' x(1) there, (N, d)
  std::vector<double> heldout_output;            // the mean of the held-out references' x(1) (empty: none)
  std::vector<double> objective;                 // the best raw err before the search and after each iteration
  std::vector<double> start_err;                 // each start's raw err at its end (NaN: not ascended)
  // At the input found, per held-out reference b: (1/N)|x - x^b|^2; per
  // pair a < b of them: 1/2 (1/N)|x^a - x^b|^2 (for the studies' jackknife).
  std::vector<double> heldout_e2, heldout_pairs;
  double initial = 0;        // the best raw err of the starts before the search
  double raw = 0;            // err against the search references at the input found (what was maximised)
  double heldout_raw = NAN;  // err against the mean of the held-out references
  double floor = NAN;        // the held-out references' own spread, (floor2_B)^(1/2)
  double err = 0;            // the figure: cross-fitted and corrected (|B| >= 2), cross-fitted raw (|B| = 1), or raw
  std::string estimator;     // "cross-fit corrected", "cross-fit raw" or "raw (search references only)"
  PetscInt search_references = 0, heldout_references = 0;
  PetscInt iterations = 0, evaluations = 0; // objective evaluations with their gradient
  double seconds = 0;        // of the whole search (every model searched with it)
};

// The starts: study.probe_M sequences of each study.probes family (the
// studies' probe sequences of data.N tokens), then worst.starts random
// sequences, each token uniform in the ball; every token outside the ball is
// brought to its surface. (S, N, d) row-major, the same on every rank.
std::vector<double> WorstStarts(const Settings &s, PetscInt N, PetscInt d, std::vector<std::string> *names);

// Searches for the worst input of each of `models` against the same
// `references` (worst.* of s: radius, starts, keep, steps, seed, log_every,
// crossfit; data.N tokens), all in one batch: each reference runs every
// model's starts at once. Every start is evaluated; the worst.keep best of
// each model's (all when 0) are ascended. With worst.crossfit, the
// references are split into search (A) and held-out (B) halves as above;
// without, all of them are searched against and err is the raw figure.
// Progress on rank 0 every worst.log_every iterations, with an ETA, when
// `progress` is not empty (its text leads each line).
PetscErrorCode WorstSearch(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &models,
                           const std::vector<WorstSide> &references, const std::string &progress,
                           std::vector<WorstResult> *results);

// The search objective err^2 of every start and its gradient dF/dx, at the
// inputs x (every model's S starts in turn, (models S, N, d)): what the
// ascent uses, for checks against finite differences.
PetscErrorCode WorstObjective(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &models,
                              const std::vector<WorstSide> &references, const std::vector<double> &x,
                              std::vector<double> *F, std::vector<double> *G);

} // namespace mft
