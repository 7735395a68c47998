// mft bench: one training step and the forward pass alone, timed at the
// standard sizes (or the settings given), with rates, memory and a time split.
#include "mft/kernels/attention.hpp"
#include "mft/kernels/softmax.hpp"
#include "mft/analyses/bench.hpp"
#include "mft/commands/commands.hpp"
#include "mft/flow/cost.hpp"
#include "mft/kernels/linalg.hpp"
#include "mft/flow/optimizer.hpp"
#include "mft/files/report.hpp"
#include "mft/files/runfile.hpp"
#include "mft/flow/velocity.hpp"

#include <algorithm>
#include <dlfcn.h>
#include <fstream>
#include <cstdlib>
#include <sstream>

namespace mft {

namespace {

struct Size {
  const char *name;
  PetscInt L, H, M, N, d, k;
};
// S1-S3 are timed here; LC (one long sequence) and REF (the trained reference
// of input/study_dim_cluster.cfg at d = 64) are sizes for the predictions.
const Size standard[] = {{"S1", 16, 16, 8, 64, 16, 8},   {"S2", 32, 32, 16, 128, 16, 8}, {"S3", 8, 4, 2, 1024, 32, 16},
                         {"LC", 8, 16, 1, 65536, 64, 32}, {"REF", 256, 256, 8, 8, 64, 2}};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Wall time of f, the slowest rank's.
template <class F> PetscErrorCode Timed(MPI_Comm comm, F f, double *seconds) {
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Barrier(comm));
  const double t0 = MPI_Wtime();
  PetscCall(f());
  double mine = MPI_Wtime() - t0;
  PetscCallMPI(MPI_Allreduce(&mine, seconds, 1, MPI_DOUBLE, MPI_MAX, comm));
  PetscFunctionReturn(0);
}

// The CPU's model name (/proc/cpuinfo), or "unknown".
std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      const size_t a = line.find_first_not_of(" \t", line.find(':') + 1);
      return a == std::string::npos ? "unknown" : line.substr(a);
    }
  return "unknown";
}

// This rank's seconds so far in the kernels' (attention's and the MLP
// sublayers'), the exchanges' and the MLP's PETSc events (the logging mft
// bench turns on; what -log_view shows).
PetscErrorCode EventSeconds(double *kernels, double *exchange, double *mlp) {
  PetscFunctionBeginUser;
  *kernels = *exchange = *mlp = 0;
  for (PetscLogStage stage : {0, MFT_FORWARD, MFT_ADJOINT}) { // the main stage; the step's solves log in their own
    PetscEventPerfInfo k, e, m;
    PetscCall(PetscLogEventGetPerfInfo(stage, MFT_KERNELS, &k));
    PetscCall(PetscLogEventGetPerfInfo(stage, MFT_EXCHANGE, &e));
    PetscCall(PetscLogEventGetPerfInfo(stage, MFT_MLP, &m));
    *kernels += k.time + m.time, *exchange += e.time, *mlp += m.time;
  }
  PetscFunctionReturn(0);
}

// One training step; *t its time, and per rank averaged over the ranks:
// kc[0], kc[1] its kernel and communication fractions (disjoint parts of the
// step, adding up to at most 1); kc[2], kc[3] the seconds its exchanges
// behind the kernels (the heads' buckets, the cut rows) were in flight, and
// spent in their calls; kc[4] the MLP sublayers' fraction (part of kc[0]).
PetscErrorCode TrainStep(MPI_Comm comm, Problem *p, Optimizer *opt, double *t, double kc[5]) {
  double k0, c0, m0, k1, c1, m1, mine[5];
  PetscMPIInt size;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(EventSeconds(&k0, &c0, &m0));
  const Traffic x0 = traffic();
  PetscCall(Timed(comm, [&]() -> PetscErrorCode {
    PetscCall(ProblemEvaluate(p, PETSC_TRUE));
    PetscCall(OptimizerStepAll(opt, &p->heads, p->grad, &p->neurons, p->neuron_grad));
    PetscCall(ProblemSetHeads(p));
    return 0;
  }, t));
  PetscCall(EventSeconds(&k1, &c1, &m1));
  mine[0] = (k1 - k0) / *t, mine[1] = (c1 - c0) / *t;
  mine[2] = traffic().in_flight - x0.in_flight, mine[3] = traffic().inside - x0.inside;
  mine[4] = (m1 - m0) / *t;
  PetscCallMPI(MPI_Allreduce(mine, kc, 5, MPI_DOUBLE, MPI_SUM, comm));
  for (int i = 0; i < 5; ++i) kc[i] /= size;
  PetscFunctionReturn(0);
}

