// The option table: every option's key, default, meaning, range and field.
#include "mft/settings/settings.hpp"

#include "mft/settings/options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace mft {

namespace {

// The words of each choice, in its enum's order.
const std::vector<std::string> kHeadKind = {"qkv", "qkvo"}, kLossKind = {"token", "pooled"},
                               kInitLaw = {"gaussian", "uniform"}, kOptimizerKind = {"gd", "adamw", "adamw-block"},
                               kSchedule = {"constant", "cosine"}, kNtkPart = {"none", "full", "value"},
                               kLimitScheme = {"rk", "euler"}, kLimitCoupling = {"independent", "halves", "merged"}, kStudyState = {"init", "trained"},
                               kStudySchedule = {"serial", "groups"},
                               kLseMode = {"sample", "closed"}, kCutSequences = {"auto", "tokens", "projections"},
                               kTokenNorm = {"none", "sphere", "pre"},
                               kActivation = {"identity", "relu", "gelu", "tanh", "erf"};

} // namespace

const char *to_string(HeadKind v) { return kHeadKind[(size_t)v].c_str(); }
const char *to_string(LossKind v) { return kLossKind[(size_t)v].c_str(); }
const char *to_string(InitLaw v) { return kInitLaw[(size_t)v].c_str(); }
const char *to_string(OptimizerKind v) { return kOptimizerKind[(size_t)v].c_str(); }
const char *to_string(Schedule v) { return kSchedule[(size_t)v].c_str(); }
const char *to_string(NtkPart v) { return kNtkPart[(size_t)v].c_str(); }
const char *to_string(LimitScheme v) { return kLimitScheme[(size_t)v].c_str(); }
const char *to_string(LimitCoupling v) { return kLimitCoupling[(size_t)v].c_str(); }
const char *to_string(StudyState v) { return kStudyState[(size_t)v].c_str(); }
const char *to_string(StudySchedule v) { return kStudySchedule[(size_t)v].c_str(); }
const char *to_string(LseMode v) { return kLseMode[(size_t)v].c_str(); }
const char *to_string(CutSequences v) { return kCutSequences[(size_t)v].c_str(); }
const char *to_string(TokenNorm v) { return kTokenNorm[(size_t)v].c_str(); }
const char *to_string(Activation v) { return kActivation[(size_t)v].c_str(); }

double HeadSumScale(const ModelSettings &m, PetscInt L, PetscInt H) {
  if (m.mean_field()) return 1.0 / (double)H; // today's model, bitwise
  return std::pow((double)L, 1.0 - m.depth_exponent) * std::pow((double)H, -m.head_exponent);
}

double LogitScale(const ModelSettings &m) {
  if (m.logit_exponent == 0.0 || m.infinite_head) return m.beta; // g = 0: today's model, bitwise
  return m.beta * std::pow((double)m.k, -m.logit_exponent);
}

double GradientScale(const ModelSettings &m, PetscInt L, PetscInt H) {
  if (m.mean_field()) return (double)(L * H);
  return std::pow((double)L, m.depth_exponent) * std::pow((double)H, m.head_exponent);
}

double NeuronSumScale(const ModelSettings &m, PetscInt L) {
  return std::pow((double)L, 1.0 - m.mlp_depth_exponent) * std::pow((double)m.mlp_width, -m.mlp_width_exponent);
}

double NeuronGradientScale(const ModelSettings &m, PetscInt L) {
  return std::pow((double)L, m.mlp_depth_exponent) * std::pow((double)m.mlp_width, m.mlp_width_exponent);
}

bool Settings::is_explicit(const std::string &key) const {
  return std::find(explicit_keys.begin(), explicit_keys.end(), key) != explicit_keys.end();
}

void Settings::update(const std::string &key, const std::string &value) {
  for (auto &kv : record)
    if (kv.first == key) kv.second = value;
}

double parse_real(const std::string &v) {
  size_t pos = 0;
  double x = 0;
  try {
    x = std::stod(v, &pos);
  } catch (const std::exception &) {
    throw BadValue("'" + v + "' is not a number");
  }
  if (pos != v.size() || !std::isfinite(x)) throw BadValue("'" + v + "' is not a finite number");
  return x;
}

// The shortest text that reads back as x (0.1, not 0.10000000000000001).
// strtod, not stod: a subnormal x (a p-value of 1e-320) reads back with
// ERANGE, which stod throws.
std::string format_real(double x) {
  for (int digits = 1;; ++digits) {
    std::ostringstream os;
    os.precision(digits);
    os << x;
    if (digits >= 17 || std::strtod(os.str().c_str(), nullptr) == x) return os.str();
  }
}

namespace {

long long parse_integer(const std::string &v) {
  size_t pos = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &pos);
  } catch (const std::exception &) {
    throw BadValue("'" + v + "' is not an integer");
  }
  if (pos != v.size()) throw BadValue("'" + v + "' is not an integer");
  return x;
}


bool parse_bool(const std::string &v) {
  std::string word = v;
  std::transform(word.begin(), word.end(), word.begin(), ::tolower);
  if (word == "1" || word == "true" || word == "yes" || word == "on") return true;
  if (word == "0" || word == "false" || word == "no" || word == "off") return false;
  throw BadValue("'" + v + "' is not true or false");
}

