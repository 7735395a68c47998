// The checks of settings beyond each value's own range: together, against
// the ranks and PETSc's index range, and the outputs' folders.
#include "mft/settings/options.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>
#include <unistd.h>

namespace mft {

// Why a file could not be written at path (empty when it can): a new file
// beside it is created and removed, by one rank, before any work starts.
static std::string unwritable(const std::string &path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return "'" + path + "' is a folder";
  const fs::path parent = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (!fs::is_directory(parent, ec)) return "no such folder '" + parent.string() + "'";
  const fs::path probe = parent / (".mft-write-check-" + std::to_string(::getpid()));
  { std::ofstream out(probe); if (!out) return "folder '" + parent.string() + "' is not writable"; }
  fs::remove(probe, ec);
  return "";
}

// The same for a folder that a run creates if needed.
static std::string unwritable_folder(const std::string &dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) return "'" + dir + "' is not a folder";
  if (fs::is_directory(dir, ec)) return unwritable((fs::path(dir) / "x").string());
  fs::path up = fs::path(dir).parent_path();
  while (!up.empty() && !fs::exists(up, ec)) up = up.parent_path();
  return unwritable(((up.empty() ? fs::path(".") : up) / "x").string());
}

// Outputs and input files are checked on rank 0 before any work starts: a
// day of training must not end in a write that was bound to fail.
PetscErrorCode SettingsCheckOutputs(MPI_Comm comm, const std::string &command, const Settings &s) {
  PetscMPIInt rank;
  char why[1024] = "";
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    std::string w;
    const bool writes = command == "forward" || command == "train" || command == "ntk" || command == "limit" ||
                        command == "lse" || command == "worst";
    if (writes && !(w = unwritable(s.output.file)).empty()) w = "output.file cannot be written: " + w;
    else if (command == "train" && !(w = unwritable_folder(s.checkpoint.dir)).empty())
      w = "checkpoint.dir cannot be written: " + w;
    else if (command == "study" && !(w = unwritable_folder(s.study.dir)).empty()) w = "study.dir cannot be written: " + w;
    std::snprintf(why, sizeof why, "%s", w.c_str());
  }
  PetscCallMPI(MPI_Bcast(why, sizeof why, MPI_CHAR, 0, comm));
  PetscCheck(!why[0], comm, PETSC_ERR_USER_INPUT, "%s", why);
  // Input files named in the options are there and are files (MPI-IO would
  // print its own lines on a folder, and a study would start its cases).
  if (rank == 0) {
    std::string w;
    std::vector<std::pair<std::string, std::string>> inputs = {
        {"data.file", s.data.file}, {"data.heldout", s.data.heldout}, {"params.file", s.params_file},
        {"restart", s.restart == "auto" ? "" : s.restart}, {"worst.start", command == "worst" ? s.worst.start : ""}};
    std::istringstream references(command == "worst" ? s.worst.references : "");
    for (std::string r; references >> r;) inputs.emplace_back("worst.references", r);
    for (const auto &[key, path] : inputs)
      if (w.empty() && !path.empty() && !NotReadable(path).empty())
        w = "cannot open '" + path + "': " + NotReadable(path) + " (" + key + ")";
    std::snprintf(why, sizeof why, "%s", w.c_str());
  }
  PetscCallMPI(MPI_Bcast(why, sizeof why, MPI_CHAR, 0, comm));
  PetscCheck(!why[0], comm, PETSC_ERR_FILE_OPEN, "%s", why);
  PetscFunctionReturn(0);
}