// Every repeat's times: the forward, a step and its parts (TrainStep), and
// the same step with the exchanges behind the kernels waited for at once.
struct BenchTimes {
  std::vector<double> forward, step, kernel, comm, flight, inside, step_at_once, inside_at_once, mlp;
};
PetscErrorCode TimeRepeats(MPI_Comm comm, const Settings &bs, Problem *p, Optimizer *opt, BenchTimes *x) {
  PetscFunctionBeginUser;
  for (PetscInt r = 0; r < bs.bench.repeats; ++r) {
    double t, kc[5];
    PetscCall(Timed(comm, [&] { return ProblemEvaluate(p, PETSC_FALSE); }, &t));
    x->forward.push_back(t);
    PetscCall(TrainStep(comm, p, opt, &t, kc));
    x->step.push_back(t);
    x->kernel.push_back(kc[0]), x->comm.push_back(kc[1]), x->flight.push_back(kc[2]), x->inside.push_back(kc[3]);
    x->mlp.push_back(kc[4]);
    // The same step with those exchanges waited for at once (their whole cost).
    p->heads.overlap = false;
    PetscCall(TrainStep(comm, p, opt, &t, kc));
    p->heads.overlap = bs.parallel.overlap;
    x->step_at_once.push_back(t), x->inside_at_once.push_back(kc[3]);
  }
  PetscFunctionReturn(0);
}

// A size's figures, as printed and summed up.
struct BenchFigures {
  double ops, step, forward, kernels, comm, bound, memory, predicted, error, hidden;
  double mlp = 0, mlp_bound = 0; // MLP sublayers: their fraction of the step, their bound (seconds)
  double at_once, in_calls, in_flight, step_at_once;
  double norm_step = 0, bare_step = 0; // model.norm: its step and the bare model's, alternated
};

// With model.norm: a training step of the normalized model against the bare
// model's (model.norm = none), the two alternated repeat by repeat so that
// the machine's drift falls on both; their medians.
PetscErrorCode NormAgainstBare(MPI_Comm comm, const Settings &bs, BenchFigures *f) {
  Settings bare = bs;
  bare.model.norm = TokenNorm::none;
  Problem p[2];
  Optimizer opt[2];
  std::vector<double> step[2];
  PetscFunctionBeginUser;
  for (int i = 0; i < 2; ++i) {
    PetscCall(ProblemCreate(comm, i ? bare : bs, &p[i]));
    PetscCall(OptimizerCreate(bs, p[i].heads, &opt[i]));
    PetscCall(ProblemEvaluate(&p[i], PETSC_TRUE)); // warm-up
  }
  for (PetscInt r = 0; r < bs.bench.repeats; ++r)
    for (int i = 0; i < 2; ++i) {
      double t, kc[4];
      PetscCall(TrainStep(comm, &p[i], &opt[i], &t, kc));
      step[i].push_back(t);
    }
  f->norm_step = median(step[0]), f->bare_step = median(step[1]);
  for (int i = 0; i < 2; ++i) PetscCall(OptimizerDestroy(&opt[i]));
  for (int i = 0; i < 2; ++i) PetscCall(ProblemDestroy(&p[i]));
  PetscCall(PetscPrintf(comm,
                        "       model.norm = %s: a step %.4g s against the bare model's %.4g s, alternated in the same "
                        "repeats: %.3f times\n",
                        to_string(bs.model.norm), f->norm_step, f->bare_step, f->norm_step / f->bare_step));
  PetscFunctionReturn(0);
}

// How much of the exchanges the kernels hid, and the cost model against the step.
PetscErrorCode PrintModel(MPI_Comm comm, const std::string &name, const Settings &bs, const Problem &p,
                          const BenchFigures &f, const Rates &rate) {
  PetscFunctionBeginUser;
  PetscCall(PetscPrintf(comm,
                        "%-6s exchanges behind the kernels (the heads' %zu buckets of layers%s): %.3g ms a step waited "
                        "for at once (step %.4g s); behind the kernels%s %.3g ms in their calls, %.0f%% hidden (step "
                        "%.4g s), %.3g ms in flight; the model hides %.3g ms\n",
                        name.c_str(), p.heads.buckets.size(), p.tokens.cuts.empty() ? "" : ", the cut sequences' rows",
                        1e3 * f.at_once, f.step_at_once, bs.parallel.overlap ? "" : " (parallel.overlap false: none)",
                        1e3 * f.in_calls, f.at_once > 0 ? 100 * (1 - f.in_calls / f.at_once) : 0.0, f.step,
                        1e3 * f.in_flight, 1e3 * f.hidden));
  PetscCall(PetscPrintf(comm,
                        "%-6s the cost model, at the forward's rate (%.3g GFLOP/s a rank) and the reverse's at %.3g "
                        "times it (the kernels'): a step of %.4g s predicted, %.4g s measured (%+.1f%%): the median "
                        "of the repeats' errors, each repeat's forward against its own step\n",
                        name.c_str(), rate.forward / 1e9, rate.reverse, f.predicted, f.step, 100 * f.error));
  PetscFunctionReturn(0);
}

