// Convergence studies (docs/results.md): how fast the discrete (L, H) model
// approaches the mean-field limit.
//
// A study is one config: a grid of L and H, seeds, probe families, the
// quantity (hidden states x(1) and adjoints p(0) of 1/2 |x_i(1)|^2), the state
// (init: against the mean-field reference `mft limit`; trained: after
// study.steps steps, against a larger model trained the same way), and
// variants (sets of overrides, e.g. data.N or model.d, or the optimizer).
// Its cases are numbered: per variant, the study.references references (their
// own seeds; none where it shares an earlier variant's), then every (L, H, seed).
// Each case writes study.dir/case-<i>.h5 (a trained case: its probes, the
// heads' movement and the risk at every recorded time). The aggregation reads
// them and hands the squared errors of every model against every reference to
// study_statistics.hpp (err per cell corrected for the references' own
// spread, jackknife intervals, slopes, the joint fit C1/L + C2 L^-a H^-b and
// its flags); it writes study.csv, fits.csv, probes.csv and study.h5, prints
// the corrected fits, and names every missing or failed case.
#pragma once

#include "mft/settings/settings.hpp"

#include <functional>
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

// The variants' overrides: study.variants, or one empty variant; in a
// learning-rate study each of those at every rate of study.learning_rates
// (base variant b at rate j is variant b * rates + j, "... train.lr=<rate>").
// Not collective.
std::vector<std::string> StudyVariants(const Settings &s);

// Creates a study's folder and its parents (kept when they exist), rank 0
// for all; a folder that cannot be made is an error on every rank.
// Collective on comm.
PetscErrorCode StudyDirCreate(MPI_Comm comm, const std::string &dir);

// The teacher of a trained study's targets, (L, H): data.teacher_L/H, by
// default the reference's shape; every model and reference learns its targets.
// Not collective, as is StudyCases.
std::pair<PetscInt, PetscInt> StudyTeacher(const Settings &s);
// The options of a study's model of L layers and H heads a layer: model.L,
// model.H, and with study.mlp_per_head r the MLP width r H; with
// study.mlp_axis, model.L and the MLP width H (model.H the variant's). Every kind of
// study (at initialisation, in law, trained) makes its models by them.
// Not collective.
std::vector<std::string> StudyShapeOptions(const Settings &s, PetscInt L, PetscInt H);
// Its options for a trained model: --data.teacher_L and _H, and with
// study.mlp_per_head r the teacher's MLP width r H_teacher (unless
// data.teacher_mlp_width is given). Not collective.
std::vector<std::string> StudyTeacherOptions(const Settings &s);
std::vector<StudyCase> StudyCases(const Settings &s);

// The variant whose references variant v is measured against: the first whose
// references run the same options. Trained variants that differ in model.k
// alone, with study.reference_k, share one set of references (run once, in
// the first). StudyCaseOf: whether case c is one of variant v's models or of
// the references it is measured against. Not collective.
PetscInt StudyReferenceVariant(const Settings &s, PetscInt v);
bool StudyCaseOf(const Settings &s, const StudyCase &c, PetscInt v);

// The training steps at which a trained study records its errors
// (study.times with 0 and study.steps); {0} at initialisation.
// Not collective.
std::vector<PetscInt> StudyTimes(const Settings &s);

// Checks, before any case runs, that the probe file (study.probe_file) can
// give study.probe_M sequences of the models' dimension.
// Collective on comm.
PetscErrorCode StudyProbeFileCheck(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s);

// Runs one case; args are the command's own (the config and overrides). A
// trained case trains through the loop of mft train (training.hpp), resumes
// from its own checkpoints (study.dir/case-<i>-checkpoints) when it has any,
// and records its probe outputs at every time of StudyTimes; *signal is set
// when SIGUSR1/SIGTERM stopped it after a checkpoint (rerun to resume).
// Collective on comm.
PetscErrorCode StudyRunCase(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                            const StudyCase &c, int *signal);

