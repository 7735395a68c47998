// Every option of the mft program: its default, its meaning and its check.
//
// Options have dotted names (`model.L`, `train.lr`). They come from an INI file
// given by `--config FILE` (sections [model], [data], [init], [loss], [train],
// [output], [parallel]) and from the command line, which overrides the file.
// Arguments with a single dash (`-ts_monitor`, `-log_view`) belong to PETSc.
#pragma once

#include "mft/kernels/shape.hpp"

#include <petscsys.h>

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mft {

// The choices of the option table, parsed once from their words (settings.cpp).
enum class LossKind { token, pooled };                  // loss.kind
enum class InitLaw { gaussian, uniform };               // init.law
enum class OptimizerKind { gd, adamw, adamw_block };    // train.optimizer: gd, adamw, adamw-block
enum class Schedule { constant, cosine };               // train.schedule
enum class NtkPart { none, full, value };               // train.ntk (none, full, value), ntk.part (full, value)
enum class LimitScheme { rk, euler };                   // limit.scheme
enum class LimitCoupling { independent, halves, merged }; // limit.coupling
enum class StudyState { init, trained };                // study.state
enum class StudySchedule { serial, groups };            // study.schedule
enum class LseMode { sample, closed };                  // lse.mode
enum class CutSequences { automatic, tokens, projections }; // parallel.cut_sequences: auto, tokens, projections
enum class TokenNorm { none, sphere, pre };             // model.norm (norm.hpp)

struct ModelSettings {
  PetscInt L = 8;             // layers: the Euler step is 1/L
  PetscInt H = 8;             // heads per layer
  PetscInt d = 4;             // token dimension
  PetscInt k = 2;             // query/key (and qkvo value) dimension
  HeadKind head_kind = HeadKind::qkv;
  double beta = 1.0;          // inverse temperature of the softmax
  bool causal = false;        // decoder mask j <= i
  TokenNorm norm = TokenNorm::none; // sphere: tokens on the unit sphere; pre: attention reads sqrt(d) x / |x|
  // A layer adds L^-a H^-c sum_h Attn (docs/model.md, 'Depth and head
  // exponents'): a = depth_exponent, c = head_exponent; 1 and 1 are the
  // mean-field (ODE) model, 1/2 and 1/2 with centred value maps the diffusive one.
  double depth_exponent = 1.0, head_exponent = 1.0;
  // The logits beta k^-g x_i^T Q^T K x_j (docs/model.md, 'The logit
  // exponent'): g = logit_exponent; 0 (the default) leaves beta alone,
  // 1/2 is standard attention's 1/sqrt(k), 1 muP's 1/k.
  double logit_exponent = 0.0;
  // model.k = inf: the k -> infinity limit of a head at initialisation
  // (docs/model.md, 'The infinite head'), held as a head of k = d with
  // Q = I and K = W; k is then d.
  bool infinite_head = false;
  // MLP sublayers (docs/model.md, 'The MLP sublayer'): after each layer's
  // attention, every token x <- x + L^-a' m^-c' sum_j w_j sigma(u_j . x + b_j),
  // m = mlp_width neurons (0: attention alone), a' = mlp_depth_exponent,
  // c' = mlp_width_exponent, sigma = mlp_activation.
  PetscInt mlp_width = 0;
  Activation mlp_activation = Activation::relu;
  double mlp_depth_exponent = 1.0, mlp_width_exponent = 1.0;
  bool mlp() const { return mlp_width > 0; }
  bool mean_field() const { return depth_exponent == 1.0 && head_exponent == 1.0; }
  bool diffusive() const { return depth_exponent == 0.5 && head_exponent == 0.5; }
};

// The factor of a layer's head sum in the velocity f_l = scale sum_h Attn
// that an Euler step of 1/L applies: L^(1-a) H^-c, exactly 1/H when a = c = 1.
// Not collective.
double HeadSumScale(const ModelSettings &m, PetscInt L, PetscInt H);

// The logits' factor beta k^-g: exactly beta when g = 0, and for the
// infinite head (whose W carries the k^-1/2).
// Not collective.
double LogitScale(const ModelSettings &m);

// The reported gradient's factor, g = L^a H^c dR/dtheta: exactly L H when a = c = 1.
// Not collective.
double GradientScale(const ModelSettings &m, PetscInt L, PetscInt H);

// The MLP sublayer's factor of its neuron sum in the velocity (an Euler step
// of 1/L applies it): L^(1-a') m^-c'; and its reported gradient's factor,
// L^a' m^c' (HeadSumScale and GradientScale with a', c' and m for a, c and H).
// Not collective.
double NeuronSumScale(const ModelSettings &m, PetscInt L);
double NeuronGradientScale(const ModelSettings &m, PetscInt L);

// The token distribution families of data.family (families.hpp samples them).
inline const std::vector<std::string> kFamilies = {"discrete", "uniform_cube", "laplace", "gauss_mix2", "gaussian"};

struct DataSettings {
  PetscInt M = 4;             // sequences
  PetscInt N = 8;             // tokens per sequence
  std::string family = "discrete";
  double param_min = 1.0;     // per-sequence parameter range (radius, scale, separation)
  double param_max = 1.0;
  double mix_std = 0.5;       // gauss_mix2: component standard deviation s
  double mean_spread = 1.0;   // gaussian: spread of the per-sequence means
  std::uint64_t seed = 1;     // tokens
  std::uint64_t teacher_seed = 2;  // heads of the teacher that makes the targets
  double teacher_perturbation = 0; // > 0: the teacher is the initial heads plus this times N(0,1) entries
  PetscInt teacher_L = 0, teacher_H = 0; // the teacher's shape (0: the student's; a trained study: the reference's)
  PetscInt teacher_k = 0;                // the teacher's head dimension (0: the student's)
  PetscInt teacher_mlp_width = 0;        // the teacher's MLP width (0: the student's)
  PetscInt embed = 0;         // > 0: tokens drawn in R^embed, padded with zeros into R^model.d; the teacher in R^embed
  double teacher_depth_exponent = 0, teacher_head_exponent = 0; // the teacher's a and c (0: the student's)
  std::string teacher_init;   // the teacher's own law: init.* overrides "v_mean=-1 q_gain=3" (empty: the students')
  std::string file;           // user data in the docs/model.md layout (overrides the family)
  std::string heldout;        // train: a held-out data file, evaluated at every logged step
};

struct InitSettings {
  InitLaw law = InitLaw::gaussian;
  std::uint64_t seed = 3;
  // Entry spread of each block: gain / sqrt(fan-in); block mean: mean * I (rectangular).
  double q_gain = 1.0, k_gain = 1.0, v_gain = 1.0, o_gain = 1.0;
  double q_mean = 0.0, k_mean = 0.0, v_mean = 0.0, o_mean = 0.0;
  // The neurons' law: u entries of std u_gain / sqrt(d), b of std b_gain, w
  // entries of mean w_mean and std w_gain (docs/model.md, 'The MLP sublayer').
  double mlp_u_gain = 1.0, mlp_b_gain = 0.0, mlp_w_gain = 1.0, mlp_w_mean = 0.0;
  PetscInt samples = 0;       // forward: this many initialisations (seeds seed, seed + 1, ...): samples of the law
  // Value maps of mean zero, E A = 0 (A = V, or O V with O and V independent).
  bool centred(HeadKind kind) const { return v_mean == 0.0 || (kind == HeadKind::qkvo && o_mean == 0.0); }
};

struct LossSettings {
  LossKind kind = LossKind::token;
  PetscInt c = 1;             // pooled: outputs per sequence
  std::uint64_t readout_seed = 4;
  bool accuracy = false;      // train, pooled loss: the fraction of sequences whose largest output is the target's
};

struct TrainSettings {
  OptimizerKind optimizer = OptimizerKind::gd;
  double lr = 0.1;
  PetscInt steps = 100;
  PetscInt log_every = 10;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // AdamW moments
  double weight_decay = 0.0;                     // decoupled: theta <- theta - lr lambda theta
  Schedule schedule = Schedule::constant;
  PetscInt warmup = 0;                           // linear warm-up steps
  double lr_min = 0.0;                           // cosine: final learning rate
  PetscInt batch = 0;                            // sequences per step (0: full batch)
  std::uint64_t seed = 5;                        // mini-batch draws
  NtkPart ntk = NtkPart::none;                   // the NTK at the start, its rate fitted at the end
  // Per block (Q, K, V, O) the exponent e of its rate lr k^-e (muP's
  // per-block rates, docs/model.md 'The infinite head'); all 0: lr itself.
  std::array<double, 4> block_lr_exponents{};
  // The rate's exponents in depth and width: every block steps at
  // lr L^-x H^-y k^-e_b (docs/model.md, 'Learning rates that scale'); 0 0: lr.
  double lr_depth_exponent = 0, lr_head_exponent = 0;
  // The MLP sublayers' neurons step at lr L^-x' m^-y' (optimizer.hpp).
  double mlp_lr_depth_exponent = 0, mlp_lr_width_exponent = 0;
  std::array<double, 3> mlp_block_lr_exponents{}; // per block u, b, w: times m^-e
  // mft train: independent models trained together, seeds init.seed ..
  // init.seed + seeds - 1, partitioned over the ranks (ensemble.hpp).
  PetscInt seeds = 1;
};

struct NtkSettings {
  NtkPart part = NtkPart::value; // full: every block; value: V (and O for qkvo), seed 1's V-part
  double threshold = 1e-10;    // positive definite when lambda_min > threshold * lambda_max
  double max_gb = 4.0;         // memory a rank may use for the Jacobian rows and the matrix
  PetscInt max_matrix = 4096;  // /ntk/matrix is written up to this many outputs
};

struct LimitSettings {
  PetscInt heads = 4096;       // H_ref: the ensemble shared by every depth
  LimitScheme scheme = LimitScheme::rk; // rk: adaptive TSRK 5dp; euler: model.L Euler steps, same ensemble
  double rtol = 1e-10, atol = 1e-12;
  bool fluctuation = false;    // the error's law of the model.L x model.H model at initialisation (fluctuation.hpp)
  PetscInt probes = 0;         // probe vectors of the trace estimate (0: every one of the N d unit vectors, exact)
  PetscInt sample_heads = 1024; // heads of the ensemble the expectation over one head is taken over (0: all)
  PetscInt adjoint_heads = 512; // the probes' adjoint sweep: the ensemble's first this many heads (0: all)
  // The diffusive limit (a = c = 1/2): the SDE's paths (limit.hpp, LimitPaths).
  PetscInt paths = 1024;       // sample paths of the probe tokens (their noise shared by every sequence)
  PetscInt steps = 64;         // n: steps of the weak Euler scheme (and 2n for the Richardson extrapolation)
  PetscInt step_heads = 2;     // fresh heads drawn at every step (the increment's law; any number gives the SDE)
  bool richardson = true;      // the Gram means extrapolated from n and 2n steps: 2 E_2n - E_n
  LimitCoupling coupling = LimitCoupling::halves; // the n-step paths from the 2n-step ones' heads (limit.hpp)
};

struct StudySettings {
  std::string L = "2 4 8 16";         // depths of the grid
  std::string H = "2 4 8 16";         // widths of the grid
  PetscInt seeds = 3;                 // initial-head seeds per (L, H): init.seed + 1 .. + seeds
  PetscInt samples = 2000;            // a study in law (a = c = 1/2): samples of each (L, H) model (the pilot, with a target)
  double target = 0;                  // a study in law: the half-width of each cell's err_law interval asked for (0: none)
  PetscInt max_samples = 0;           // a study in law with a target: the most samples a cell draws (0: 64 samples)
  bool levels = false;                // a study in law: the diagonal's multilevel hierarchy (study_levels.hpp)
  std::string k;                      // a study in law over the head dimension: its k (study_in_law.hpp)
  StudyState state = StudyState::init; // init: against the mean-field reference; trained: after `steps`
  PetscInt steps = 50;                // trained: training steps (the config's optimizer) of every model
  std::string times;                  // trained: steps at which err is recorded (0 and `steps` always are)
  PetscInt reference_L = 128;         // trained: the reference model, trained the same way
  PetscInt reference_H = 128;
  std::string reference_k;            // trained: the reference's head dimension, an integer or inf ("": the models')
  PetscInt references = 4;            // independent references (seeds): their spread estimates their own error
  double reference_margin = 4;        // the reference at least this times the largest model in a varied direction
  double resolution = 0.5;            // a cell is resolved when the references' error / err_corrected <= this
  bool keep_unresolved = false;       // fit the unresolved cells too
  bool grow_d = false;                // trained, with data.embed: every model of d = k H (at least data.embed)
  PetscInt mlp_per_head = 0;          // > 0: every model's MLP sublayers of m = mlp_per_head H neurons
  bool mlp_axis = false;              // the grid's width (study.H) is the MLP's m, at the variant's model.H
  std::string probes = "discrete uniform_cube"; // probe families (the training family need not be among them)
  PetscInt probe_M = 4;               // probe sequences per family
  std::string probe_N;                // tokens of the probe sequences (several: one probe set each); empty: data.N
  std::string probe_file;             // a data file whose first probe_M sequences are one more probe set
  std::string variants;               // ';'-separated sets of key=value overrides (N, d, optimizer sweeps)
  std::string learning_rates;         // a learning-rate study: every variant at each train.lr
  std::string dir = "study";          // one HDF5 file per case, then the tables and plots
  std::string only;                   // run only these cases (a Slurm array task); empty: all
  StudySchedule schedule = StudySchedule::groups; // groups: cases on groups of ranks sized by cost (study_plan.hpp)
  PetscInt plan_cores = 0;            // --list: the plan on this many cores (0: none)
  double task_seconds = 3600;         // --list, plan_cores: the Slurm packing's target of predicted seconds a task
  bool fluctuation = true;            // at initialisation: every cell's err predicted from the limit (fluctuation.hpp)
  bool worst = false;                 // also the worst-input error of every case at every time (worst.hpp)
  std::string worst_N;                // tokens of the worst inputs searched (several: one search each); empty: data.N
  PetscInt worst_atoms = 0;           // > 0: also the worst measure of this many weighted atoms (N = infinity)
};

// mft worst: the input of largest error against references (worst.hpp).
struct WorstSettings {
  std::string references;      // run files of the references (space-separated)
  double radius = 1.0;         // every token in the ball |x_i| <= radius
  PetscInt starts = 8;         // random starts (each token uniform in the ball), besides the probe families
  PetscInt keep = 0;           // starts ascended after the first evaluation, the best of them (0: all)
  PetscInt steps = 100;        // ascent iterations (0: the starts only)
  std::uint64_t seed = 8;      // the random starts
  PetscInt log_every = 10;     // progress every this many iterations
  bool crossfit = true;        // search against half the references, score on the other half
  PetscInt atoms = 0;          // > 0: search measures of this many weighted atoms instead of sequences of data.N tokens
  std::string start;           // an earlier search's result file: its input is one more start
  bool check = false;          // search again with twice the starts and steps and report the relative gain
};

struct BenchSettings {
  std::string sizes = "S1 S2 S3"; // standard sizes (S1, S2, S3), or "custom": the [model] and [data] settings
  PetscInt repeats = 5;              // 0: no timing (predictions only, at parallel.rate)
  std::string ranks;                // rank counts for the cost model's predictions (cost.hpp)
  std::string write;               // a folder: also write bench_<size>.h5 (data, params, output, gradient)
};

struct LseSettings {
  PetscInt points = 512;       // sample points a in the ball
  double radius = 1.0;         // radius of the ball
  std::uint64_t seed = 6;      // the points
  LseMode mode = LseMode::sample; // sample: lse of each sequence's N tokens; closed: the closed forms
};

struct CheckpointSettings {
  PetscInt every = 100;       // steps between checkpoints (0: only at the end and on a signal)
  PetscInt keep = 2;          // checkpoints kept
  std::string dir = "checkpoints";
};

struct OutputSettings {
  std::string file = "run.h5";
  PetscInt trajectory = 0;    // forward, train, limit: tokens (and adjoint) at S + 1 depths (0: off)
  bool samples = true;        // forward --init.samples, mft limit's paths: every sample's x(1) in the file
};

// The most cores a study's plan is made for (study.plan_cores): 2^20, more
// than any machine has, and planned within seconds.
constexpr PetscInt kPlanCoresMost = 1048576;

// The most threads a rank runs (parallel.threads above it is refused;
// OMP_NUM_THREADS above it is capped, with a warning).
constexpr PetscInt kMaxThreads = 1024;

struct ParallelSettings {
  PetscInt head_groups = 0;   // 0: chosen by the cost model (cost.hpp)
  PetscInt threads = 0;       // threads per rank over its sequences and heads; 0: OMP_NUM_THREADS, else 1
  CutSequences cut_sequences = CutSequences::automatic; // tokens.hpp; automatic: the cost model's choice
  bool overlap = true;        // exchanges behind the kernels (heads.hpp, tokens.hpp); off: each waited for at once
  double latency = 1.5e-6;    // the cost model's network (cost.hpp): seconds a message within a node
  double bandwidth = 12e9;    // bytes a second within a node
  double remote_latency = 2.5e-6;  // between nodes
  double remote_bandwidth = 25e9;  // bytes a second a rank sends off its node
  double card_bandwidth = 25e9;    // bytes a second a node's network card carries
  PetscInt node_cores = 0;         // mft bench's predictions: cores a node (0: one node)
  PetscInt node_ranks = 0;         // ranks a node in rank order (0: those that share memory)
  double rate = 13.6e9;       // attention operations a second on one rank
  // A study's cases priced (study_plan.hpp): what the operation count misses.
  // Fitted to the shipped studies' case times (jobs/study_costs.py, 2026-12-02, 2-core AMD EPYC).
  double unit_overhead = 5.9e-7;   // seconds a (layer, head, sequence) unit of a step on its rank
  double causal_overhead = 4.7e-7; // seconds more a causal unit takes (short rows, one at a time)
  double layer_overhead = 3.0e-6;  // seconds a layer of a step
  double case_overhead = 0.021;      // seconds a case and each file it writes
  // A mean-field reference (a large shared ensemble) on a group that shares
  // its node with other groups runs this much slower than alone (the
  // ensemble's heads then share the caches); and a plan on groups is taken
  // only when it is predicted this fraction faster than the serial schedule
  // (its own error). Measured on the shipped studies (docs/design.md).
  double contention = 1.3;
  double plan_margin = 0.03;
};

// How depth is discretised (set by the commands, not an option): the L-layer
// transformer by default; the mean-field reference shares one ensemble of
// heads at every depth and integrates adaptively (docs/model.md, 'Depth as time').
struct DepthScheme {
  bool shared = false;    // one layer of heads (model.H of them) used at every depth
  bool adaptive = false;  // embedded Runge-Kutta (TSRK 5dp) with rtol/atol instead of model.L Euler steps
  double rtol = 1e-10, atol = 1e-12;
  bool zero_targets = false; // token targets y = 0 (no teacher): p(1) = x(1)/(M N)
  bool expected_mlp = false;  // MLP sublayers by their initial law's drift E[w sigma(u . x + b)] (the ODE's, mlp.hpp)
};

struct Settings {
  std::string command;        // forward, train, ...
  ModelSettings model;
  DataSettings data;
  InitSettings init;
  LossSettings loss;
  TrainSettings train;
  OutputSettings output;
  ParallelSettings parallel;
  CheckpointSettings checkpoint;
  NtkSettings ntk;
  LseSettings lse;
  LimitSettings limit;
  StudySettings study;
  BenchSettings bench;
  WorstSettings worst;
  std::string aggregate;      // study: aggregate this directory instead of running cases
  std::string replicates;     // study: folders of the same study's replicates, compared after aggregating
  bool list_cases = false;    // study: print the cases and exit
  std::string params_file;    // forward, ntk, train: the heads (and model settings) of this run or checkpoint file
  DepthScheme scheme;
  std::string restart;        // train: a checkpoint file, "auto", or empty
  bool gradient = false;      // forward: also compute and write /grad
  // Every option as (dotted key, value as text), for the run file's attributes.
  std::vector<std::pair<std::string, std::string>> record;
  // Keys the user set explicitly (file or command line), for consistency checks.
  std::vector<std::string> explicit_keys;

  bool is_explicit(const std::string &key) const;
  // A study in law (study_diffusive.hpp): the diffusive exponents at initialisation.
  bool study_in_law() const { return study.state == StudyState::init && model.diffusive(); }
  // A trained study of the diffusive regime with references: compared in law (study_in_law_trained.hpp).
  bool trained_in_law() const {
    return study.state == StudyState::trained && model.diffusive() && study.references > 0 && study.learning_rates.empty();
  }
  // Replaces the recorded value of key (after sizes are taken from a data file).
  void update(const std::string &key, const std::string &value);
};

// Values as they are written in settings and attributes.
// Not collective.
const char *to_string(HeadKind);
const char *to_string(LossKind);
const char *to_string(InitLaw);
const char *to_string(OptimizerKind);
const char *to_string(Schedule);
const char *to_string(NtkPart);
const char *to_string(LimitScheme);
const char *to_string(LimitCoupling);
const char *to_string(StudyState);
const char *to_string(StudySchedule);
const char *to_string(LseMode);
const char *to_string(CutSequences);
const char *to_string(TokenNorm);
const char *to_string(Activation);

// Splits argv into the options for mft (returned) and those for PETSc (kept in
// petsc_args, with argv[0] first), so that each parser sees only its own.
// Not collective.
std::vector<std::string> split_arguments(int argc, char **argv, std::vector<std::string> &petsc_args);

// Parses and checks the options of one subcommand. Returns 0 and fills *s;
// on a bad option returns PETSC_ERR_USER_INPUT with one clear message. When
// --help is given, prints the options on rank 0 and sets *help.
// Not collective: every rank parses the same arguments (comm carries the errors).
PetscErrorCode SettingsParse(MPI_Comm comm, const std::string &command, const std::vector<std::string> &args,
                             Settings *s, PetscBool *help);

// The first problem SettingsParse would report before its checks of the
// options together (a malformed value, an unknown or unread option, a config
// file that cannot be read), or "". Needs neither MPI nor PETSc: mft reads
// the command line with it before either starts.
// Not collective.
std::string SettingsProblem(const std::string &command, const std::vector<std::string> &args);

// Whether `command` reads option `key`, as the option table's row says (its
// section's readers unless the row names its own). An option given on the
// command line that the command does not read is refused by SettingsParse; a
// config file may hold sections for other commands.
// Not collective.
bool SettingsReads(const std::string &command, const std::string &key);

// Whether `key` defines the run s (its row, or its section: model, data,
// init, loss, and the optimizer and schedule of train): a checkpoint must
// share it with the run that restarts from it.
// Not collective.
bool RunDefining(const Settings &s, const std::string &key);

// Two recorded values of a setting are the same (as text, or as numbers).
// Not collective.
bool SameSetting(const std::string &a, const std::string &b);

// Checks the sizes that depend on the data (after a data file is read) and
// the process grid; the same one-line errors.
// Collective on comm (the memory check's reduction).
PetscErrorCode SettingsCheck(MPI_Comm comm, const Settings &s);

// The law of the teacher's heads: init with data.teacher_init's overrides
// ("law=gaussian v_mean=-1 q_gain=3"; keys are init.* without the prefix).
// Throws std::invalid_argument naming a bad key or value.
// Not collective.
InitSettings TeacherInit(const Settings &s);

} // namespace mft