// The reference dominates the grid by study.reference_margin in each size
// the grid varies (Lmax, Hmax: 0 where it does not). Not collective.
static PetscErrorCode ReferenceMarginCheck(MPI_Comm comm, const Settings &s, PetscInt Lmax, PetscInt Hmax) {
  const bool trained = s.study.state == StudyState::trained, varies_L = Lmax > 0, varies_H = Hmax > 0;
  PetscFunctionBeginUser;
  const double m = s.study.reference_margin;
  // A study in law compares with the SDE's paths, not with a reference of
  // limit.heads heads, unless given a finite reference (study.reference_L or
  // _H: a model of both sizes, as a trained study's); a study without
  // references has no reference's error.
  const bool finite_law = s.study_in_law() && (s.is_explicit("study.reference_L") || s.is_explicit("study.reference_H"));
  const bool sized = trained || finite_law; // the reference has a depth and a width of its own
  const PetscInt refH = sized ? s.study.reference_H : s.limit.heads;
  const bool referenced = finite_law || (!s.study_in_law() && s.study.references > 0);
  PetscCheck(!referenced || !varies_H || refH >= m * Hmax, comm, PETSC_ERR_USER_INPUT,
             "the reference's %" PetscInt_FMT " heads (%s) are fewer than study.reference_margin = %s times the "
             "largest H = %" PetscInt_FMT " of the grid: its own error would stay in the models' (lower "
             "study.reference_margin to run anyway)",
             refH, sized ? "study.reference_H" : "limit.heads", format_real(m).c_str(), Hmax);
  PetscCheck(!referenced || !sized || !varies_L || s.study.reference_L >= m * Lmax, comm, PETSC_ERR_USER_INPUT,
             "the reference's %" PetscInt_FMT " layers (study.reference_L) are fewer than study.reference_margin = %s "
             "times the largest L = %" PetscInt_FMT " of the grid: its own error would stay in the models' (lower "
             "study.reference_margin to run anyway)",
             s.study.reference_L, format_real(m).c_str(), Lmax);
  PetscFunctionReturn(0);
}

// A study's design, checked before any case runs: references that dominate
// the models, and a teacher that is no model's or reference's own draw.
static PetscErrorCode StudyCheck(MPI_Comm comm, const Settings &s) {
  const bool trained = s.study.state == StudyState::trained;
  std::vector<PetscInt> L, H;
  std::istringstream l(s.study.L), h(s.study.H);
  for (PetscInt x; l >> x;) L.push_back(x);
  for (PetscInt x; h >> x;) H.push_back(x);
  PetscFunctionBeginUser;
  const PetscInt Lmax = *std::max_element(L.begin(), L.end()), Hmax = *std::max_element(H.begin(), H.end());
  const bool varies_L = *std::min_element(L.begin(), L.end()) < Lmax, varies_H = *std::min_element(H.begin(), H.end()) < Hmax;
  PetscCheck(!s.study.probes.empty() || !s.study.probe_file.empty(), comm, PETSC_ERR_USER_INPUT,
             "the study has no probes: give study.probes or study.probe_file");
  for (const auto &[key, grid] : {std::pair<const char *, const std::vector<PetscInt> *>{"study.L", &L}, {"study.H", &H}})
    for (size_t i = 0; i < grid->size(); ++i)
      PetscCheck(std::count(grid->begin(), grid->end(), (*grid)[i]) == 1, comm, PETSC_ERR_USER_INPUT,
                 "%s holds %" PetscInt_FMT " twice: every cell would run twice", key, (*grid)[i]);
  const bool rates = !s.study.learning_rates.empty();
  PetscCheck(s.study.references > 0 || rates, comm, PETSC_ERR_USER_INPUT,
             "study.references = 0: a convergence study needs references (0 only with study.learning_rates)");
  PetscCheck(!rates || trained, comm, PETSC_ERR_USER_INPUT,
             "study.learning_rates needs study.state = trained (nothing is trained at initialisation)");
  std::istringstream lr(s.study.learning_rates);
  const auto nrates = std::distance(std::istream_iterator<std::string>(lr), std::istream_iterator<std::string>());
  PetscCheck(!rates || nrates >= 2, comm,
             PETSC_ERR_USER_INPUT, "study.learning_rates = '%s': a learning-rate study needs two rates or more",
             s.study.learning_rates.c_str());
  PetscCall(ReferenceMarginCheck(comm, s, varies_L ? Lmax : 0, varies_H ? Hmax : 0));
  const std::string &rk = s.study.reference_k;
  PetscCheck(rk.empty() || rk == "inf" || (rk.find_first_not_of("0123456789") == std::string::npos && rk[0] != '0'),
             comm, PETSC_ERR_USER_INPUT, "study.reference_k '%s' is neither a positive integer nor inf", rk.c_str());
  PetscCheck(rk.empty() || (trained && s.data.teacher_k > 0), comm, PETSC_ERR_USER_INPUT,
             "study.reference_k = %s: a trained study's reference of another head dimension, against one teacher for "
             "every k: give study.state trained and data.teacher_k", s.study.reference_k.c_str());
  PetscCheck(!s.study.grow_d || (trained && s.data.embed > 0 && rk != "inf" && !s.model.infinite_head), comm,
             PETSC_ERR_USER_INPUT,
             "study.grow_d: models of d = k H learn one task padded from R^data.embed: give study.state trained, "
             "data.embed > 0 and a finite model.k and study.reference_k");
  if (s.study.grow_d) { // every variant's k finite too: d = k H
    std::string text = s.study.variants;
    std::replace(text.begin(), text.end(), ';', ' ');
    std::istringstream words(text);
    for (std::string w; words >> w;) {
      PetscCheck(w.rfind("model.k=", 0) != 0 || w.find_first_not_of("0123456789", 8) == std::string::npos, comm,
                 PETSC_ERR_USER_INPUT, "study.grow_d: a variant sets %s, but d = k H needs a finite k", w.c_str());
    }
  }
  PetscCheck(s.data.embed == 0 || (!s.study.worst && !(s.study.fluctuation && s.is_explicit("study.fluctuation"))),
             comm, PETSC_ERR_USER_INPUT,
             "data.embed: a study compares Gram matrices, which study.worst and study.fluctuation do not");
  if (trained) {
    PetscCheck(s.data.teacher_perturbation == 0, comm, PETSC_ERR_USER_INPUT,
               "data.teacher_perturbation = %s in a trained study: its teacher is one model of the reference's shape "
               "for every case (use data.teacher_init for a teacher of another law)",
               format_real(s.data.teacher_perturbation).c_str());
    for (PetscInt k = 1; k <= s.study.seeds; ++k)
      PetscCheck(s.init.seed + (std::uint64_t)k != s.data.teacher_seed, comm, PETSC_ERR_USER_INPUT,
                 "init.seed + %" PetscInt_FMT " = %llu is data.teacher_seed: seed %" PetscInt_FMT
                 "'s models would start from the teacher's own draw (choose another init.seed or data.teacher_seed)",
                 k, (unsigned long long)s.data.teacher_seed, k);
    for (PetscInt r = 0; r < s.study.references; ++r)
      PetscCheck(s.init.seed + 100003 * (std::uint64_t)r != s.data.teacher_seed, comm, PETSC_ERR_USER_INPUT,
                 "reference %" PetscInt_FMT "'s seed init.seed + %llu = %llu is data.teacher_seed: it would start from "
                 "the teacher's own draw (choose another init.seed or data.teacher_seed)",
                 r, 100003ull * (unsigned long long)r, (unsigned long long)s.data.teacher_seed);
  }
  PetscFunctionReturn(0);
}