// Whether case c has its file already (verified, of the same identity:
// study_cases.hpp): a rerun keeps it and runs the case no more.
// Collective on comm.
PetscErrorCode StudyCaseFinished(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                                 const StudyCase &c, bool *finished);

// Runs `cases` (those not finished): with study.schedule = serial each on
// every rank of comm in turn; with groups on the plan's groups of ranks
// (study_plan.hpp), a free group claiming the largest case of its size left
// (a file study.dir/case-<i>.claim, made exclusively). A failed case is named
// and counted and the others run; on SIGUSR1/SIGTERM every running trained
// case checkpoints and no case starts; *signal is then set on every rank.
// Collective on comm.
struct CasesRun {
  PetscInt done = 0, failed = 0;
  int signal = 0;
};
PetscErrorCode StudyRunCases(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                             const std::vector<StudyCase> &cases, CasesRun *run);

// Runs tasks 0 .. n-1 (a study's phase after its cases) on groups of ranks:
// with study.schedule = groups and `side_by_side`, min(P, n) groups of
// P / min(P, n) ranks each (the ranks left over wait), else one group of all
// (mean-field solves side by side share the node's memory bandwidth and
// lose: the law's tasks run one after another); a group's first
// rank claims the next task by creating study.dir/<name(i)>.claim
// exclusively, and the group runs it on its own communicator. A failed task
// is named and the group claims the next; on SIGUSR1/SIGTERM no task starts.
// Collective on comm (each group runs its tasks on its own communicator).
PetscErrorCode StudyRunTasks(MPI_Comm comm, const Settings &s, const std::string &dir, size_t n,
                             const std::function<std::string(size_t)> &name,
                             const std::function<PetscErrorCode(MPI_Comm, size_t)> &run, bool side_by_side = true);

// With study.worst: every model's worst input (worst.hpp) at every recorded
// time, one chain of searches for each variant and time (StudyRunTasks'
// tasks): every N of study.worst_N in order, each variant's models in one
// batch against that variant's references at that time (trained cases keep
// their heads at every time for it), each N started from the inputs of the
// N before (so its figure is never below that N's), then with
// study.worst_atoms the measure of that many atoms from the largest N's;
// the worst.* options set the budget. A search whose file is already there
// (verified) is not made again. *seconds: the most any rank spent searching.
// Collective on comm.
PetscErrorCode StudyWorst(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, const std::string &dir,
                          double *seconds);

// With study.fluctuation at initialisation: the error's law (fluctuation.hpp) of
// every variant at every L of the grid, for the probe sequences, against the
// limit of reference 0's ensemble (StudyRunTasks' tasks); a law whose file
// is already there (verified) is not made again. *seconds: the most any
// rank spent on them.
// StudyFluctuationWanted is not collective; StudyLaw is collective on comm.
bool StudyFluctuationWanted(const Settings &s); // study.fluctuation at initialisation, or given in a trained study
PetscErrorCode StudyLaw(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, const std::string &dir,
                        double *seconds);

// Aggregates dir into study.csv, fits.csv and study.h5; *missing counts the
// cases without a result.
// Collective on comm (rank 0 reads the cases and writes the tables).
PetscErrorCode StudyAggregate(MPI_Comm comm, const Settings &s, const std::string &dir, PetscInt *missing);

// With --replicates 'DIR ...': the study in dir and the same config run again
// in those folders with other init.seed; each folder's corrected fits made
// from its case files as the aggregation makes them; per figure (slope_L,
// slope_H, a, b) and time, how often one replicate's point lies in another's
// 95% interval (dir/replicates.csv, beside the calibrated fraction), and per
// variant, quantity and time each figure pooled over the replicates
// (dir/replicates_pooled.csv): statistics/replicates.hpp.
// Collective on comm (rank 0 reads and writes).
PetscErrorCode StudyReplicates(MPI_Comm comm, const Settings &s, const std::string &dir);

} // namespace mft
