// Operation counts, the matmul peak, memory.
#include "mft/bench.hpp"

#include "mft/linalg.hpp"

#include <fstream>
#include <string>
#include <vector>

namespace mft {

double forward_operations(const Settings &s) {
  const double L = s.model.L, H = s.model.H, M = s.data.M, N = s.data.N, d = s.model.d, k = s.model.k;
  const double dv = s.model.head_kind == HeadKind::qkv ? d : k;
  const double nk = s.model.causal ? (N + 1) / 2 : N;
  double per = 2 * N * d * (2 * k + dv) + 2 * N * nk * k + N * nk + 2 * N * nk * dv;
  if (s.model.head_kind == HeadKind::qkvo) per += 2 * N * dv * d;
  return L * H * M * per;
}

PetscErrorCode MeasurePeak(MPI_Comm comm, double *gflops) {
  const PetscInt n = 1024;
  std::vector<double> A(n * n, 1.0 / n), B(n * n, 0.5), C(n * n, 0.0);
  PetscFunctionBeginUser;
  gemm(false, false, n, n, n, 1.0, A.data(), n, B.data(), n, 0.0, C.data(), n); // warm up
  PetscCallMPI(MPI_Barrier(comm));
  const int reps = 4;
  const double t0 = MPI_Wtime();
  for (int r = 0; r < reps; ++r) gemm(false, false, n, n, n, 1.0, A.data(), n, B.data(), n, 1.0, C.data(), n);
  double mine = 2.0 * n * n * n * reps / (MPI_Wtime() - t0) / 1e9;
  PetscCallMPI(MPI_Allreduce(&mine, gflops, 1, MPI_DOUBLE, MPI_SUM, comm));
  PetscFunctionReturn(0);
}

double peak_memory_mib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

} // namespace mft