// The worst-input searches (mft worst, study.worst): each N of study.worst_N
// starts from the one before (a multiple of it), the measure from the
// largest N (at least as many atoms), and a measure has no order for the
// causal mask (a study of masked variants among others skips their measure).
static PetscErrorCode WorstCheck(MPI_Comm comm, const Settings &s) {
  std::vector<PetscInt> Ns;
  std::istringstream n(s.study.worst_N);
  for (PetscInt x; n >> x;) Ns.push_back(x);
  PetscFunctionBeginUser;
  PetscCheck(s.command != "study" || s.study.worst || s.study.worst_atoms == 0, comm, PETSC_ERR_USER_INPUT,
             "study.worst_atoms = %" PetscInt_FMT " without study.worst = true: no search would run (set "
             "study.worst = true, or leave study.worst_atoms out)", s.study.worst_atoms);
  for (size_t i = 1; i < Ns.size(); ++i)
    PetscCheck(Ns[i] > Ns[i - 1] && Ns[i] % Ns[i - 1] == 0, comm, PETSC_ERR_USER_INPUT,
               "study.worst_N: %" PetscInt_FMT " after %" PetscInt_FMT " is not a larger multiple of it (each N "
               "starts from the one before, its tokens repeated)", Ns[i], Ns[i - 1]);
  const PetscInt largest = Ns.empty() ? s.data.N : Ns.back();
  PetscCheck(s.study.worst_atoms == 0 || s.study.worst_atoms >= largest, comm, PETSC_ERR_USER_INPUT,
             "study.worst_atoms = %" PetscInt_FMT " is fewer than the largest N searched (%" PetscInt_FMT
             "), whose input starts the measure", s.study.worst_atoms, largest);
  // A study's variants may differ in the mask: a masked variant's chains then skip the measure (study_worst.cpp).
  const bool measures = s.command == "worst" ? s.worst.atoms > 0
                                             : s.study.worst && s.study.worst_atoms > 0 && s.study.variants.empty();
  PetscCheck(!measures || !s.model.causal, comm, PETSC_ERR_USER_INPUT,
             "%s: a measure of weighted atoms has no order, and model.causal = true orders the tokens",
             s.command == "worst" ? "worst.atoms" : "study.worst_atoms");
  // Options that would do nothing are refused rather than ignored.
  PetscCheck(s.command != "worst" || s.data.file.empty(), comm, PETSC_ERR_USER_INPUT,
             "mft worst searches inputs of its own (data.N tokens, or worst.atoms atoms, in the ball of "
             "worst.radius): it reads no data.file (%s)", s.data.file.c_str());
  const bool searches = s.command == "worst" || s.study.worst;
  PetscCheck(!searches || s.model.norm != TokenNorm::sphere || !s.is_explicit("worst.radius"), comm,
             PETSC_ERR_USER_INPUT,
             "worst.radius = %s does not apply to model.norm = sphere: the inputs searched lie on the unit sphere",
             format_real(s.worst.radius).c_str());
  PetscFunctionReturn(0);
}

