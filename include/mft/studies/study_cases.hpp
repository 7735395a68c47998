// A study's cases and their files, shared by running the cases
// (study_run.cpp) and aggregating them (study_aggregate.cpp): the option
// text they are read from, the probe sets, the case files and their reader.
#pragma once

#include "mft/flow/families.hpp"
#include "mft/settings/options.hpp"
#include "mft/settings/settings.hpp"
#include "mft/studies/study.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mft::h5 {
struct File;
}

namespace mft::study {

// "data.N=16 model.d=4" -> --data.N 16 --model.d 4
// Not collective.
std::vector<std::string> overrides(const std::string &variant);

// The study's settings with `extra` options appended to its arguments; with
// a data file, its sizes (N, d, ...) as the run will see them. A probe's
// settings (probe) have zero targets and the token loss.
// Collective on comm (a data file's sizes are read on every rank).
PetscErrorCode CaseSettings(MPI_Comm comm, std::vector<std::string> args, const std::vector<std::string> &extra,
                            Settings *s, bool probe = false);

// study.dir/case-<i>.h5, and a trained case's file at one recorded step.
// Not collective.
std::string case_path(const std::string &dir, PetscInt i);
std::string partial_path(const std::string &dir, PetscInt i, PetscInt t);

// The probe outputs of one case: per probe set, tokens and adjoints.
struct CaseData {
  std::vector<std::vector<double>> tokens, adjoint;
  std::vector<std::vector<double>> weights; // per set, its probes' weights (M, N); empty: 1/N each
  std::vector<PetscInt> N; // per set, from the arrays' shapes (M, N, d)
  PetscInt d = 0;
  // A trained case at this time: |theta_t - theta_0| / |theta_0| and the full risk (NaN at initialisation).
  double head_change = NAN, risk = NAN, reduction = NAN; // reduction: risk at step 0 / risk now
  double heldout_risk = NAN; // with data.heldout: the held-out file's risk at these heads
  double diversity = NAN;    // a trained case: the heads' diversity at the probes (flow/diversity.hpp)
  std::vector<double> block_change; // a trained case: HeadsBlockChange at this time, [layer][block]
  PetscInt blocks = 0;               // columns of block_change (3: Q, K, V; 4 with O)
  std::vector<double> loss; // a trained case: its risk before every training step (the whole run)
  std::vector<double> heads; // with study.worst, a trained case's heads at this time (all of theta, natural order)
  std::vector<double> neurons; // and its MLP sublayers' neurons (empty: none)
};

// Reads a study's own file on this rank (a worst search's, a law's): its
// checksum verified, opened, handed to `read`, closed; an error on the way
// (captured, not raised) or a damaged file becomes *problem, which `read`
// may set too (a file that holds too little).
// Collective on comm (by default PETSC_COMM_SELF: this rank alone): the
// file verified and read on comm's ranks (rows split over them), and one
// verdict for all of them.
PetscErrorCode ReadVerified(const std::string &path, const std::function<PetscErrorCode(h5::File &)> &read,
                            std::string *problem, MPI_Comm comm = PETSC_COMM_SELF);

// In a `read` of ReadVerified: the whole one-dimensional dataset `name`
// into *v, if the file has one of at least `least` entries (else *v is left).
// Not collective (the file is this rank's).
PetscErrorCode ReadColumn(h5::File &f, const std::string &name, size_t least, std::vector<double> *v);

// Reads a case file (verified) at `prefix` (a trained case's /times/<step>,
// or ""); on failure *problem says why.
// Not collective: on this rank alone.
PetscErrorCode ReadCase(const std::string &path, const std::vector<std::string> &families, const std::string &prefix,
                        CaseData *out, std::string *problem);

// The case's options: the variant's overrides, its size and seed, and in a
// trained study the teacher's shape (study_run.cpp).
// Not collective.
std::vector<std::string> CaseModel(const Settings &s, const mft::StudyCase &c);

// With study.worst: the worst inputs of one variant's models at one time
// and N, searched in one batch (study_worst.cpp), in
// study.dir/worst-v<v>-t<time>-N<n>.h5 (a measure of K atoms,
// study.worst_atoms: -K<K>.h5); per model case, its raw err against the
// search references, the best of its starts before the search, the
// collapsed start's, its squared errors against each held-out reference and
// the held-out pairs' terms 1/2 sum_i w_i |x^a - x^b|^2 at its input found
// (worst.hpp), and that input (tokens, a measure's weights).
// Not collective; ReadWorst reads on this rank alone.
std::string worst_path(const std::string &dir, size_t variant, PetscInt time, PetscInt N, bool measure = false);
std::vector<PetscInt> worst_Ns(const Settings &variant); // study.worst_N, or the variant's data.N
struct WorstCases {
  std::vector<PetscInt> index;            // the model cases searched
  std::vector<double> raw, initial;       // per case
  std::vector<double> collapsed, check;   // per case: the collapsed start's raw err; with worst.check the doubled search's
  size_t heldout = 0, pairs = 0;          // held-out references, their pairs
  std::vector<double> e2, pair_terms;     // (cases, heldout), (cases, pairs)
  std::vector<double> tokens, weights;    // (cases, N, d) and a measure's (cases, N)
  PetscInt N = 0, d = 0;
  double seconds = NAN;                   // the search's time
};
PetscErrorCode ReadWorst(const std::string &path, WorstCases *out, std::string *problem);

// With study.fluctuation at initialisation: the error's law of one variant at one
// depth L (fluctuation.hpp) for its probe sequences, every set in order, in
// study.dir/fluctuation-v<v>-L<L>.h5: per sequence E(L)^2, F_L^2 and the standard
// error of F_L^2, and N d (the fluctuation's dimensions) per sequence.
// Not collective; ReadLaw reads on this rank alone.
std::string law_path(const std::string &dir, size_t variant, PetscInt L);
struct LawCases {
  std::vector<double> euler2, fluctuation2, fluctuation2_se, dims, tokens; // per probe sequence (dims: N d; tokens: N)
  std::vector<double> spectrum, euler_coords; // the exact trace's: dims[m] entries per sequence, in order (else empty)
  double seconds = NAN;
};
PetscErrorCode ReadLaw(const std::string &path, LawCases *out, std::string *problem);

// What makes a case's results, as text: the settings of its model, data,
// initialisation, loss, training and reference solve (those that define a
// run), and the study's own that shape a case file (state, steps, times,
// probes, worst). A case file keeps it (attribute study.case_identity); a
// rerun keeps a file whose identity is the case's.
// Not collective.
std::string case_identity(const Settings &case_settings);

// A number as the tables write it (empty when not finite).
// Not collective.
std::string num(double v);

} // namespace mft::study