PetscErrorCode PrintSummary(MPI_Comm comm, const std::string &name, const Settings &bs, const BenchTimes &x,
                            const BenchFigures &f, double peak, double gexps, const Rates &rate) {
  PetscMPIInt size;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  Summary sum;
  sum.add("command", std::string("bench")).add("size", name).add("ranks", (long long)size);
  sum.add("L", (long long)bs.model.L).add("H", (long long)bs.model.H).add("M", (long long)bs.data.M);
  sum.add("N", (long long)bs.data.N).add("d", (long long)bs.model.d).add("k", (long long)bs.model.k);
  sum.add("step_seconds", f.step).add("step_min", *std::min_element(x.step.begin(), x.step.end()));
  sum.add("step_max", *std::max_element(x.step.begin(), x.step.end())).add("forward_seconds", f.forward);
  sum.add("gflop_step", f.ops / 1e9).add("gflops", f.ops / f.step / 1e9).add("peak_gflops", peak);
  sum.add("fraction_of_peak", f.ops / f.step / 1e9 / peak).add("kernel_fraction", f.kernels).add("comm_fraction", f.comm);
  sum.add("exp_rate", gexps * 1e9).add("bound_seconds", f.bound).add("fraction_of_bound", f.bound / f.step);
  sum.add("memory_mib", f.memory).add("predicted_step_seconds", f.predicted);
  sum.add("heads_exchange_at_once_seconds", f.at_once).add("heads_exchange_inside_seconds", f.in_calls);
  sum.add("heads_exchange_in_flight_seconds", f.in_flight).add("step_at_once_seconds", f.step_at_once);
  sum.add("predicted_hidden_seconds", f.hidden).add("forward_rate", rate.forward);
  sum.add("reverse_rate_ratio", rate.reverse).add("predicted_step_error", f.error);
  if (f.mlp > 0) {
    const double mlp_seconds = f.mlp * f.step;
    sum.add("mlp_fraction", f.mlp).add("mlp_gflops", mlp_step_flops(bs) / mlp_seconds / 1e9);
    sum.add("mlp_bound_seconds", f.mlp_bound).add("mlp_fraction_of_bound", f.mlp_bound / mlp_seconds);
    sum.add("attention_fraction_of_bound", f.bound / (f.step - mlp_seconds));
  }
  if (f.norm_step > 0) {
    sum.add("norm", std::string(to_string(bs.model.norm))).add("norm_step_seconds", f.norm_step);
    sum.add("bare_step_seconds", f.bare_step).add("norm_over_bare", f.norm_step / f.bare_step);
  }
  PetscCall(sum.print(comm));
  PetscFunctionReturn(0);
}

// The MLP sublayers' part of the step (its fraction `share`, the MLP event's
// time): their GFLOP/s and bound (mlp_step_bound at the activation's
// measured rates), and attention's bound against the rest of the step.
PetscErrorCode PrintMlp(MPI_Comm comm, const Settings &bs, double peak, double share, BenchFigures *f) {
  double rates[2];
  PetscFunctionBeginUser;
  PetscCall(MeasureActivationRate(comm, RankThreads(bs.parallel.threads), bs.model.mlp_activation, rates));
  f->mlp = share, f->mlp_bound = mlp_step_bound(bs, peak, rates);
  const double seconds = share * f->step;
  PetscCall(PetscPrintf(comm,
                        "       MLP sublayers (m = %" PetscInt_FMT ", %s): %.0f%% of the step, %.3g s, %.1f GFLOP/s; "
                        "their bound %.3g s = %.0f%% of their time (%s %.3g G a second, with slopes %.3g G); "
                        "attention's bound = %.0f%% of the rest of the step\n",
                        bs.model.mlp_width, to_string(bs.model.mlp_activation), 100 * share, seconds,
                        mlp_step_flops(bs) / seconds / 1e9, f->mlp_bound, 100 * f->mlp_bound / seconds,
                        to_string(bs.model.mlp_activation), rates[0] / 1e9, rates[1] / 1e9,
                        100 * f->bound / (f->step - seconds)));
  PetscFunctionReturn(0);
}

