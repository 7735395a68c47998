// mft bench: one training step and the forward pass alone, timed at the
// standard sizes (or the settings given), with rates, memory and a time split.
#include "mft/bench.hpp"
#include "mft/commands.hpp"
#include "mft/optimizer.hpp"
#include "mft/report.hpp"
#include "mft/runfile.hpp"

#include <algorithm>
#include <dlfcn.h>
#include <sstream>

namespace mft {

namespace {

struct Size {
  const char *name;
  PetscInt L, H, M, N, d, k;
};
const Size standard[] = {{"S1", 16, 16, 8, 64, 16, 8}, {"S2", 32, 32, 16, 128, 16, 8}, {"S3", 8, 4, 2, 1024, 32, 16}};

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

} // namespace

PetscErrorCode CommandBench(MPI_Comm comm, const std::vector<std::string> &args, int *status) {
  Settings s;
  PetscBool help;
  double peak;
  PetscMPIInt size;
  PetscFunctionBeginUser;
  PetscCall(SettingsParse(comm, "bench", args, &s, &help));
  if (help) PetscFunctionReturn(0);
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(MeasurePeak(comm, &peak));
  auto corename = (char *(*)())dlsym(RTLD_DEFAULT, "openblas_get_corename");
  PetscCall(PetscPrintf(comm, "mft bench: %d ranks; BLAS kernels: %s; dense matmul (dgemm 1024) on all of them: %.1f GFLOP/s\n",
                        size, corename ? corename() : "(not OpenBLAS)", peak));
  std::istringstream names(s.bench.sizes);
  for (std::string name; names >> name;) {
    if (name == "none") continue; // the machine's figures only
    std::vector<std::string> a = args;
    const Size *sz = nullptr;
    for (auto &st : standard)
      if (name == st.name) sz = &st;
    PetscCheck(sz || name == "custom", comm, PETSC_ERR_USER_INPUT, "bench.sizes: unknown size '%s' (S1, S2, S3, custom)",
               name.c_str());
    if (sz)
      a.insert(a.end(), {"--model.L", std::to_string(sz->L), "--model.H", std::to_string(sz->H), "--data.M",
                         std::to_string(sz->M), "--data.N", std::to_string(sz->N), "--model.d", std::to_string(sz->d),
                         "--model.k", std::to_string(sz->k)});
    a.insert(a.end(), {"--loss.kind", "token", "--train.optimizer", "gd"});
    Settings bs;
    PetscCall(SettingsParse(comm, "bench", a, &bs, &help));
    Problem p;
    Optimizer opt;
    PetscCall(ProblemCreate(comm, bs, &p));
    PetscCall(OptimizerCreate(bs.train, p.heads, &opt));
    PetscCall(ProblemEvaluate(&p, PETSC_TRUE)); // warm-up
    std::vector<double> forward, step, kernel, comm_s;
    for (PetscInt r = 0; r < bs.bench.repeats; ++r) {
      double t;
      PetscCall(Timed(comm, [&] { return ProblemEvaluate(&p, PETSC_FALSE); }, &t));
      forward.push_back(t);
      const double k0 = p.velocity.seconds_kernel, c0 = p.velocity.seconds_comm;
      PetscCall(Timed(comm, [&]() -> PetscErrorCode {
        PetscCall(ProblemEvaluate(&p, PETSC_TRUE));
        PetscCall(OptimizerStep(&opt, p.heads.theta, p.grad));
        PetscCall(ProblemSetHeads(&p));
        return 0;
      }, &t));
      step.push_back(t);
      double kc[2] = {p.velocity.seconds_kernel - k0, p.velocity.seconds_comm - c0}, kcmax[2];
      PetscCallMPI(MPI_Allreduce(kc, kcmax, 2, MPI_DOUBLE, MPI_MAX, comm));
      kernel.push_back(kcmax[0]), comm_s.push_back(kcmax[1]);
    }
    const double ops = 3 * forward_operations(bs), st = median(step), fw = median(forward);
    double mem = peak_memory_mib(), memmax;
    PetscCallMPI(MPI_Allreduce(&mem, &memmax, 1, MPI_DOUBLE, MPI_MAX, comm));
    const double kf = median(kernel) / st, cf = median(comm_s) / st;
    PetscCall(PetscPrintf(comm,
                          "%-6s L=%" PetscInt_FMT " H=%" PetscInt_FMT " M=%" PetscInt_FMT " N=%" PetscInt_FMT
                          " d=%" PetscInt_FMT " k=%" PetscInt_FMT ": step %.4g s (min %.4g, max %.4g), forward %.4g s; "
                          "%.2f GFLOP a step, %.1f GFLOP/s = %.0f%% of the matmul peak; kernels %.0f%%, communication "
                          "%.0f%%, PETSc and the rest %.0f%%; %.0f MiB per rank\n",
                          name.c_str(), bs.model.L, bs.model.H, bs.data.M, bs.data.N, bs.model.d, bs.model.k, st,
                          *std::min_element(step.begin(), step.end()), *std::max_element(step.begin(), step.end()), fw,
                          ops / 1e9, ops / st / 1e9, 100 * ops / st / 1e9 / peak, 100 * kf, 100 * cf,
                          100 * (1 - kf - cf), memmax));
    if (!bs.bench.write.empty()) {
      PetscCall(ProblemEvaluate(&p, PETSC_TRUE));
      PetscCall(RunFileWrite(p, History(), nullptr, 0, Content::run_with_gradient,
                             bs.bench.write + "/bench_" + name + ".h5"));
    }
    Summary sum;
    sum.add("command", std::string("bench")).add("size", name).add("ranks", (long long)size);
    sum.add("L", (long long)bs.model.L).add("H", (long long)bs.model.H).add("M", (long long)bs.data.M);
    sum.add("N", (long long)bs.data.N).add("d", (long long)bs.model.d).add("k", (long long)bs.model.k);
    sum.add("step_seconds", st).add("step_min", *std::min_element(step.begin(), step.end()));
    sum.add("step_max", *std::max_element(step.begin(), step.end())).add("forward_seconds", fw);
    sum.add("gflop_step", ops / 1e9).add("gflops", ops / st / 1e9).add("peak_gflops", peak);
    sum.add("fraction_of_peak", ops / st / 1e9 / peak).add("kernel_fraction", kf).add("comm_fraction", cf);
    sum.add("memory_mib", memmax);
    PetscCall(sum.print(comm));
    PetscCall(OptimizerDestroy(&opt));
    PetscCall(ProblemDestroy(&p));
  }
  PetscFunctionReturn(0);
}

} // namespace mft