// Integer option with a lower bound (and an upper one, hi, where a larger value cannot be served).
Option integer(const std::string &key, PetscInt *dst, PetscInt lo, const std::string &help,
               PetscInt hi = std::numeric_limits<PetscInt>::max()) {
  const std::string range = " [integer >= " + std::to_string(lo) +
                            (hi < std::numeric_limits<PetscInt>::max() ? ", <= " + std::to_string(hi) : "") + "]";
  return {key, std::to_string(*dst), help + range, [=](const std::string &v) {
            long long x = parse_integer(v);
            if (x < lo) throw BadValue("must be at least " + std::to_string(lo) + ", got " + v);
            if (x > std::numeric_limits<PetscInt>::max()) throw BadValue("is too large: " + v);
            if (x > hi) throw BadValue("must be at most " + std::to_string(hi) + ", got " + v);
            *dst = (PetscInt)x;
          }};
}

Option seed(const std::string &key, std::uint64_t *dst, const std::string &help) {
  return {key, std::to_string(*dst), help + " [integer >= 0]", [=](const std::string &v) {
            long long x = parse_integer(v);
            if (x < 0) throw BadValue("must be a non-negative integer, got " + v);
            *dst = (std::uint64_t)x;
          }};
}

// Real option in [lo, hi]; open_lo excludes lo itself.
Option real(const std::string &key, double *dst, double lo, bool open_lo, const std::string &help) {
  const std::string range = lo > -1e300 ? std::string(" [number ") + (open_lo ? "> " : ">= ") + format_real(lo) + "]" : "";
  return {key, format_real(*dst), help + range, [=](const std::string &v) {
            double x = parse_real(v);
            if (x < lo || (open_lo && x == lo))
              throw BadValue(std::string("must be ") + (open_lo ? "greater than " : "at least ") + format_real(lo) +
                             ", got " + v);
            *dst = x;
          }};
}

Option flag(const std::string &key, bool *dst, const std::string &help) {
  return {key, *dst ? "true" : "false", help, [=](const std::string &v) { *dst = parse_bool(v); }};
}

// A space-separated list of integers, each at least lo, kept as text (empty only when allowed).
Option integers(const std::string &key, std::string *dst, PetscInt lo, const std::string &help,
                bool allow_empty = false) {
  return {key, *dst, help + " [integers >= " + std::to_string(lo) + "]", [=](const std::string &v) {
            std::istringstream in(v);
            int n = 0;
            for (std::string w; in >> w; ++n) {
              const long long x = parse_integer(w);
              if (x < lo) throw BadValue("entries must be at least " + std::to_string(lo) + ", got " + w);
              if (x > std::numeric_limits<PetscInt>::max()) throw BadValue("entry is too large: " + w);
            }
            if (n == 0 && !allow_empty) throw BadValue("is empty: give space-separated integers");
            *dst = v;
          }};
}

// Case numbers and ranges "a-b" (a <= b), space-separated, kept as text (may be empty).
Option case_list(const std::string &key, std::string *dst, const std::string &help) {
  return {key, *dst, help + " [integers >= 0, or a-b]", [=](const std::string &v) {
            std::istringstream in(v);
            for (std::string w; in >> w;) {
              const size_t dash = w.find('-', 1);
              if (dash + 1 == w.size()) throw BadValue("'" + w + "' is not a case or a range a-b of cases");
              const long long a = parse_integer(w.substr(0, dash));
              const long long b = dash == std::string::npos ? a : parse_integer(w.substr(dash + 1));
              if (a < 0 || b < a) throw BadValue("'" + w + "' is not a case or a range a-b of cases, 0 <= a <= b");
              if (b > std::numeric_limits<PetscInt>::max()) throw BadValue("entry is too large: " + w);
            }
            *dst = v;
          }};
}

// A space-separated list of numbers, each greater than 0, kept as text (may be empty).
Option positive_reals(const std::string &key, std::string *dst, const std::string &help) {
  return {key, *dst, help + " [numbers > 0]", [=](const std::string &v) {
            std::istringstream in(v);
            for (std::string w; in >> w;)
              if (!(parse_real(w) > 0)) throw BadValue("entries must be greater than 0, got " + w);
            *dst = v;
          }};
}

// Four real numbers, one a block (Q, K, V, O).
// N exponents, one per block of `blocks` ("Q K V O", "u b w").
template <size_t N>
Option exponents(const std::string &key, std::array<double, N> *dst, const std::string &blocks, const std::string &help) {
  std::string zeros = "0";
  for (size_t n = 1; n < N; ++n) zeros += " 0";
  const std::string count = N == 4 ? "four" : N == 3 ? "three" : std::to_string(N);
  return {key, zeros, help + " [" + count + " numbers, between them spaces or commas]", [=](const std::string &v) {
            std::string spaced = v; // commas too: a study variant's value holds no space
            std::replace(spaced.begin(), spaced.end(), ',', ' ');
            std::istringstream in(spaced);
            std::array<double, N> e{};
            size_t n = 0;
            for (std::string w; in >> w; ++n) {
              if (n == N) throw BadValue("has more than " + count + " numbers: " + v);
              e[n] = parse_real(w);
            }
            if (n != N) throw BadValue("needs " + count + " numbers (" + blocks + "), got '" + v + "'");
            *dst = e;
          }};
}

Option text(const std::string &key, std::string *dst, const std::string &help) {
  return {key, *dst, help, [=](const std::string &v) { *dst = v; }};
}

// One of a fixed list of words, stored through `store`.
Option choice(const std::string &key, const std::string &def, const std::vector<std::string> &words,
              std::function<void(const std::string &)> store, const std::string &help) {
  std::string list;
  for (auto &w : words) list += (list.empty() ? "" : "|") + w;
  return {key, def, help + " (" + list + ")", [=](const std::string &v) {
            if (std::find(words.begin(), words.end(), v) == words.end())
              throw BadValue("'" + v + "' is not one of " + list);
            store(v);
          }};
}

