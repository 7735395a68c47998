// Studies in law of the diffusive regime (docs/results.md, 'Studies in
// law'): a study at initialisation with model.depth_exponent =
// model.head_exponent = 1/2 and centred value maps. Its limit is a random
// flow, so a finite model is compared with it in law, not seed by seed: in
// every (L, H) cell of every variant, study.samples samples of the model
// (SamplesForward, as mft forward --init.samples draws them) against
// limit.paths paths of the SDE (LimitPathsSolve, as mft limit), or, given
// study.reference_L or study.reference_H, against limit.paths samples of the
// finite reference_L x reference_H model of the same variant (drawn as the
// cells are, from seeds of its own; no extrapolation), on the study's probe
// sequences (two_sample.hpp):
//   err_law: the largest over probe sequences of the relative Gram gap, with
//     its 95% interval; resolved when the interval excludes 0;
//   energy: the energy distance between the laws of x(1) (a squared
//     distance), unbiased, with its standard error and its interval
//     simultaneous over the sequences as err_law's, from every sample and
//     path (energy.hpp: sliced, sorted over the ranks);
//   the limit's own error: its steps (coarse against fine paths) and its
//     sampling, against every resolved cell's lower bound (limit_clear);
//   the fits err_law = C L^-p H^-q and sqrt(energy) = C L^-p H^-q, each over
//     its resolved cells, bootstrap intervals;
//   with study.target, each cell's samples chosen from a pilot so that its
//   interval's half-width meets the target (or it says why not);
//   with study.k (one L, one H), the cells L x H x k against limit.paths
//   samples of the same model with infinite heads (model.k = inf) in place
//   of the limit, and the fit err_law = C k^-r (law_fits.csv's q and its
//   interval; p empty).
// Files in study.dir: limit-v<v>.h5 (the paths of each probe set), or
// reference-v<v>-L<L>-H<H>.h5 (a finite reference's samples), and
// samples-v<v>-L<L>-H<H>[-k<k>].h5 (the samples and their Gram means), each kept by a
// rerun when it verifies and was made with the same settings; law.csv and
// law_fits.csv.
#pragma once

#include "mft/settings/settings.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace mft {

// A study in law is what Settings::study_in_law() says.
// Lists the study's cells and the reference (the limit, or a finite model)
// with their cost in head evaluations, the memory a rank and the time (from
// a pilot of the largest cell's samples, the limit's paths and one
// sequence's energy distance on the ranks of this run), for
// study.plan_cores ranks or this run's (mft study --list;
// jobs/study.sh); the last line "<n> cells in <dir>". Writes no file.
// Collective.
PetscErrorCode StudyInLawList(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s);

// The first seed of cell (v, L, H)'s samples: 10^7 (1 + h), h a 40-bit hash
// of (v, L, H), and of k in a study over k (-1: the infinite head; 0: none);
// of a finite reference's samples (`reference`), a hash of its own.
// Not collective.
std::uint64_t CellSeeds(size_t v, PetscInt L, PetscInt H, PetscInt k = 0, bool reference = false);

// Whether a study in law at initialisation compares with a finite reference,
// limit.paths samples of the study.reference_L x study.reference_H model of
// each variant (either given), rather than with the limit's paths; its name
// in law.csv's `reference` column ("limit", or "<L>x<H>"). Not collective.
bool LawFiniteReference(const Settings &s);
std::string LawReferenceName(const Settings &s);

// The settings of probe set k of the study's model given by `model` (options
// over the command's args). Collective on comm.
PetscErrorCode ProbeSettings(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                             std::vector<std::string> model, size_t k, Settings *cs);

// What a study in law does not take, refused in one line rather than
// ignored, and its seeds' room. Not collective: every rank checks the same
// settings.
PetscErrorCode StudyInLawCheck(MPI_Comm comm, const Settings &s);

// Runs the study in law of s (args: the command's own). Collective on comm.
PetscErrorCode StudyInLawRun(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, int *status);

} // namespace mft