// Times a training step and the forward pass of one size; rate->forward <-
// the operations a second of one rank in the forward (the cost model's rate;
// rate->reverse: the kernels' measured ratio).
PetscErrorCode BenchSize(MPI_Comm comm, const std::string &name, const Settings &bs, double peak, double gexps,
                         const Network &net, Rates *rate) {
  PetscMPIInt size;
  Problem p;
  Optimizer opt;
  BenchTimes x;
  BenchFigures f;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(ProblemCreate(comm, bs, &p));
  PetscCall(OptimizerCreate(bs, p.heads, &opt, &p.neurons));
  PetscCall(ProblemEvaluate(&p, PETSC_TRUE)); // warm-up
  PetscCall(TimeRepeats(comm, bs, &p, &opt, &x));
  f.ops = 3 * forward_operations(bs), f.step = median(x.step), f.forward = median(x.forward);
  double mem = peak_memory_mib();
  PetscCallMPI(MPI_Allreduce(&mem, &f.memory, 1, MPI_DOUBLE, MPI_MAX, comm));
  f.kernels = median(x.kernel), f.comm = median(x.comm), f.bound = step_bound(bs, peak, gexps);
  PetscCall(PetscPrintf(comm,
                        "%-6s L=%" PetscInt_FMT " H=%" PetscInt_FMT " M=%" PetscInt_FMT " N=%" PetscInt_FMT
                        " d=%" PetscInt_FMT " k=%" PetscInt_FMT ": step %.4g s (min %.4g, max %.4g), forward %.4g s; "
                        "%.2f GFLOP a step, %.1f GFLOP/s = %.0f%% of the matmul peak; roofline bound %.4g s = %.0f%% "
                        "of the step; kernels %.0f%%, communication %.0f%%, PETSc and the rest %.0f%%; %.0f MiB per "
                        "rank\n",
                        name.c_str(), bs.model.L, bs.model.H, bs.data.M, bs.data.N, bs.model.d, bs.model.k, f.step,
                        *std::min_element(x.step.begin(), x.step.end()), *std::max_element(x.step.begin(), x.step.end()),
                        f.forward, f.ops / 1e9, f.ops / f.step / 1e9, 100 * f.ops / f.step / 1e9 / peak, f.bound,
                        100 * f.bound / f.step, 100 * f.kernels, 100 * f.comm, 100 * (1 - f.kernels - f.comm), f.memory));
  // The cost model against the step (cost.hpp): its rate taken from the
  // forward alone (a third of a step's operations, and the MLP sublayers'
  // forward products, CountMlp), the reverse's from the
  // kernels' ratio, the step on this grid predicted (the forward's and the
  // reverse's compute and every message) and compared: each repeat's
  // prediction from its own forward against its own step, timed right
  // after it (a machine's speed drifts), the median of those errors.
  const double forward_ops = f.ops / 3 + (double)bs.model.L * CountMlp(bs.model, bs.data.M * bs.data.N).forward;
  auto predict = [&](double forward_seconds) {
    const Rates r(forward_ops / forward_seconds / (double)size, rate->reverse);
    return PredictStep(bs.model, bs.data.M, bs.data.N, size, p.grid.Ph, p.velocity.form, r, net);
  };
  rate->forward = forward_ops / f.forward / (double)size;
  const StepCost model = predict(f.forward);
  std::vector<double> errors;
  for (size_t r = 0; r < x.step.size(); ++r) errors.push_back(predict(x.forward[r]).seconds() / x.step[r] - 1);
  f.predicted = model.seconds(), f.error = median(errors), f.hidden = model.hidden;
  f.in_flight = median(x.flight), f.in_calls = median(x.inside), f.at_once = median(x.inside_at_once);
  f.step_at_once = median(x.step_at_once);
  PetscCall(PrintModel(comm, name, bs, p, f, *rate));
  if (bs.model.mlp()) PetscCall(PrintMlp(comm, bs, peak, median(x.mlp), &f));
  if (bs.model.norm != TokenNorm::none) PetscCall(NormAgainstBare(comm, bs, &f));
  if (!bs.bench.write.empty()) {
    PetscCall(ProblemEvaluate(&p, PETSC_TRUE));
    PetscCall(RunFileWrite(p, History(), nullptr, 0, Content::run_with_gradient,
                           bs.bench.write + "/bench_" + name + ".h5"));
  }
  PetscCall(PrintSummary(comm, name, bs, x, f, peak, gexps, *rate));
  PetscCall(OptimizerDestroy(&opt));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(0);
}

