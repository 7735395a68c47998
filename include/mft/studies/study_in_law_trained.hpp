// Trained studies in law (docs/results.md, 'Trained laws'): a trained study
// of the diffusive regime (a = c = 1/2) with references
// (Settings::trained_in_law). Its trained models are random, so every cell
// is compared with its references in law, as a study in law at
// initialisation compares with the limit: study.seeds models of each L x H
// cell (x k, with study.k) and study.references models of study.reference_L
// x study.reference_H (x study.reference_k), each set trained as one
// ensemble (ensemble.hpp) on all ranks, study.steps steps on the targets of
// one teacher; at every time of study.times, their x(1) on the probe sets:
//   err_law, the largest relative Gram gap over the probe sequences with its
//     95% interval, and the energy distance (two_sample.hpp), over the
//     models that never diverged on both sides (their count beside it);
//   the references' own sampling (relative Gram);
//   the fits err_law = C L^-p H^-q over the resolved cells of a variant and
//     time, or with study.k, err_law = C k^-r at each (L, H), with their
//     misfit (chi^2, its p-value).
// Variants whose references run the same options share them. Each rank
// holds its block of every set's models: memory a rank O((models +
// references) / P), no models-by-references table.
// Files in study.dir: <set>-t<time>.h5 per set and recorded time (the
// models' x(1) on every probe set, their divergence, head change and risk),
// each kept by a rerun when it verifies and was made with the same
// settings; a set stopped by a signal resumes from <set>-checkpoints;
// law.csv and law_fits.csv.
#pragma once

#include "mft/settings/settings.hpp"

#include <string>
#include <vector>

namespace mft {

// What a trained study in law does not take, refused in one line.
// Not collective: every rank checks the same settings.
PetscErrorCode StudyTrainedInLawCheck(MPI_Comm comm, const Settings &s);

// Lists its sets of models (cells and references) with their models,
// model-steps, time and memory a rank (priced from a pilot ensemble on the
// ranks of this run, or for study.plan_cores ranks), and the aggregation's;
// the last line "<n> cells in <dir>". Writes no file. Collective.
PetscErrorCode StudyTrainedInLawList(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s);

// Runs it (args: the command's own). Collective on comm.
PetscErrorCode StudyTrainedInLawRun(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                                    int *status);

} // namespace mft