// The diffusive limit's samples and paths, refused where nothing draws them.
static PetscErrorCode LawCheck(MPI_Comm comm, const Settings &s) {
  PetscFunctionBeginUser;
  const bool in_law = s.command == "study" ? s.study_in_law() : s.command != "limit" || s.model.diffusive();
  for (const char *key : {"study.samples", "study.target", "study.max_samples", "study.levels", "study.k", "limit.paths", "limit.steps", "limit.step_heads", "limit.richardson",
                          "limit.coupling"})
    PetscCheck(in_law || !s.is_explicit(key) || (s.trained_in_law() && key == std::string("study.k")), comm,
               PETSC_ERR_USER_INPUT,
               "%s does not apply here: only a study in law (a = c = 0.5 at initialisation, centred value maps) "
               "and mft limit at a = c = 0.5 draw samples and paths of the diffusive limit%s",
               key, s.command == "study" ? " (this study is compared seed by seed)" : "");
  PetscFunctionReturn(0);
}

// Depth and head exponents (docs/model.md, 'Depth and head exponents'): the
// limits mft computes, and a drift that grows without bound said once.
static PetscErrorCode ExponentCheck(MPI_Comm comm, const Settings &s) {
  const ModelSettings &m = s.model;
  const double a = m.depth_exponent, c = m.head_exponent;
  PetscFunctionBeginUser;
  if (m.mean_field()) PetscFunctionReturn(0);
  PetscCheck(s.command != "limit" || m.diffusive(), comm, PETSC_ERR_USER_INPUT,
             "mft limit computes the mean-field ODE (model.depth_exponent = model.head_exponent = 1) and the diffusive "
             "SDE (both 0.5, centred value maps); a = %s, c = %s has no limit it computes", format_real(a).c_str(),
             format_real(c).c_str());
  PetscCheck(s.command != "study" || s.study.state == StudyState::trained || s.study_in_law(), comm,
             PETSC_ERR_USER_INPUT,
             "a study at initialisation compares every model, seed by seed, with the mean-field ODE reference of "
             "a = c = 1, or in law with the diffusive limit of a = c = 0.5; a = %s, c = %s has neither: train "
             "(study.state = trained)", format_real(a).c_str(), format_real(c).c_str());
  PetscCheck(s.command != "study" || s.study.state == StudyState::trained || s.init.centred(m.head_kind), comm,
             PETSC_ERR_USER_INPUT,
             "a study in law compares with the diffusive limit of centred value maps; init.v_mean = %s has no limit "
             "at a = c = 0.5", format_real(s.init.v_mean).c_str());
  const bool drift = !s.init.centred(m.head_kind) && (a < 1 || c < 1);
  static bool said = false;
  if (drift && !said && s.command != "info")
    PetscCall(PetscPrintf(comm,
                          "mft: warning: value maps of mean init.v_mean = %s with a = %s, c = %s: the drift "
                          "L^(1-a) H^(1-c) E[Attn] grows without bound with L or H, so the model has no limit "
                          "(centred value maps, init.v_mean = 0, have none)\n",
                          format_real(s.init.v_mean).c_str(), format_real(a).c_str(), format_real(c).c_str()));
  said = said || drift;
  PetscFunctionReturn(0);
}

