// Kinds of study, each registered by name with what `mft study` does with
// it (as LAMMPS's pair styles: the command picks the kind the settings ask
// for and never asks which it holds):
//   convergence     a study of cases against the mean-field limit or larger
//                   trained models (study.hpp), run as cases and aggregated
//   law             a study in law at initialisation (study_in_law.hpp)
//   trained_in_law  a trained study of the diffusive regime in law
//                   (study_in_law_trained.hpp)
// A new kind is one entry of StudyKinds (study_kind.cpp) and its own files.
#pragma once

#include "mft/settings/settings.hpp"

#include <string>
#include <vector>

namespace mft {

struct StudyKind {
  const char *name;
  bool (*chosen)(const Settings &s); // the settings ask for this kind
  // --list: its cases or sets with their prices; the last line "<n> ... in
  // <dir>". Writes no file. Collective.
  PetscErrorCode (*list)(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s);
  // Runs it (args: the command's own), *status the exit code. Collective.
  PetscErrorCode (*run)(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, int *status);
};

// Every kind, in the order they are tried: the first chosen serves.
// Not collective.
const std::vector<StudyKind> &StudyKinds();

// The kind the settings ask for (convergence when no other is).
// Not collective.
const StudyKind &StudyKindOf(const Settings &s);

// The convergence study's --list: every case with its predicted cost, and
// with study.plan_cores the plan and its Slurm array tasks. Collective.
PetscErrorCode StudyConvergenceList(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s);
// The convergence study's run: its cases (study.only's, or all not kept),
// then the law's prediction, the worst input, the aggregation and the
// replicates; with --aggregate DIR only what follows the cases.
// Collective.
PetscErrorCode StudyConvergenceRun(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                                   int *status);

} // namespace mft