// One of the words of enum E (`words` in E's order; those before `first` are
// not offered), stored in *dst as its enum value.
template <class E>
Option choice(const std::string &key, E *dst, const std::vector<std::string> &words, const std::string &help,
              size_t first = 0) {
  const std::vector<std::string> offered(words.begin() + (long)first, words.end());
  return choice(key, words[(size_t)*dst], offered,
                [=](const std::string &v) { *dst = (E)(std::find(words.begin(), words.end(), v) - words.begin()); },
                help);
}

// Each section's readers, and whether its options define a run (a
// checkpoint must share them with the run that restarts from it).
struct Section {
  const char *name;
  std::vector<std::string> readers;
  bool defines_run;
};
const std::vector<Section> kSections = {
    {"model", {"forward", "train", "ntk", "limit", "study", "bench", "worst"}, true},
    {"data", {"forward", "train", "ntk", "lse", "limit", "study", "bench", "worst"}, true},
    {"init", {"forward", "train", "ntk", "limit", "study", "bench"}, true},
    {"loss", {"forward", "train", "ntk", "study", "bench", "worst"}, true},
    {"params", {"forward", "train", "ntk", "worst"}, false},
    {"train", {"train", "study", "bench"}, false},
    {"ntk", {"train", "ntk"}, false},
    {"lse", {"lse"}, false},
    {"limit", {"limit", "study"}, false},
    {"study", {"study"}, false},
    {"worst", {"study", "worst"}, false},
    {"bench", {"bench"}, false},
    {"checkpoint", {"train", "study"}, false},
    {"output", {"forward", "train", "ntk", "lse", "limit", "worst"}, false},
    {"parallel", {"forward", "train", "ntk", "limit", "study", "bench", "worst"}, false}};

const Section *SectionOf(const std::string &key) {
  const std::string name = key.substr(0, key.find('.'));
  for (const Section &section : kSections)
    if (name == section.name) return &section;
  return nullptr;
}

// The commands SettingsReads knows; any other (info) reads every option.
const std::vector<std::string> kCommands = {"forward", "train", "ntk", "lse", "limit", "study", "bench", "worst"};

} // namespace

// model.k: an integer, or inf (the infinite head; k is set to d once every
// option is read).
Option head_dimension(ModelSettings *m) {
  Option k = integer("model.k", &m->k, 1,
                     "query/key dimension (and value dimension of qkvo heads), a sum index of the logits and of O V: "
                     "any k, above d too; inf: the k -> infinity head at initialisation (docs/model.md)");
  const auto set = k.set;
  k.set = [m, set](const std::string &v) {
    m->infinite_head = v == "inf";
    if (!m->infinite_head) set(v);
  };
  return k;
}