// The infinite head (model.k = inf, docs/model.md, 'The infinite head'): the
// limit of k^-g Q^T K, which exists for g >= 1/2, at initialisation.
static PetscErrorCode InfiniteHeadCheck(MPI_Comm comm, const Settings &s) {
  PetscFunctionBeginUser;
  if (!s.model.infinite_head) PetscFunctionReturn(0);
  PetscCheck(s.model.logit_exponent >= 0.5, comm, PETSC_ERR_USER_INPUT,
             "model.k = inf is the limit of k^-g Q^T K, a Gaussian W at model.logit_exponent = 0.5 and 0 above it; "
             "at g = %s it grows without bound", format_real(s.model.logit_exponent).c_str());
  const bool differentiates = s.gradient || s.command == "ntk";
  PetscCheck(s.command != "bench" && !differentiates, comm, PETSC_ERR_USER_INPUT,
             "model.k = inf is the infinite head's law at initialisation (forward, limit, worst, studies at "
             "initialisation) and its gradient descent (mft train, trained studies): its gradient is not that of its "
             "k = d form (docs/model.md, 'The infinite head'), and mft %s%s %s its heads", s.command.c_str(),
             s.gradient ? " --gradient" : "", differentiates ? "differentiates" : "would train");
  const bool plain = s.train.block_lr_exponents == std::array<double, 4>{};
  const bool trains = s.command == "train" || (s.command == "study" && s.study.state == StudyState::trained);
  PetscCheck(!trains || (s.train.optimizer == OptimizerKind::gd && s.model.head_kind == HeadKind::qkv && plain),
             comm, PETSC_ERR_USER_INPUT,
             "mft trains the infinite head (model.k = inf) by its limit of gradient descent, for qkv heads: "
             "give train.optimizer gd, model.head_kind qkv and no train.block_lr_exponents (AdamW's and qkvo's "
             "limits are in docs/model.md, 'The infinite head', and not built)");
  PetscFunctionReturn(0);
}

// An ensemble (train.seeds > 1) trains every model from its own draw on the
// same data and writes one file with a seeds axis: what belongs to one model
// or one run file is refused in one line.
static PetscErrorCode EnsembleCheck(MPI_Comm comm, const Settings &s) {
  PetscFunctionBeginUser;
  if (s.train.seeds <= 1) PetscFunctionReturn(0);
  const std::pair<bool, const char *> refused[] = {
      {!s.params_file.empty(), "params.file (every model starts from its own seed's draw)"},
      {!s.data.heldout.empty(), "data.heldout"},
      {s.loss.accuracy, "loss.accuracy"},
      {s.train.ntk != NtkPart::none, "train.ntk"},
      {s.output.trajectory > 0, "output.trajectory"},
      {s.data.teacher_perturbation > 0, "data.teacher_perturbation (a teacher per model: not the same data)"}};
  for (const auto &[given, what] : refused)
    PetscCheck(!given, comm, PETSC_ERR_USER_INPUT,
               "train.seeds = %" PetscInt_FMT " trains an ensemble, which does not take %s: train one model for it",
               s.train.seeds, what);
  PetscFunctionReturn(0);
}

// MLP sublayers: the commands and forms that take them.
static PetscErrorCode MlpCheck(MPI_Comm comm, const Settings &s) {
  PetscFunctionBeginUser;
  PetscCheck(!s.study.mlp_axis || (s.model.mlp() && s.study.mlp_per_head == 0 && !s.study.grow_d &&
                                   s.study.k.empty() && s.study.state == StudyState::init),
             comm, PETSC_ERR_USER_INPUT,
             "study.mlp_axis makes study.H the MLP width m of studies at initialisation: give model.mlp_width > 0 "
             "(and its activation), study.state init, and no study.mlp_per_head, study.grow_d or study.k");
  PetscCheck(s.study.mlp_per_head == 0 || s.model.mlp(), comm, PETSC_ERR_USER_INPUT,
             "study.mlp_per_head = %" PetscInt_FMT " sets the width of MLP sublayers: give model.mlp_width > 0 (and "
             "its activation) too", s.study.mlp_per_head);
  if (!s.model.mlp()) PetscFunctionReturn(0);
  const ModelSettings &m = s.model;
  PetscCheck(s.command != "limit" || !m.mean_field() || (m.mlp_depth_exponent == 1 && m.mlp_width_exponent == 1), comm,
             PETSC_ERR_USER_INPUT,
             "the mean-field ODE's MLP sublayers are those of model.mlp_depth_exponent = model.mlp_width_exponent = 1 "
             "(given %s and %s): their drift is E[w sigma(u . x + b)]", format_real(m.mlp_depth_exponent).c_str(),
             format_real(m.mlp_width_exponent).c_str());
  PetscCheck(!s.limit.fluctuation && !(s.study.fluctuation && s.is_explicit("study.fluctuation")), comm,
             PETSC_ERR_USER_INPUT,
             "limit.fluctuation and study.fluctuation are the law of attention's error alone: give no "
             "model.mlp_width with them");
  PetscFunctionReturn(0);
}