// The cost model's strong scaling of one size (cost.hpp): per core count, the
// layout it chooses (ranks x threads, grid, form; nodes of parallel.node_cores),
// compute and communication, messages and bytes a rank (and off its node),
// and the efficiency T(1) / (cores T(cores)).
PetscErrorCode BenchPredict(MPI_Comm comm, const std::string &name, const Settings &bs, double ops, const Rates &rate,
                            const Network &net) {
  const ModelSettings &m = bs.model;
  const PetscInt node = bs.parallel.node_cores;
  std::istringstream list(bs.bench.ranks);
  PetscFunctionBeginUser;
  const double t1 = PredictStep(m, bs.data.M, bs.data.N, 1, 1, CutForm::tokens, rate, net).seconds();
  const std::optional<CutForm> form = CutFormSetting(bs.parallel);
  const std::string nodes = node > 0 ? std::to_string(node) + "-core nodes" : std::string("one node");
  PetscCall(PetscPrintf(comm,
                        "%s predicted (%.4g GFLOP a step, the forward's at %.3g GFLOP/s a core, the reverse's at %.3g "
                        "times it; %s; in a node %.3g us, %.3g GB/s; "
                        "between nodes %.3g us, %.3g GB/s a rank, %.3g GB/s a card):\n"
                        "%8s %9s %9s %12s %11s %11s %10s %9s %11s %11s\n",
                        name.c_str(), ops / 1e9, rate.forward / 1e9, rate.reverse, nodes.c_str(), net.latency * 1e6,
                        net.bandwidth / 1e9,
                        net.remote_latency * 1e6, net.remote_bandwidth / 1e9, net.card_bandwidth / 1e9, "cores",
                        "ranks x T", "grid", "cut seqs", "compute s", "comm s", "msgs/rank", "MB/rank", "MB off node",
                        "efficiency"));
  for (std::string word; list >> word;) {
    PetscInt P = 0;
    try {
      P = std::stoll(word);
    } catch (...) {
    }
    PetscCheck(P >= 1, comm, PETSC_ERR_USER_INPUT, "bench.ranks: '%s' is not a core count", word.c_str());
    const StepCost c = ChooseLayout(m, bs.data.M, bs.data.N, P, node, rate, net, form);
    if (c.Ph == 0) {
      PetscCall(PetscPrintf(comm, "%8" PetscInt_FMT " more ranks than tokens times heads\n", P));
      continue;
    }
    const std::string grid = std::to_string(c.Ph) + "x" + std::to_string(c.Pt);
    const std::string layout = std::to_string(c.P) + "x" + std::to_string(c.threads);
    const std::string cut = c.cuts ? to_string(c.form) : "none";
    const double efficiency = t1 / ((double)P * c.seconds());
    PetscCall(PetscPrintf(comm, "%8" PetscInt_FMT " %9s %9s %12s %11.4g %11.4g %10.0f %9.4g %11.4g %11.3f\n", P,
                          layout.c_str(), grid.c_str(), cut.c_str(), c.compute, c.communication, c.messages,
                          c.bytes / 1e6, c.remote_bytes / 1e6, efficiency));
    Summary sum;
    sum.add("command", std::string("bench")).add("size", name).add("predicted_cores", (long long)P);
    sum.add("ranks", (long long)c.P).add("threads", (long long)c.threads).add("grid", grid).add("cut_sequences", cut);
    sum.add("compute_seconds", c.compute).add("comm_seconds", c.communication);
    sum.add("messages_per_rank", c.messages).add("bytes_per_rank", c.bytes).add("remote_bytes_per_rank", c.remote_bytes);
    sum.add("efficiency", efficiency);
    PetscCall(sum.print(comm));
  }
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode CommandBench(MPI_Comm comm, const std::vector<std::string> &args, int *status) {
  Settings s;
  PetscBool help;
  double peak, gexps;
  PetscMPIInt size;
  PetscFunctionBeginUser;
  PetscCall(SettingsParse(comm, "bench", args, &s, &help));
  if (help) PetscFunctionReturn(0);
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscBool logging;
  PetscCall(PetscLogIsActive(&logging));
  if (!logging) PetscCall(PetscLogDefaultBegin()); // the time split reads the kernels' and exchanges' events
  // The peak and the exp rate of the cores the run uses: each rank's threads at once.
  const PetscInt threads = RankThreads(s.parallel.threads);
  PetscCall(MeasurePeak(comm, threads, &peak));
  PetscCall(MeasureExpRate(comm, threads, &gexps));
  // The network: measured where this run's ranks can (the settings' figures
  // elsewhere); `here` places the ranks on their nodes as they are.
  Network measured = NetworkOf(s.parallel, 0);
  NetworkMeasured which;
  PetscInt node_ranks;
  PetscCall(MeasureNetwork(comm, &measured, &which));
  PetscCall(NodeRanks(comm, s.parallel.node_ranks, &node_ranks));
  Network here = measured;
  here.node_ranks = node_ranks;
  auto corename = (char *(*)())dlsym(RTLD_DEFAULT, "openblas_get_corename");
  // A kernel set forced by OPENBLAS_CORETYPE can be slower than the CPU's
  // own (half the dgemm rate on an AVX-512 CPU forced to Haswell): the peak,
  // and every fraction of it, is then that set's, and is said to be.
  const char *forced = std::getenv("MFT_BLAS_CHOSEN") ? nullptr : std::getenv("OPENBLAS_CORETYPE");
  const std::string note = forced && corename ? std::string(" (forced by OPENBLAS_CORETYPE=") + forced +
                                                    "; the peak below is theirs: tests/bench/roofline.sh compares)"
                                              : "";
  PetscCall(PetscPrintf(comm, "mft bench: CPU %s; BLAS %s, kernels %s%s; small products %s; exp %s\n",
                        CpuModel().c_str(), BlasLibrary().c_str(), corename ? corename() : "(not OpenBLAS)", note.c_str(),
                        SmallProductPath().c_str(), ExponentialPath()));
  PetscCall(PetscPrintf(comm,
                        "mft bench: %d ranks x %" PetscInt_FMT " threads; on all of them: dense matmul (dgemm 1024) "
                        "%.1f GFLOP/s, exponentials (the kernels' exp) %.2f Gexp/s\n",
                        size, threads, peak, gexps));
  auto link = [](bool m, double lat, double bw, const char *what) {
    char text[160];
    std::snprintf(text, sizeof text, "%s %.3g us, %.3g GB/s (%s)", what, lat * 1e6, bw / 1e9,
                  m ? "ping-pong" : "not measured: the settings' figure");
    return std::string(text);
  };
  PetscCall(PetscPrintf(comm, "mft bench: network %s; %s\n",
                        link(which.local, measured.latency, measured.bandwidth, "in a node").c_str(),
                        link(which.remote, measured.remote_latency, measured.remote_bandwidth, "between nodes").c_str()));
  std::istringstream names(s.bench.sizes);
  for (std::string name; names >> name;) {
    if (name == "none") continue; // the machine's figures only
    std::vector<std::string> a = args;
    const Size *sz = nullptr;
    for (auto &st : standard)
      if (name == st.name) sz = &st;
    PetscCheck(sz || name == "custom", comm, PETSC_ERR_USER_INPUT,
               "bench.sizes: unknown size '%s' (S1, S2, S3, LC, REF, custom)",
               name.c_str());
    if (sz)
      a.insert(a.end(), {"--model.L", std::to_string(sz->L), "--model.H", std::to_string(sz->H), "--data.M",
                         std::to_string(sz->M), "--data.N", std::to_string(sz->N), "--model.d", std::to_string(sz->d),
                         "--model.k", std::to_string(sz->k)});
    a.insert(a.end(), {"--loss.kind", "token", "--train.optimizer", "gd"});
    Settings bs;
    PetscCall(SettingsParse(comm, "bench", a, &bs, &help));
    const double ops = 3 * forward_operations(bs);
    double reverse;
    PetscCall(MeasureReverseRate(comm, bs.model, bs.data.N, &reverse));
    Rates rate(bs.parallel.rate, reverse); // the forward's: measured below when timed
    if (bs.bench.repeats > 0) PetscCall(BenchSize(comm, name, bs, peak, gexps, here, &rate));
    if (!bs.bench.ranks.empty()) PetscCall(BenchPredict(comm, name, bs, ops, rate, measured));
  }
  PetscFunctionReturn(0);
}

} // namespace mft
