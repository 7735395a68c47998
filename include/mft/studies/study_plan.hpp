// A study's cases priced and placed on groups of ranks, before any runs
// (docs/design.md, 'Studies on groups of ranks').
//
// Price: a case's predicted seconds on g ranks, one thread each. A training
// step is the cost model's step (cost.hpp) at the grid the case gets on g
// ranks, plus what an operation count misses on small models:
// parallel.unit_overhead for each (layer, head, sequence) unit on the busiest
// rank and parallel.layer_overhead for each layer. A trained case is
// study.steps steps and, at each recorded time, its probes (each probe set's
// forward and adjoint: a step of the probe's sequences) and a file; at
// initialisation a model case is its probes and a file, and a mean-field
// reference its probes through the adaptive solve, priced as
// kLimitEvaluations layers of limit.heads shared heads (euler: model.L).
// parallel.case_overhead is a case's start and each file it writes.
//
// Plan: groups of 1, 2, 4, ... ranks and of all P. For a target time T, each case takes
// the smallest size on which it ends within T (else the size on which it
// ends first); each size gets groups in proportion to the core-seconds of its
// cases (or all ranks go to groups of the largest size), and the study is run
// in simulation as it is run for real: a free group takes the largest case of
// its size left, and a group with none left splits into smaller groups
// (SplitGroup) that take theirs. Of the targets from the
// lower bound (one core's work over P, or the longest case) up to "every case
// on one rank", and "every case on all P ranks" (the serial schedule, so that
// no plan is slower than it), the plan of least makespan is kept. A case always runs on its
// size, so a study's results do not depend on which group was free first.
#pragma once

#include "mft/settings/settings.hpp"
#include "mft/flow/limit.hpp"
#include "mft/studies/study.hpp"

#include <string>
#include <vector>

namespace mft {

// The group sizes a plan on P ranks uses: 1, 2, 4, ... up to P, and P.
// Not collective.
std::vector<PetscInt> PlanSizes(PetscInt P);

// Case c's predicted seconds on each size of PlanSizes(P) (infinite where
// the case cannot be spread over that many ranks); node_ranks as
// parallel.node_ranks (0: one node).
// Collective on comm (each case's settings, read with CaseSettings).
PetscErrorCode StudyPrices(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                           const std::vector<StudyCase> &cases, PetscInt P, PetscInt node_ranks,
                           std::vector<std::vector<double>> *seconds);

struct StudyPlan {
  PetscInt P = 1;
  std::vector<PetscInt> sizes;   // PlanSizes(P)
  std::vector<PetscInt> groups;  // the groups' sizes, largest first, on consecutive ranks
  std::vector<size_t> size_of;   // per case (in the order given): its index into sizes
  std::vector<double> start, end; // per case: when the simulated run starts and ends it
  double makespan = 0;           // predicted seconds of the whole run
  double serial_work = 0;        // every case on one rank, one after another (seconds)
  double efficiency() const { return makespan > 0 ? serial_work / (P * makespan) : 1; }
  std::string groups_text() const; // "2 x 16, 8 x 1": groups of each size
};

// The plan of least predicted makespan on P ranks for cases priced by
// `seconds` (StudyPrices); the serial schedule unless a plan on groups is
// predicted `margin` faster than it (parallel.plan_margin).
// Not collective: every rank makes the same plan from the same prices.
StudyPlan PlanStudy(const std::vector<std::vector<double>> &seconds, PetscInt P, double margin = 0);

// Where g is among the plan's sizes.
// Not collective.
size_t SizeIndex(const std::vector<PetscInt> &sizes, PetscInt g);

// The groups a group of g ranks splits into when no case of its size is
// left: the largest smaller size as often as it fits, the rest in the largest
// sizes that fit (none for one rank).
// Not collective.
std::vector<PetscInt> SplitGroup(PetscInt g, const std::vector<PetscInt> &sizes);

// The serial schedule as a plan: every case on all P ranks, one after another.
// Not collective.
StudyPlan PlanSerial(const std::vector<std::vector<double>> &seconds, PetscInt P);

// The order in which the groups of one size take their cases: the largest
// first (ties: the lower index).
// Not collective.
std::vector<size_t> PlanOrder(const StudyPlan &plan, const std::vector<std::vector<double>> &seconds, size_t size);

// Slurm array tasks (jobs/study.sh --slurm): the cases of each size packed,
// largest first, into tasks of at most `seconds` predicted seconds each (a
// longer case alone), each task on its size's ranks.
struct PlanTask {
  PetscInt ranks = 1;
  double seconds = 0;
  std::vector<size_t> cases; // indices into the cases planned
};
// Not collective.
std::vector<PlanTask> PlanTasks(const StudyPlan &plan, const std::vector<std::vector<double>> &seconds, double limit);

} // namespace mft