// Every learning rate the sizes scale (train.lr L^-x H^-y, a head block's
// k^-e; the neurons' L^-x' m^-y' m^-e) is a positive normal number: an
// exponent of 1e308 underflows it to 0, and training would not move.
static PetscErrorCode ScaledRatesCheck(MPI_Comm comm, const Settings &s) {
  const TrainSettings &t = s.train;
  const ModelSettings &m = s.model;
  const double heads = t.lr * std::pow((double)m.L, -t.lr_depth_exponent) * std::pow((double)m.H, -t.lr_head_exponent);
  std::vector<std::pair<std::string, double>> rates = {{"train.lr L^-lr_depth_exponent H^-lr_head_exponent", heads}};
  for (double e : t.block_lr_exponents)
    if (e != 0 && m.k > 0) rates.emplace_back("that times k^-train.block_lr_exponents", heads * std::pow((double)m.k, -e));
  if (m.mlp()) {
    const double neurons = t.lr * std::pow((double)m.L, -t.mlp_lr_depth_exponent) *
                           std::pow((double)m.mlp_width, -t.mlp_lr_width_exponent);
    rates.emplace_back("train.lr L^-mlp_lr_depth_exponent m^-mlp_lr_width_exponent", neurons);
    for (double e : t.mlp_block_lr_exponents)
      if (e != 0) rates.emplace_back("that times m^-train.mlp_block_lr_exponents", neurons * std::pow((double)m.mlp_width, -e));
  }
  PetscFunctionBeginUser;
  for (const auto &[what, rate] : rates)
    PetscCheck(std::isnormal(rate) && rate > 0, comm, PETSC_ERR_USER_INPUT,
               "the scaled learning rate %s = %s at L = %" PetscInt_FMT ", H = %" PetscInt_FMT
               " is not a positive finite number: lower the exponents", what.c_str(), format_real(rate).c_str(), m.L,
               m.H);
  PetscFunctionReturn(0);
}
// Settings that are valid one by one but not together.
PetscErrorCode SettingsCheckTogether(MPI_Comm comm, const Settings &s) {
  PetscFunctionBeginUser;
  PetscCall(EnsembleCheck(comm, s));
  PetscCall(ExponentCheck(comm, s));
  PetscCall(LawCheck(comm, s));
  PetscCall(InfiniteHeadCheck(comm, s));
  for (const auto &[key, n] : {std::make_pair("limit.adjoint_heads", s.limit.adjoint_heads),
                                std::make_pair("limit.sample_heads", s.limit.sample_heads)})
    PetscCheck(!s.is_explicit(key) || n <= s.limit.heads, comm, PETSC_ERR_USER_INPUT,
               "%s = %" PetscInt_FMT " exceeds limit.heads = %" PetscInt_FMT
               ": it takes the ensemble's first heads (0: all of them)", key, n, s.limit.heads);
  PetscCheck(s.data.embed <= s.model.d, comm, PETSC_ERR_USER_INPUT,
             "data.embed = %" PetscInt_FMT " exceeds model.d = %" PetscInt_FMT ": tokens are padded into R^model.d",
             s.data.embed, s.model.d);
  PetscCheck(s.data.embed == 0 || (s.data.file.empty() && s.loss.kind == LossKind::token), comm, PETSC_ERR_USER_INPUT,
             "data.embed pads the families' tokens and the teacher's x(1): it takes no data.file and the token loss");
  PetscCheck(s.data.param_max >= s.data.param_min, comm, PETSC_ERR_USER_INPUT,
             "data.param_max (%g) is smaller than data.param_min (%g)", s.data.param_max, s.data.param_min);
  PetscCheck(!s.output.file.empty(), comm, PETSC_ERR_USER_INPUT, "output.file is empty");
  PetscCheck(s.train.beta1 < 1 && s.train.beta2 < 1, comm, PETSC_ERR_USER_INPUT,
             "train.beta1 and train.beta2 must be below 1 (got %g and %g)", s.train.beta1, s.train.beta2);
  PetscCheck(s.train.lr_min <= s.train.lr, comm, PETSC_ERR_USER_INPUT, "train.lr_min (%g) exceeds train.lr (%g)",
             s.train.lr_min, s.train.lr);
  PetscCheck(s.train.ntk == NtkPart::none || (s.train.lr_depth_exponent == 0 && s.train.lr_head_exponent == 0), comm,
             PETSC_ERR_USER_INPUT,
             "train.ntk predicts the rate of log R at train.lr itself: give no train.lr_depth_exponent or "
             "train.lr_head_exponent with it");
  PetscCheck(s.train.ntk == NtkPart::none || (s.train.mlp_lr_depth_exponent == 0 && s.train.mlp_lr_width_exponent == 0 &&
                                                s.train.mlp_block_lr_exponents == std::array<double, 3>{}),
             comm, PETSC_ERR_USER_INPUT,
             "train.ntk predicts the rate of log R at train.lr itself: give no train.mlp_lr_depth_exponent, "
             "train.mlp_lr_width_exponent or train.mlp_block_lr_exponents with it");
  PetscCheck(s.parallel.threads <= kMaxThreads, comm, PETSC_ERR_USER_INPUT,
             "parallel.threads = %" PetscInt_FMT " is more than %d threads a rank", s.parallel.threads, (int)kMaxThreads);
  if (s.command == "study") {
    std::istringstream times(s.study.times);
    for (PetscInt t; times >> t;)
      PetscCheck(t <= s.study.steps, comm, PETSC_ERR_USER_INPUT,
                 "study.times entry %" PetscInt_FMT " is beyond study.steps = %" PetscInt_FMT, t, s.study.steps);
    PetscCall(StudyCheck(comm, s));
  }
  if (s.command == "study" || s.command == "worst") PetscCall(WorstCheck(comm, s));
  PetscCall(MlpCheck(comm, s));
  PetscCall(ScaledRatesCheck(comm, s));
  PetscFunctionReturn(0);
}