std::vector<Option> declare(Settings &s) {
  ModelSettings &m = s.model;
  DataSettings &d = s.data;
  InitSettings &i = s.init;
  LossSettings &l = s.loss;
  TrainSettings &t = s.train;
  return {
      integer("model.L", &m.L, 1, "layers (Euler step 1/L in depth)"),
      integer("model.H", &m.H, 1, "attention heads per layer"),
      integer("model.d", &m.d, 1, "token dimension")
          .read_by({"forward", "train", "ntk", "lse", "limit", "study", "bench", "worst"}),
      head_dimension(&m),
      choice("model.head_kind", &m.head_kind, kHeadKind, "head parameters: qkv (A = V) or qkvo (A = O V)"),
      real("model.beta", &m.beta, 0.0, false, "inverse temperature of the softmax"),
      real("model.logit_exponent", &m.logit_exponent, 0.0, false,
           "g: the logits are beta k^-g x_i^T Q^T K x_j (0: beta alone; 0.5: standard attention's 1/sqrt(k); "
           "1: muP's 1/k)"),
      flag("model.causal", &m.causal, "causal mask: token i attends to j <= i only"),
      choice("model.norm", &m.norm, kTokenNorm,
             "normalized tokens: none; sphere (tokens on the unit sphere, each layer's step projected and retracted); "
             "pre (attention reads sqrt(d) x / |x|, the residual stream is not normalized)"),
      real("model.depth_exponent", &m.depth_exponent, 0.0, true,
           "a: a layer adds L^-a H^-c sum_h Attn (1: the mean-field ODE; 1/2 with centred value maps: the SDE)"),
      real("model.head_exponent", &m.head_exponent, 0.0, true,
           "c: a layer adds L^-a H^-c sum_h Attn (1: the mean of the heads; 1/2: their sum over sqrt(H))"),
      integer("model.mlp_width", &m.mlp_width, 0,
              "m: neurons of the MLP sublayer after each layer's attention (0: attention alone)"),
      choice("model.mlp_activation", &m.mlp_activation, kActivation, "sigma of the MLP sublayer's neurons"),
      real("model.mlp_depth_exponent", &m.mlp_depth_exponent, 0.0, true,
           "a': the MLP sublayer adds L^-a' m^-c' sum_j w_j sigma(u_j . x + b_j) (1: a drift; 1/2: common noise)"),
      real("model.mlp_width_exponent", &m.mlp_width_exponent, 0.0, true,
           "c': the MLP sublayer's width exponent (1: the neurons' mean; 1/2: their sum over sqrt(m))"),

      integer("data.M", &d.M, 1, "sequences in the data set (with data.file: its first data.M; default all)"),
      integer("data.N", &d.N, 1, "tokens per sequence"),
      choice("data.family", d.family, kFamilies,
             [&d](const std::string &v) { d.family = v; }, "token distribution family"),
      real("data.param_min", &d.param_min, 0.0, true,
           "smallest per-sequence parameter p: atom std (discrete), radius (uniform_cube), std (laplace: S = p^2 I; "
           "gaussian: S = p^2 diag(u), u_c ~ U[0.5, 1.5]), separation |m| (gauss_mix2)"),
      real("data.param_max", &d.param_max, 0.0, true, "largest per-sequence parameter (drawn uniformly in range)"),
      real("data.mix_std", &d.mix_std, 0.0, false, "gauss_mix2: standard deviation s of each component"),
      real("data.mean_spread", &d.mean_spread, 0.0, false, "gaussian: per-sequence means drawn N(0, spread^2 I)"),
      seed("data.seed", &d.seed, "seed of the input tokens"),
      seed("data.teacher_seed", &d.teacher_seed, "seed of the teacher heads that produce the targets"),
      real("data.teacher_perturbation", &d.teacher_perturbation, 0.0, false,
           "> 0: the teacher is the student's initial heads plus this times i.i.d. N(0,1) entries (small initial risk)"),
      integer("data.teacher_L", &d.teacher_L, 0,
              "layers of the teacher (0: the student's; in a trained study, the reference's: one set of targets)"),
      integer("data.teacher_H", &d.teacher_H, 0,
              "heads per layer of the teacher (0: the student's; in a trained study, the reference's)"),
      integer("data.teacher_k", &d.teacher_k, 0,
              "head dimension of the teacher (0: the student's): one teacher for students of every k"),
      integer("data.teacher_mlp_width", &d.teacher_mlp_width, 0,
              "neurons per MLP sublayer of the teacher (0: the student's): one teacher for students of every width"),
      integer("data.embed", &d.embed, 0,
              "> 0: the tokens of every family drawn in R^embed and padded with zeros into R^model.d (an isometric "
              "embedding: one task at every d), the teacher working in R^embed; a study then compares the N x N Gram "
              "matrices of x(1) and p(0), which do not depend on d (0: off)"),
      real("data.teacher_depth_exponent", &d.teacher_depth_exponent, 0.0, false,
           "the teacher's model.depth_exponent (0: the student's): one teacher for students of both regimes"),
      real("data.teacher_head_exponent", &d.teacher_head_exponent, 0.0, false,
           "the teacher's model.head_exponent (0: the student's)"),
      text("data.teacher_init", &d.teacher_init,
           "the teacher's own law, overrides of init.* without the prefix, e.g. 'v_mean=-1 q_gain=3' (empty: the "
           "students' law; a trained study's targets then sit near every model's start)"),
      text("data.heldout", &d.heldout,
           "train: a held-out data file (same layout and d as the data); its risk (and accuracy) at every logged "
           "step, in the run file and the summary")
          .read_by({"train", "study"}),
      text("data.file", &d.file, "HDF5 file with /data/tokens, /data/targets (and /data/readout); replaces the family"),

      choice("init.law", &i.law, kInitLaw, "law of every parameter entry (uniform: compact support, same mean and std)"),
      seed("init.seed", &i.seed, "seed of the initial heads"),
      real("init.q_gain", &i.q_gain, 0.0, false, "Q entries: std = gain / sqrt(d)"),
      real("init.k_gain", &i.k_gain, 0.0, false, "K entries: std = gain / sqrt(d)"),
      real("init.v_gain", &i.v_gain, 0.0, false, "V entries: std = gain / sqrt(d)"),
      real("init.o_gain", &i.o_gain, 0.0, false, "O entries: std = gain / sqrt(k)"),
      real("init.q_mean", &i.q_mean, -1e300, false, "Q mean: this multiple of the (rectangular) identity"),
      real("init.k_mean", &i.k_mean, -1e300, false, "K mean: multiple of the identity"),
      real("init.v_mean", &i.v_mean, -1e300, false, "V mean: multiple of the identity (nonzero: limit velocity != 0)"),
      real("init.o_mean", &i.o_mean, -1e300, false, "O mean: multiple of the identity"),
      real("init.mlp_u_gain", &i.mlp_u_gain, 0.0, false, "MLP neurons' u entries: std = gain / sqrt(d)"),
      real("init.mlp_b_gain", &i.mlp_b_gain, 0.0, false, "MLP neurons' bias b: std = gain"),
      real("init.mlp_w_gain", &i.mlp_w_gain, 0.0, false, "MLP neurons' w entries: std = gain"),
      real("init.mlp_w_mean", &i.mlp_w_mean, -1e300, false,
           "MLP neurons' w entries: mean (nonzero: the mean-field drift E[w] E[sigma] is not zero)"),
      integer("init.samples", &i.samples, 0,
              "forward: this many independent initialisations (seeds init.seed, init.seed + 1, ...), spread over the "
              "ranks: /output/samples and the Gram means (0: one model)")
          .read_by({"forward"}),

      choice("loss.kind", &l.kind, kLossKind, "risk: token targets y[m,i] or pooled targets z[m] through a readout W"),
      integer("loss.c", &l.c, 1, "pooled: outputs per sequence (rows of the readout W)"),
      seed("loss.readout_seed", &l.readout_seed, "pooled: seed of the readout W (entries N(0, 1/d))"),
      flag("loss.accuracy", &l.accuracy,
           "train, pooled loss with class targets: also the accuracy (the largest output is the target's largest)")
          .read_by({"train"}),

      choice("train.optimizer", &t.optimizer, kOptimizerKind, "gd: gradient flow theta <- theta - lr g; adamw; adamw-block: one second moment per block").defining(),
      real("train.lr", &t.lr, 0.0, true, "learning rate (training-time step)").defining(),
      integer("train.steps", &t.steps, 0, "training steps")
          .defining([](const Settings &run) { return run.train.schedule == Schedule::cosine; }),
      integer("train.log_every", &t.log_every, 1, "print progress every this many steps"),
      real("train.beta1", &t.beta1, 0.0, false, "AdamW first-moment decay, in [0, 1)").defining(),
      real("train.beta2", &t.beta2, 0.0, false, "AdamW second-moment decay, in [0, 1)").defining(),
      real("train.eps", &t.eps, 0.0, true, "AdamW denominator guard").defining(),
      real("train.weight_decay", &t.weight_decay, 0.0, false, "AdamW decoupled weight decay lambda").defining(),
      choice("train.schedule", &t.schedule, kSchedule, "learning-rate schedule after the warm-up").defining(),
      integer("train.warmup", &t.warmup, 0, "linear warm-up steps: lr (n+1)/warmup at step n").defining(),
      real("train.lr_min", &t.lr_min, 0.0, false, "cosine: learning rate at the last step").defining(),
      integer("train.batch", &t.batch, 0, "sequences per step, drawn from train.seed and the step (0: all)").defining(),
      seed("train.seed", &t.seed, "seed of the mini-batch draws").defining(),
      exponents("train.block_lr_exponents", &t.block_lr_exponents, "Q K V O",
                "per block Q K V O, the exponent e of the block's rate lr k^-e (muP: '0.5 0.5 0 1' at "
                "model.logit_exponent 0.5, '0 0 0 1' at 1 under AdamW; docs/model.md)")
          .defining(),
      real("train.lr_depth_exponent", &t.lr_depth_exponent, -1e300, false,
           "x: every block steps at lr L^-x H^-y (with train.block_lr_exponents, times k^-e); 1 - a keeps the output's "
           "move a step of order one under gd (docs/model.md)")
          .defining(),
      real("train.lr_head_exponent", &t.lr_head_exponent, -1e300, false,
           "y: every block steps at lr L^-x H^-y; 1 - c keeps the output's move a step of order one under gd")
          .defining(),
      real("train.mlp_lr_depth_exponent", &t.mlp_lr_depth_exponent, -1e300, false,
           "x': the MLP sublayers' neurons step at lr L^-x' m^-y' (1 - a' and 1 - c' keep their move of order one)")
          .defining(),
      real("train.mlp_lr_width_exponent", &t.mlp_lr_width_exponent, -1e300, false,
           "y': the MLP sublayers' neurons step at lr L^-x' m^-y'")
          .defining(),
      exponents("train.mlp_block_lr_exponents", &t.mlp_block_lr_exponents, "u b w",
                "per block u, b, w of a neuron, the exponent e of the block's rate lr L^-x' m^-y' m^-e")
          .defining(),
      integer("train.seeds", &t.seeds, 1,
              "train: this many independent models on the same data, seeds init.seed .. init.seed + seeds - 1, "
              "trained together (a rank holds its block of them) into one run file with a seeds axis")
          .read_by({"train"})
          .defining(),
      choice("train.ntk", &t.ntk, kNtkPart, "NTK at the start (full or value part) beside the fitted rate of log R at the end"),

      choice("ntk.part", &s.ntk.part, kNtkPart, "parameters of the NTK: every block, or the value blocks (V; V and O for qkvo)",
             1),
      real("ntk.threshold", &s.ntk.threshold, 0.0, true, "positive definite when lambda_min > threshold * lambda_max"),
      real("ntk.max_gb", &s.ntk.max_gb, 0.0, true, "memory per rank the NTK may use (GiB)"),
      integer("ntk.max_matrix", &s.ntk.max_matrix, 0, "write /ntk/matrix up to this many outputs"),
      text("params.file", &s.params_file,
           "forward, ntk, train, worst: start from the heads of this run or checkpoint file (/params); its model and loss "
           "settings are taken from it"),

      integer("limit.heads", &s.limit.heads, 1, "H_ref: heads of the ensemble shared by every depth"),
      integer("limit.paths", &s.limit.paths, 2,
              "diffusive limit (a = c = 1/2): sample paths of the SDE (each path drives every probe sequence)")
          .read_by({"limit", "study"}),
      integer("limit.steps", &s.limit.steps, 1, "diffusive limit: n, steps of the weak Euler scheme in depth")
          .read_by({"limit", "study"}),
      integer("limit.step_heads", &s.limit.step_heads, 1,
              "diffusive limit: heads drawn afresh at every step, with value maps of the model's covariance")
          .read_by({"limit", "study"}),
      flag("limit.richardson", &s.limit.richardson,
           "diffusive limit: paths at n and 2n steps, the Gram means extrapolated as 2 E_2n - E_n (bias O(1/n^2))")
          .read_by({"limit", "study"}),
      choice("limit.coupling", &s.limit.coupling, kLimitCoupling,
             "diffusive limit with limit.richardson, the n-step paths against the 2n-step ones: independent draws; "
             "halves: path p's step j from half of the heads of steps 2j and 2j + 1 of fine path p (the n-step "
             "scheme's law exactly; limit.step_heads even); merged: from all of them (the n x 2 step_heads scheme: "
             "a smaller variance, another bias; docs/model.md)")
          .read_by({"limit", "study"}),
      choice("limit.scheme", &s.limit.scheme, kLimitScheme,
             "rk: adaptive embedded Runge-Kutta (TSRK 5dp); euler: model.L Euler steps with the same ensemble"),
      real("limit.rtol", &s.limit.rtol, 0.0, true, "relative tolerance of the adaptive solve"),
      real("limit.atol", &s.limit.atol, 0.0, true, "absolute tolerance of the adaptive solve"),
      flag("limit.fluctuation", &s.limit.fluctuation,
           "mft limit: the error's law of the model.L x model.H model at initialisation: its Euler error E(L) and "
           "the head-sampling fluctuation F_L of every probe sequence, err_predicted = (E^2 + F^2 / (L H))^(1/2)")
          .read_by({"limit"}),
      integer("limit.probes", &s.limit.probes, 0,
              "the fluctuation's trace: Gaussian probe vectors a sequence (0: its N d unit vectors, exact)"),
      integer("limit.sample_heads", &s.limit.sample_heads, 0,
              "the fluctuation's expectation over one head: this many of the ensemble's heads (0: all of them)"),
      integer("limit.adjoint_heads", &s.limit.adjoint_heads, 0,
              "the fluctuation's tangent map: the probes' adjoints through the Euler scheme of the ensemble's first "
              "this many heads (0: all of them)"),

      integers("study.L", &s.study.L, 1, "depths L of the grid (space-separated)"),
      integers("study.H", &s.study.H, 1, "widths H of the grid (space-separated)"),
      integer("study.seeds", &s.study.seeds, 1, "initial-head seeds per (L, H)"),
      real("study.target", &s.study.target, 0.0, false,
           "a study in law: the half-width of every cell's err_law 95% interval asked for; a cell draws "
           "study.samples (a pilot), then as many as the pilot says the target needs, until it is met or "
           "study.max_samples is reached (0: no target)"),
      integers("study.k", &s.study.k, 1,
               "a study in law over the head dimension: cells L x H x k, each against the same L x H model with "
               "infinite heads (model.k = inf; model.logit_exponent 0.5 or above), and the fit err_law = C k^-r; "
               "one L and one H (empty: the cells against the limit)",
               true),
      flag("study.levels", &s.study.levels,
           "a study in law: the multilevel hierarchy of the diagonal L x H = (largest study.L) x study.H instead "
           "of the cells against the limit; each level's diagnostics, the depth rate of its differences, and "
           "with study.target the multilevel estimate (levels.csv, levels_fits.csv)"),
      integer("study.max_samples", &s.study.max_samples, 0,
              "a study in law with study.target: the most samples a cell may draw (0: 64 study.samples)"),
      integer("study.samples", &s.study.samples, 2,
              "a study in law (model.depth_exponent = model.head_exponent = 0.5 at initialisation): samples of "
              "each (L, H) model, against limit.paths paths of the limit"),
      choice("study.state", &s.study.state, kStudyState,
             "init: against the mean-field reference; trained: after study.steps steps, against a larger model"),
      integer("study.steps", &s.study.steps, 0, "trained: training steps of every model (the [train] settings)"),
      integers("study.times", &s.study.times, 0,
               "trained: training steps at which err is recorded, from the same runs (0 and study.steps always are)",
               true),
      integer("study.reference_L", &s.study.reference_L, 1,
              "trained: depth of the reference model; in a study in law at initialisation, either given: the cells "
              "are compared with limit.paths samples of the reference_L x reference_H model, not the limit"),
      integer("study.reference_H", &s.study.reference_H, 1,
              "trained: width of the reference model (in a study in law at initialisation: see study.reference_L)"),
      text("study.reference_k", &s.study.reference_k,
           "trained: head dimension of the reference model, an integer or inf (empty: the models'; needs "
           "data.teacher_k)"),
      integer("study.references", &s.study.references, 0,
              "independent references (initial-head seeds); with 2 or more, their spread estimates the "
              "reference's own error, which is removed from the models' (docs/results.md); with 3 or more it enters the "
              "intervals; 0 only in a learning-rate study (no convergence measured)"),
      real("study.reference_margin", &s.study.reference_margin, 0.0, false,
           "the reference (trained, or a study in law's finite one: study.reference_L, _H; init: limit.heads) must be at "
           "least this many times the "
           "largest L and H of the grid, in each direction with more than one value (0: no check)"),
      real("study.resolution", &s.study.resolution, 0.0, true,
           "a cell is resolved when the references' own error (floor / sqrt(references)) is at most this times its "
           "corrected err; unresolved cells are left out of the corrected fits"),
      flag("study.keep_unresolved", &s.study.keep_unresolved, "fit the unresolved cells too"),
      flag("study.grow_d", &s.study.grow_d,
           "trained, with data.embed: the embedding dimension grows with the heads, every model of model.d = k H "
           "(at least data.embed) and the references of k study.reference_H"),
      integer("study.mlp_per_head", &s.study.mlp_per_head, 0,
              "> 0: every model's MLP sublayers have m = this times H neurons (with model.mlp_width > 0): the grid's "
              "width is the block's (0: model.mlp_width throughout)"),
      flag("study.mlp_axis", &s.study.mlp_axis,
           "at initialisation: the grid's width is the MLP sublayers': study.H and study.reference_H are their m, "
           "every model at the variant's model.H"),
      text("study.probes", &s.study.probes, "probe families (space-separated), study.probe_M sequences each")
          .read_by({"study", "worst"}),
      integer("study.probe_M", &s.study.probe_M, 1, "probe sequences per family").read_by({"study", "worst"}),
      text("study.probe_file", &s.study.probe_file,
           "a data file (e.g. a held-out split) whose first study.probe_M sequences are one more probe set, named "
           "after the file; its tokens only"),
      integers("study.probe_N", &s.study.probe_N, 1,
               "tokens of the probe sequences, several for one probe set each (the training data's N need not be "
               "among them; probes.csv: err per N); empty: data.N",
               true),
      text("study.variants", &s.study.variants, "';'-separated sets of key=value overrides, one study each"),
      positive_reals("study.learning_rates", &s.study.learning_rates,
                     "trained: a learning-rate study: every case (and variant) trained at each of these train.lr; "
                     "lr.csv: the risk per rate and the best rate per (L, H), with intervals over seeds, and its "
                     "drift in L and H"),
      text("study.dir", &s.study.dir, "folder of the case files, tables and plots"),
      case_list("study.only", &s.study.only,
                "run only these cases (a Slurm array task), e.g. \"0 5 7-12\" (a-b: a to b); empty: every case"),
      choice("study.schedule", &s.study.schedule, kStudySchedule,
             "serial: each case on every rank, one after another; groups: the ranks split into groups, each case on "
             "a group sized by its predicted cost, a free group taking the next largest case (docs/design.md)"),
      integer("study.plan_cores", &s.study.plan_cores, 0,
              "--list: the plan on this many cores (its groups, predicted makespan and efficiency) and its Slurm "
              "array tasks; 0: none", kPlanCoresMost),
      real("study.task_seconds", &s.study.task_seconds, 0.0, true,
           "--list with study.plan_cores: predicted seconds of the cases packed into one Slurm array task"),
      flag("study.fluctuation", &s.study.fluctuation,
           "predict every cell's err at initialisation from the limit alone (the error's law: the Euler error and "
           "the head-sampling fluctuation of each L; limit.probes, limit.sample_heads, limit.adjoint_heads): "
           "err_predicted in study.csv; a trained study only when given (its time 0)"),
      flag("study.worst", &s.study.worst,
           "also search every model's worst input at every recorded time (the worst.* budget) against its "
           "references, after the cases: err_worst columns in study.csv, worst.csv, fits"),
      integers("study.worst_N", &s.study.worst_N, 1,
               "tokens of the worst inputs searched, one search each, each N a multiple of the one before, which "
               "starts it (empty: data.N)", true),
      integer("study.worst_atoms", &s.study.worst_atoms, 0,
              "> 0: also the worst measure of this many weighted atoms (N = infinity), started from the largest "
              "N's input (at least as many atoms as that N's tokens)"),

      text("worst.references", &s.worst.references,
           "run files (or checkpoints) of the references, space-separated: same d, head kind and loss as params.file"),
      real("worst.radius", &s.worst.radius, 0.0, true, "every input token in the ball |x_i| <= radius"),
      integer("worst.starts", &s.worst.starts, 1,
              "random starts (each token uniform in the ball), besides study.probe_M sequences of each study.probes "
              "family"),
      integer("worst.keep", &s.worst.keep, 0,
              "starts ascended after every start is evaluated once: the best this many of them (0: all)"),
      integer("worst.steps", &s.worst.steps, 0,
              "projected gradient ascent iterations (0: evaluate the starts only); a measure search "
              "(worst.atoms) takes twice the default unless this is given"),
      seed("worst.seed", &s.worst.seed, "seed of the random starts"),
      integer("worst.log_every", &s.worst.log_every, 1, "print progress every this many iterations"),
      flag("worst.crossfit", &s.worst.crossfit,
           "search against the first half of the references and score the input found on the other half (false: "
           "search against all, the raw figure, inflated by its own search)"),
      integer("worst.atoms", &s.worst.atoms, 0,
              "> 0: search measures of this many weighted atoms (atoms and weights ascended together) instead of "
              "sequences of data.N tokens"),
      text("worst.start", &s.worst.start,
           "an earlier search's result file: its input (a sequence, each token repeated to data.N, or a measure, "
           "split to worst.atoms) is one more start"),
      flag("worst.check", &s.worst.check,
           "search again with twice the starts and steps: the relative gain says whether the budget was enough"),

      text("bench.sizes", &s.bench.sizes,
           "sizes: S1 S2 S3 (timed here), LC (one sequence of 65536 tokens), REF (a 256 x 256 trained reference), "
           "or custom (the [model] and [data] settings)"),
      integer("bench.repeats", &s.bench.repeats, 0, "timed repeats per size (after one warm-up); 0: predictions only"),
      text("bench.ranks", &s.bench.ranks,
           "core counts (e.g. '64 512 4096'): the cost model's strong scaling of each size, at the forward's "
           "measured rate (or parallel.rate with bench.repeats = 0); ranks x threads chosen on nodes of "
           "parallel.node_cores"),
      text("bench.write", &s.bench.write, "a folder: also write bench_<size>.h5 with data, params, output, gradient"),

      integer("lse.points", &s.lse.points, 1, "sample points a in the ball"),
      real("lse.radius", &s.lse.radius, 0.0, true, "radius of the ball of sample points"),
      seed("lse.seed", &s.lse.seed, "seed of the sample points"),
      choice("lse.mode", &s.lse.mode, kLseMode,
             "lse of each sequence's N tokens (sample), or the family's closed form (closed)"),

      integer("checkpoint.every", &s.checkpoint.every, 0,
              "write a checkpoint every this many steps (0: only at the end and on a signal)"),
      integer("checkpoint.keep", &s.checkpoint.keep, 1, "checkpoints kept (older ones are removed)"),
      text("checkpoint.dir", &s.checkpoint.dir, "folder of the checkpoints (checkpoint-<step>.h5)"),

      text("output.file", &s.output.file, "run file written at the end (HDF5, docs/model.md layout)"),
      integer("output.trajectory", &s.output.trajectory, 0,
              "forward, train, limit: S > 0 also writes the tokens (and the adjoint, where there is one) at the S + 1 "
              "depths 0, 1/S, ..., 1 (/trajectory); S must divide model.L (0: off)")
          .read_by({"forward", "train", "limit"}),
      flag("output.samples", &s.output.samples,
           "forward with init.samples, limit at a = c = 1/2: write every sample's x(1) (/output/samples, "
           "/limit/samples; each rank its block); false: the Gram means alone")
          .read_by({"forward", "limit"}),
      integer("parallel.threads", &s.parallel.threads, 0,
              "threads per rank over its sequences and heads (0: OMP_NUM_THREADS, 1 when unset); results are "
              "bitwise the same for any count"),
      integer("parallel.head_groups", &s.parallel.head_groups, 0,
              "head groups of the process grid (must divide the rank count; 0: the least predicted step time)"),
      choice("parallel.cut_sequences", &s.parallel.cut_sequences, kCutSequences,
             "what a token group sends the others for a sequence cut across token groups: its tokens (every group "
             "projects the whole sequence) or their key and value projections (no group projects another's tokens); "
             "auto: the less predicted step time"),
      flag("parallel.overlap", &s.parallel.overlap,
           "run the heads' exchanges (in buckets of layers) and the cut sequences' rows behind the kernels "
           "(false: the same messages, each waited for at once; results are bitwise the same)"),
      real("parallel.latency", &s.parallel.latency, 0.0, false,
           "cost model: seconds a message between ranks of a node (grid choice; mft bench measures it)"),
      real("parallel.bandwidth", &s.parallel.bandwidth, 0.0, true,
           "cost model: bytes a second between ranks of a node (grid choice; mft bench measures it)"),
      real("parallel.remote_latency", &s.parallel.remote_latency, 0.0, false,
           "cost model: seconds a message between nodes"),
      real("parallel.remote_bandwidth", &s.parallel.remote_bandwidth, 0.0, true,
           "cost model: bytes a second one rank sends to other nodes"),
      real("parallel.card_bandwidth", &s.parallel.card_bandwidth, 0.0, true,
           "cost model: bytes a second a node's network card carries for all its ranks (200 Gb/s: 25e9)"),
      integer("parallel.node_cores", &s.parallel.node_cores, 0,
              "mft bench --bench.ranks: cores a node; the model then also chooses threads per rank (0: one node)"),
      integer("parallel.node_ranks", &s.parallel.node_ranks, 0,
              "ranks a node, in rank order: a node's token groups take a cut sequence's rows from other nodes "
              "once, and the cost model's network (0: the ranks that share memory, when consecutive)"),
      real("parallel.rate", &s.parallel.rate, 0.0, true,
           "cost model: attention operations a second on one rank (grid choice; mft bench measures it)"),
      real("parallel.unit_overhead", &s.parallel.unit_overhead, 0.0, false,
           "study cost model: seconds a (layer, head, sequence) unit of a step takes besides its operations "
           "(jobs/study_costs.py fits it)"),
      real("parallel.causal_overhead", &s.parallel.causal_overhead, 0.0, false,
           "study cost model: seconds more a causal unit takes (its operations are priced as the full rows')"),
      real("parallel.layer_overhead", &s.parallel.layer_overhead, 0.0, false,
           "study cost model: seconds a layer of a step takes besides its units"),
      real("parallel.case_overhead", &s.parallel.case_overhead, 0.0, false,
           "study cost model: seconds a case takes to start, and each file it writes"),
      real("parallel.contention", &s.parallel.contention, 1.0, false,
           "study cost model: how much slower a mean-field reference runs on a group of ranks that shares its "
           "node with other groups (its ensemble's heads then share the caches) than alone"),
      real("parallel.plan_margin", &s.parallel.plan_margin, 0.0, false,
           "study.schedule = groups: the plan on groups is taken only when predicted this fraction faster than "
           "the serial schedule (the cost model's own error); else the cases run serially"),
  };
}

