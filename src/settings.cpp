// The option table: every option's key, default, meaning, range and field.
#include "mft/options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace mft {

const char *to_string(HeadKind h) { return h == HeadKind::qkv ? "qkv" : "qkvo"; }
const char *to_string(LossKind l) { return l == LossKind::token ? "token" : "pooled"; }
const char *to_string(InitLaw l) { return l == InitLaw::gaussian ? "gaussian" : "uniform"; }

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
std::string format_real(double x) {
  for (int digits = 1;; ++digits) {
    std::ostringstream os;
    os.precision(digits);
    os << x;
    if (digits >= 17 || std::stod(os.str()) == x) return os.str();
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
  std::string s = v;
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  throw BadValue("'" + v + "' is not true or false");
}

// Integer option with a lower bound.
Option integer(const std::string &key, PetscInt *dst, PetscInt lo, const std::string &help) {
  return {key, std::to_string(*dst), help + " [integer >= " + std::to_string(lo) + "]", [=](const std::string &v) {
            long long x = parse_integer(v);
            if (x < lo) throw BadValue("must be at least " + std::to_string(lo) + ", got " + v);
            if (x > std::numeric_limits<PetscInt>::max()) throw BadValue("is too large: " + v);
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

// A space-separated list of numbers, each greater than 0, kept as text (may be empty).
Option positive_reals(const std::string &key, std::string *dst, const std::string &help) {
  return {key, *dst, help + " [numbers > 0]", [=](const std::string &v) {
            std::istringstream in(v);
            for (std::string w; in >> w;)
              if (!(parse_real(w) > 0)) throw BadValue("entries must be greater than 0, got " + w);
            *dst = v;
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

} // namespace

std::vector<Option> declare(Settings &s) {
  ModelSettings &m = s.model;
  DataSettings &d = s.data;
  InitSettings &i = s.init;
  LossSettings &l = s.loss;
  TrainSettings &t = s.train;
  return {
      integer("model.L", &m.L, 1, "layers (Euler step 1/L in depth)"),
      integer("model.H", &m.H, 1, "attention heads per layer"),
      integer("model.d", &m.d, 1, "token dimension"),
      integer("model.k", &m.k, 1, "query/key dimension (and value dimension of qkvo heads), at most d"),
      choice("model.head_kind", "qkv", {"qkv", "qkvo"},
             [&m](const std::string &v) { m.head_kind = v == "qkv" ? HeadKind::qkv : HeadKind::qkvo; },
             "head parameters: qkv (A = V) or qkvo (A = O V)"),
      real("model.beta", &m.beta, 0.0, false, "inverse temperature of the softmax"),
      flag("model.causal", &m.causal, "causal mask: token i attends to j <= i only"),

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
      text("data.teacher_init", &d.teacher_init,
           "the teacher's own law, overrides of init.* without the prefix, e.g. 'v_mean=-1 q_gain=3' (empty: the "
           "students' law; a trained study's targets then sit near every model's start)"),
      text("data.heldout", &d.heldout,
           "train: a held-out data file (same layout and d as the data); its risk (and accuracy) at every logged "
           "step, in the run file and the summary"),
      text("data.file", &d.file, "HDF5 file with /data/tokens, /data/targets (and /data/readout); replaces the family"),

      choice("init.law", "gaussian", {"gaussian", "uniform"},
             [&i](const std::string &v) { i.law = v == "gaussian" ? InitLaw::gaussian : InitLaw::uniform; },
             "law of every parameter entry (uniform: compact support, same mean and std)"),
      seed("init.seed", &i.seed, "seed of the initial heads"),
      real("init.q_gain", &i.q_gain, 0.0, false, "Q entries: std = gain / sqrt(d)"),
      real("init.k_gain", &i.k_gain, 0.0, false, "K entries: std = gain / sqrt(d)"),
      real("init.v_gain", &i.v_gain, 0.0, false, "V entries: std = gain / sqrt(d)"),
      real("init.o_gain", &i.o_gain, 0.0, false, "O entries: std = gain / sqrt(k)"),
      real("init.q_mean", &i.q_mean, -1e300, false, "Q mean: this multiple of the (rectangular) identity"),
      real("init.k_mean", &i.k_mean, -1e300, false, "K mean: multiple of the identity"),
      real("init.v_mean", &i.v_mean, -1e300, false, "V mean: multiple of the identity (nonzero: limit velocity != 0)"),
      real("init.o_mean", &i.o_mean, -1e300, false, "O mean: multiple of the identity"),

      choice("loss.kind", "token", {"token", "pooled"},
             [&l](const std::string &v) { l.kind = v == "token" ? LossKind::token : LossKind::pooled; },
             "risk: token targets y[m,i] or pooled targets z[m] through a readout W"),
      integer("loss.c", &l.c, 1, "pooled: outputs per sequence (rows of the readout W)"),
      seed("loss.readout_seed", &l.readout_seed, "pooled: seed of the readout W (entries N(0, 1/d))"),
      flag("loss.accuracy", &l.accuracy,
           "train, pooled loss with class targets: also the accuracy (the largest output is the target's largest)"),

      choice("train.optimizer", t.optimizer, {"gd", "adamw", "adamw-block"},
             [&t](const std::string &v) { t.optimizer = v; },
             "gd: gradient flow theta <- theta - lr g; adamw; adamw-block: one second moment per block"),
      real("train.lr", &t.lr, 0.0, true, "learning rate (training-time step)"),
      integer("train.steps", &t.steps, 0, "training steps"),
      integer("train.log_every", &t.log_every, 1, "print progress every this many steps"),
      real("train.beta1", &t.beta1, 0.0, false, "AdamW first-moment decay, in [0, 1)"),
      real("train.beta2", &t.beta2, 0.0, false, "AdamW second-moment decay, in [0, 1)"),
      real("train.eps", &t.eps, 0.0, true, "AdamW denominator guard"),
      real("train.weight_decay", &t.weight_decay, 0.0, false, "AdamW decoupled weight decay lambda"),
      choice("train.schedule", t.schedule, {"constant", "cosine"}, [&t](const std::string &v) { t.schedule = v; },
             "learning-rate schedule after the warm-up"),
      integer("train.warmup", &t.warmup, 0, "linear warm-up steps: lr (n+1)/warmup at step n"),
      real("train.lr_min", &t.lr_min, 0.0, false, "cosine: learning rate at the last step"),
      integer("train.batch", &t.batch, 0, "sequences per step, drawn from train.seed and the step (0: all)"),
      seed("train.seed", &t.seed, "seed of the mini-batch draws"),
      choice("train.ntk", t.ntk, {"none", "full", "value"}, [&t](const std::string &v) { t.ntk = v; },
             "NTK at the start (full or value part) beside the fitted rate of log R at the end"),

      choice("ntk.part", s.ntk.part, {"full", "value"}, [&s](const std::string &v) { s.ntk.part = v; },
             "parameters of the NTK: every block, or the value blocks (V; V and O for qkvo)"),
      real("ntk.threshold", &s.ntk.threshold, 0.0, true, "positive definite when lambda_min > threshold * lambda_max"),
      real("ntk.max_gb", &s.ntk.max_gb, 0.0, true, "memory per rank the NTK may use (GiB)"),
      integer("ntk.max_matrix", &s.ntk.max_matrix, 0, "write /ntk/matrix up to this many outputs"),
      text("params.file", &s.params_file,
           "forward, ntk, train, worst: start from the heads of this run or checkpoint file (/params); its model and loss "
           "settings are taken from it"),

      integer("limit.heads", &s.limit.heads, 1, "H_ref: heads of the ensemble shared by every depth"),
      choice("limit.scheme", s.limit.scheme, {"rk", "euler"}, [&s](const std::string &v) { s.limit.scheme = v; },
             "rk: adaptive embedded Runge-Kutta (TSRK 5dp); euler: model.L Euler steps with the same ensemble"),
      real("limit.rtol", &s.limit.rtol, 0.0, true, "relative tolerance of the adaptive solve"),
      real("limit.atol", &s.limit.atol, 0.0, true, "absolute tolerance of the adaptive solve"),

      integers("study.L", &s.study.L, 1, "depths L of the grid (space-separated)"),
      integers("study.H", &s.study.H, 1, "widths H of the grid (space-separated)"),
      integer("study.seeds", &s.study.seeds, 1, "initial-head seeds per (L, H)"),
      choice("study.state", s.study.state, {"init", "trained"}, [&s](const std::string &v) { s.study.state = v; },
             "init: against the mean-field reference; trained: after study.steps steps, against a larger model"),
      integer("study.steps", &s.study.steps, 0, "trained: training steps of every model (the [train] settings)"),
      integers("study.times", &s.study.times, 0,
               "trained: training steps at which err is recorded, from the same runs (0 and study.steps always are)",
               true),
      integer("study.reference_L", &s.study.reference_L, 1, "trained: depth of the reference model"),
      integer("study.reference_H", &s.study.reference_H, 1, "trained: width of the reference model"),
      integer("study.references", &s.study.references, 0,
              "independent references (initial-head seeds); with 2 or more, their spread estimates the "
              "reference's own error, which is removed from the models' (docs/results.md); with 3 or more it enters the "
              "intervals; 0 only in a learning-rate study (no convergence measured)"),
      real("study.reference_margin", &s.study.reference_margin, 0.0, false,
           "the reference (trained: study.reference_L, _H; init: limit.heads) must be at least this many times the "
           "largest L and H of the grid, in each direction with more than one value (0: no check)"),
      real("study.resolution", &s.study.resolution, 0.0, true,
           "a cell is resolved when the references' own error (floor / sqrt(references)) is at most this times its "
           "corrected err; unresolved cells are left out of the corrected fits"),
      flag("study.keep_unresolved", &s.study.keep_unresolved, "fit the unresolved cells too"),
      text("study.probes", &s.study.probes, "probe families (space-separated), study.probe_M sequences each"),
      integer("study.probe_M", &s.study.probe_M, 1, "probe sequences per family"),
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
      integer("study.only", &s.study.only, -1, "run only this case (a Slurm array task); -1: every case"),
      flag("study.worst", &s.study.worst,
           "also search every model's worst input at every recorded time (the worst.* budget) against its "
           "references, after the cases: err_worst columns in study.csv, worst.csv, fits"),
      integers("study.worst_N", &s.study.worst_N, 1,
               "tokens of the worst inputs searched, one search each (empty: data.N)", true),

      text("worst.references", &s.worst.references,
           "run files (or checkpoints) of the references, space-separated: same d, head kind and loss as params.file"),
      real("worst.radius", &s.worst.radius, 0.0, true, "every input token in the ball |x_i| <= radius"),
      integer("worst.starts", &s.worst.starts, 1,
              "random starts (each token uniform in the ball), besides study.probe_M sequences of each study.probes "
              "family"),
      integer("worst.keep", &s.worst.keep, 0,
              "starts ascended after every start is evaluated once: the best this many of them (0: all)"),
      integer("worst.steps", &s.worst.steps, 0, "projected gradient ascent iterations (0: evaluate the starts only)"),
      seed("worst.seed", &s.worst.seed, "seed of the random starts"),
      integer("worst.log_every", &s.worst.log_every, 1, "print progress every this many iterations"),
      flag("worst.crossfit", &s.worst.crossfit,
           "search against the first half of the references and score the input found on the other half (false: "
           "search against all, the raw figure, inflated by its own search)"),

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
      choice("lse.mode", s.lse.mode, {"sample", "closed"}, [&s](const std::string &v) { s.lse.mode = v; },
             "lse of each sequence's N tokens (sample), or the family's closed form (closed)"),

      integer("checkpoint.every", &s.checkpoint.every, 0,
              "write a checkpoint every this many steps (0: only at the end and on a signal)"),
      integer("checkpoint.keep", &s.checkpoint.keep, 1, "checkpoints kept (older ones are removed)"),
      text("checkpoint.dir", &s.checkpoint.dir, "folder of the checkpoints (checkpoint-<step>.h5)"),

      text("output.file", &s.output.file, "run file written at the end (HDF5, docs/model.md layout)"),
      integer("output.trajectory", &s.output.trajectory, 0,
              "forward, train, limit: S > 0 also writes the tokens (and the adjoint, where there is one) at the S + 1 "
              "depths 0, 1/S, ..., 1 (/trajectory); S must divide model.L (0: off)"),
      integer("parallel.threads", &s.parallel.threads, 0,
              "threads per rank over its sequences and heads (0: OMP_NUM_THREADS, 1 when unset); results are "
              "bitwise the same for any count"),
      integer("parallel.head_groups", &s.parallel.head_groups, 0,
              "head groups of the process grid (must divide the rank count; 0: the least predicted step time)"),
      choice("parallel.cut_sequences", s.parallel.cut_sequences, {"auto", "tokens", "projections"},
             [&s](const std::string &v) { s.parallel.cut_sequences = v; },
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
  };
}

} // namespace mft
