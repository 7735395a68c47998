// The multilevel hierarchy of a study in law along the diagonal (docs/model.md,
// 'Coupled estimators'; study.levels). At exponents 1/2 the models L x H and
// L/2 x 2H share one head scale, (L H)^-1/2, so a sample's heads make both:
// every head of fine layers 2j and 2j + 1 makes coarse layer j (CoarseHeads).
// With L H = P fixed, level l's fine model is L_l x P/L_l (L_l = L_0 2^l,
// the study's L list) and its coarse one is level l - 1's fine model, so the
// levels telescope:
//   E P(L_top, H) = E P_0 + sum_l E[P_fine,l - P_coarse,l],
// P a sample's mean over probe sequences and tokens of |x_i(1)|^2. Every
// level costs the same head evaluations (L H of them, twice for a pair):
// what the coupling buys is the small variance of the differences, whose
// means fall at the weak order in depth (D_L ~ -a_0 / L when the error is
// a(H) / L with a(H) = a_0 + a_1 / H).
//
// Each level prints what users of multilevel methods read (Giles's
// mlmc_test): its mean and variance of the difference and of the fine model,
// the difference's kurtosis, its cost a sample, and the check that
// E[P_fine - P_coarse] equals the difference of the two levels' means of
// P_fine within 3 standard errors (a coarse model of the wrong law fails it);
// then the fitted decay rates of the means (alpha), variances (beta) and
// costs (gamma), and the local order of the means over each octave. With
// study.target (a 95% half-width of the telescoped estimate), each level's
// samples follow Giles's allocation N_l ~ sqrt(V_l / C_l) from the pilot
// (study.samples a level), capped by study.max_samples.
#pragma once

#include "mft/settings/settings.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace mft {

// One level of the hierarchy: its models, its samples' moments, its check.
struct Level {
  PetscInt L = 0, H = 0;               // the fine model
  PetscInt L_coarse = 0, H_coarse = 0; // the coarse one (0 at level 0: the fine model alone)
  PetscInt samples = 0;
  double mean = 0, var = 0;            // Y = P_fine - P_coarse (P_fine at level 0)
  double mean_fine = 0, var_fine = 0;  // P_fine
  double kurtosis = 0;                 // of Y: E (Y - EY)^4 / Var(Y)^2
  double cost = 0;                     // seconds a sample of Y, the slowest rank's
  double check = 0;                    // |E Y - (E P_fine,l - E P_fine,l-1)| / (3 standard errors); > 1 fails
  std::vector<double> values, fine;    // this rank's Y and P_fine, sample by sample
};

// Collective on comm. Draws `more` samples of a level and updates its
// moments over every rank's samples (two passes): the fine model's settings
// on each probe set, and the coarse model's (empty at level 0), coupled by
// shared heads; sample s from seed fine[k].init.seed + first + s, counting on
// from the level's samples so far.
PetscErrorCode LevelDraw(MPI_Comm comm, const std::vector<Settings> &fine, const std::vector<Settings> &coarse,
                         PetscInt more, std::uint64_t first, Level *level);

// Giles's consistency check of each level against the one below it.
// Not collective.
void LevelsCheck(std::vector<Level> *levels);

// The decay rates over levels 1 and up, least squares in log2: |E Y_l| ~
// 2^-alpha l, Var Y_l ~ 2^-beta l, cost ~ 2^gamma l (NaN with fewer than two
// such levels). Not collective.
struct LevelRates {
  double alpha = NAN, beta = NAN, gamma = NAN;
};
LevelRates LevelsRates(const std::vector<Level> &levels);

// The local order over an octave, log2 |D_a / D_b|, of two levels' means D
// with their standard errors, and its 95% interval by the delta method
// (tests/calibration/law_calibration.cpp --design levels measures its
// coverage). Not collective.
struct LocalOrder {
  double p = NAN, lo = NAN, hi = NAN;
};
LocalOrder LocalOrderOf(double mean_a, double se_a, double mean_b, double se_b);

// Giles's allocation for a 95% half-width `target` of the telescoped mean:
// N_l = (1.96 / target)^2 sqrt(V_l / C_l) sum_k sqrt(V_k C_k), rounded up.
// Not collective.
std::vector<PetscInt> LevelsAllocation(const std::vector<Level> &levels, double target);

// The study in law with study.levels: every variant's hierarchy, printed and
// written to study.dir (levels.csv, levels_fits.csv). Collective on comm.
PetscErrorCode LevelsRun(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, int *status);

// Lists the levels of every variant with their head evaluations at the
// pilot's samples (mft study --list), and their sum in *evaluations.
// Not collective: rank 0 prints.
PetscErrorCode LevelsList(MPI_Comm comm, const Settings &s, double *evaluations);

} // namespace mft
