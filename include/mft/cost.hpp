// The cost of one training step on P ranks, and the choice of the process grid.
//
// What crosses the network is counted rank by rank from the layouts the
// solver itself uses (split() of tokens and heads, tokens.hpp and heads.hpp;
// the plans of exchange.hpp), not estimated:
//   per layer  the forward gathers the sequences of each token group (one
//              VecScatter: a message from every other rank that owns some of
//              their tokens) and, with Ph > 1, reduce-scatters the velocity
//              over the head groups; the adjoint gathers the state and the
//              adjoint and scatters the contributions back: three more of
//              the gather's pattern;
//   per step   the head gradients are reduce-scattered over the token groups
//              once and the updated heads allgathered once, each with a
//              PETSc scatter between the chunks and theta (local when Ph = 1).
// Compute: the attention operations each rank does (bench.hpp's count, with
// the keys' and values' projections of every sequence it touches), at `rate`.
// Time: the slowest rank's compute plus the slowest rank's
// messages * latency + bytes / bandwidth.
#pragma once

#include "mft/settings.hpp"

namespace mft {

struct Network {
  double latency = 1.5e-6;  // seconds a message
  double bandwidth = 12e9;  // bytes a second
};

struct StepCost {
  PetscInt P = 1, Ph = 1, Pt = 1;
  double messages = 0, bytes = 0;         // sent per rank and step: the mean over ranks
  double scatter_messages = 0, scatter_bytes = 0; // of which PETSc's scatters (the rest: exchange.hpp)
  double max_messages = 0, max_bytes = 0; // the busiest rank's
  double operations = 0;                  // the busiest rank's
  double compute = 0, communication = 0;  // seconds, slowest rank
  double seconds() const { return compute + communication; }
};

// The step of `m` on M sequences of N tokens, P ranks in Ph head groups.
StepCost PredictStep(const ModelSettings &m, PetscInt M, PetscInt N, PetscInt P, PetscInt Ph, double rate,
                     const Network &net);

// The head-group count (a divisor of P, at most H, leaving every token group
// a token) of least predicted step time; 0 when there is none.
PetscInt ChooseHeadGroups(const ModelSettings &m, PetscInt M, PetscInt N, PetscInt P, double rate, const Network &net);

} // namespace mft