Option Option::read_by(std::vector<std::string> commands) const {
  Option o = *this;
  o.readers = std::move(commands);
  return o;
}

Option Option::defining(std::function<bool(const Settings &)> when) const {
  Option o = *this;
  o.defines_run = when ? std::move(when) : [](const Settings &) { return true; };
  return o;
}

const Option *FindOption(const std::string &key) {
  static Settings unbound; // the rows' facts, not their fields, are read here
  static const std::vector<Option> table = declare(unbound);
  for (const Option &o : table)
    if (o.key == key) return &o;
  return nullptr;
}

bool SettingsReads(const std::string &command, const std::string &key) {
  if (std::find(kCommands.begin(), kCommands.end(), command) == kCommands.end()) return true;
  const Option *o = FindOption(key);
  const Section *section = SectionOf(key);
  if (!o || (o->readers.empty() && !section)) return false;
  const std::vector<std::string> &readers = o->readers.empty() ? section->readers : o->readers;
  return std::find(readers.begin(), readers.end(), command) != readers.end();
}

bool RunDefining(const Settings &s, const std::string &key) {
  const Option *o = FindOption(key);
  if (o && o->defines_run) return o->defines_run(s);
  const Section *section = SectionOf(key);
  return section && section->defines_run;
}

bool SameSetting(const std::string &a, const std::string &b) {
  if (a == b) return true;
  char *ea, *eb;
  const double x = std::strtod(a.c_str(), &ea), y = std::strtod(b.c_str(), &eb);
  return !a.empty() && !b.empty() && *ea == '\0' && *eb == '\0' && x == y;
}

} // namespace mft
