// Convergence studies (MODEL.md, 'Convergence'): how fast the discrete (L, H)
// model approaches the mean-field limit.
//
// A study is one config: a grid of L and H, seeds, probe families, the
// quantity (hidden states x(1) and adjoints p(0) of 1/2 |x_i(1)|^2), the state
// (init: against the mean-field reference `mft limit`; trained: after
// study.steps steps, against a larger model trained the same way), and
// variants (sets of overrides, e.g. data.N or model.d, or the optimizer).
// Its cases are numbered: per variant, the study.references references (their
// own seeds), then every (L, H, seed).
// Each case writes study.dir/case-<i>.h5; the aggregation computes
//   err(L, H) = ( mean over seeds of max over probe sequences of
//                 (1/N) sum_i |x_i^(L,H)(1) - x_i^ref(1)|^2 )^(1/2)
// with bootstrap intervals over the seeds, the slopes of log err in log L (at
// the largest H) and in log H (at the largest L), and a joint fit of
// C1/L + C2 L^-a H^-b; it names every missing or failed case and aggregates the rest.
// With R >= 2 references, the reference's own squared error on each probe
// sequence, floor^2 = mean over pairs of 1/2 (1/N) sum_i |x^a - x^b|^2, is
// subtracted from the model's before the max over probes (clipped at 0): the
// corrected err, beside the raw one, each with its fits.
#pragma once

#include "mft/settings.hpp"

#include <string>
#include <vector>

namespace mft {

struct StudyCase {
  PetscInt index = 0, variant = 0;
  bool reference = false;
  PetscInt reference_index = 0; // 0 .. study.references - 1
  PetscInt L = 0, H = 0, seed = 0;
  std::string describe() const;
};

std::vector<std::string> StudyVariants(const Settings &s);

// The teacher of a trained study's targets, (L, H): data.teacher_L/H, by
// default the reference's shape; every model and reference learns its targets.
std::pair<PetscInt, PetscInt> StudyTeacher(const Settings &s);
std::vector<StudyCase> StudyCases(const Settings &s);

// The training steps at which a trained study records its errors
// (study.times with 0 and study.steps); {0} at initialisation.
std::vector<PetscInt> StudyTimes(const Settings &s);

// Runs one case; args are the command's own (the config and overrides). A
// trained case trains through the loop of mft train (training.hpp), resumes
// from its own checkpoints (study.dir/case-<i>-checkpoints) when it has any,
// and records its probe outputs at every time of StudyTimes; *signal is set
// when SIGUSR1/SIGTERM stopped it after a checkpoint (rerun to resume).
PetscErrorCode StudyRunCase(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                            const StudyCase &c, int *signal);

// Aggregates dir into study.csv, fits.csv and study.h5; *missing counts the
// cases without a result.
PetscErrorCode StudyAggregate(MPI_Comm comm, const Settings &s, const std::string &dir, PetscInt *missing);

} // namespace mft