PetscErrorCode SettingsCheck(MPI_Comm comm, const Settings &s) {
  const ModelSettings &m = s.model;
  const DataSettings &d = s.data;
  PetscMPIInt size;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  const double limit = (double)std::numeric_limits<PetscInt>::max();
  const double tokens = (double)d.M * d.N * m.d;
  PetscCheck(tokens <= limit, comm, PETSC_ERR_USER_INPUT,
             "data.M * data.N * model.d = %.0f exceeds the largest vector this PETSc can index (%.0f)", tokens, limit);
  const double head = m.head_kind == HeadKind::qkv ? 2.0 * m.k * m.d + (double)m.d * m.d : 4.0 * m.k * m.d;
  PetscCheck(head * m.L * m.H <= limit, comm, PETSC_ERR_USER_INPUT,
             "model.L * model.H * (parameters per head) = %.0f exceeds the largest vector this PETSc can index (%.0f)",
             head * m.L * m.H, limit);
  PetscCheck(s.train.batch <= d.M, comm, PETSC_ERR_USER_INPUT,
             "train.batch = %" PetscInt_FMT " exceeds data.M = %" PetscInt_FMT, s.train.batch, d.M);
  const PetscInt hg = s.parallel.head_groups;
  if (hg > 0) {
    PetscCheck(size % hg == 0, comm, PETSC_ERR_USER_INPUT,
               "parallel.head_groups = %" PetscInt_FMT " does not divide the %d ranks", hg, size);
    PetscCheck(hg <= m.H, comm, PETSC_ERR_USER_INPUT,
               "parallel.head_groups = %" PetscInt_FMT " exceeds model.H = %" PetscInt_FMT, hg, m.H);
  }
  PetscFunctionReturn(0);
}

} // namespace mft
