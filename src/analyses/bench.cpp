// Operation counts, the matmul peak, memory.
#include "mft/analyses/bench.hpp"

#include "mft/kernels/activation.hpp"
#include "mft/kernels/attention.hpp"
#include "mft/kernels/softmax.hpp"
#include "mft/kernels/linalg.hpp"
#include "mft/layout/random.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <omp.h>
#include <string>
#include <vector>

namespace mft {

namespace {

// Per layer, head and sequence, the forward's work: the projections, the
// scores, the weighted sums and (qkvo) the output's products, in flops, and
// the exponentials.
struct Work {
  double projections, scores, sums, output, exps;
  double products() const { return projections + scores + sums + output; }
};
Work per_sequence(const Settings &s) {
  const double N = s.data.N, d = s.model.d, k = s.model.k;
  const double dv = s.model.head_kind == HeadKind::qkv ? d : k;
  const double nk = s.model.causal ? (N + 1) / 2 : N;
  const bool qkvo = s.model.head_kind == HeadKind::qkvo;
  return {2 * N * d * (2 * k + dv), 2 * N * nk * k, 2 * N * nk * dv, qkvo ? 2 * N * dv * d : 0.0, N * nk};
}

double sequences(const Settings &s) { return (double)s.model.L * s.model.H * s.data.M; }

} // namespace

double forward_products(const Settings &s) { return sequences(s) * per_sequence(s).products(); }

double forward_exponentials(const Settings &s) { return sequences(s) * per_sequence(s).exps; }

double forward_operations(const Settings &s) { return forward_products(s) + forward_exponentials(s); }

double step_bound(const Settings &s, double peak_gflops, double gexps) {
  const Work w = per_sequence(s);
  // What the reverse makes again (attention.hpp): the projections and the
  // scores, their exps, and for qkvo heads the weighted sums (dO needs Y)
  // unless the forward kept its statistics (counted kept where they pay).
  const bool kept = attention_statistics_pay(head_shape(s.model.head_kind, s.model.d, s.model.k), s.data.N);
  const double again = w.projections + w.scores + (w.output > 0 && !kept ? w.sums : 0.0);
  return sequences(s) * ((3 * w.products() + again) / (peak_gflops * 1e9) + 2 * w.exps / (gexps * 1e9));
}

double mlp_step_flops(const Settings &s) {
  return 14.0 * s.model.L * s.data.M * s.data.N * (double)s.model.mlp_width * s.model.d;
}

double mlp_step_bound(const Settings &s, double peak_gflops, const double activation_rates[2]) {
  const double n = (double)s.model.L * s.data.M * s.data.N * (double)s.model.mlp_width;
  return mlp_step_flops(s) / (peak_gflops * 1e9) + n / activation_rates[0] + n / activation_rates[1];
}

PetscErrorCode MeasureActivationRate(MPI_Comm comm, PetscInt threads, Activation a, double rates[2]) {
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Barrier(comm));
  double mine[2] = {0, 0};
#pragma omp parallel num_threads(threads)
  {
    const PetscInt n = 1 << 14;
    std::vector<double> z(n), s(n), ds(n);
    for (PetscInt i = 0; i < n; ++i) z[i] = -4.0 + 8.0 * (double)i / (double)n;
    double seconds[2] = {0, 0};
    const int reps = 100;
    for (int both = 0; both < 2; ++both) {
      ActivateAll(a, z.data(), n, s.data(), both ? ds.data() : nullptr); // warm up
      const double t0 = omp_get_wtime();
      for (int r = 0; r < reps; ++r) ActivateAll(a, z.data(), n, s.data(), both ? ds.data() : nullptr);
      seconds[both] = omp_get_wtime() - t0;
    }
#pragma omp critical
    for (int both = 0; both < 2; ++both) mine[both] += (double)n * reps / seconds[both];
  }
  PetscCallMPI(MPI_Allreduce(mine, rates, 2, MPI_DOUBLE, MPI_SUM, comm));
  PetscFunctionReturn(0);
}

PetscErrorCode MeasureExpRate(MPI_Comm comm, PetscInt threads, double *gexps) {
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Barrier(comm));
  double mine = 0;
#pragma omp parallel num_threads(threads) reduction(+ : mine)
  {
    const PetscInt n = 1 << 16;
    std::vector<double> x(n), arg(n);
    for (PetscInt i = 0; i < n; ++i) arg[i] = -30.0 * (double)i / (double)n;
    x = arg;
    exponentials(x.data(), n); // warm up
    const int reps = 200;
    double seconds = 0;
    for (int r = 0; r < reps; ++r) { // the arguments restored outside the timing
      x = arg;
      const double t0 = omp_get_wtime();
      exponentials(x.data(), n);
      seconds += omp_get_wtime() - t0;
    }
    mine += (double)n * reps / seconds / 1e9;
  }
  PetscCallMPI(MPI_Allreduce(&mine, gexps, 1, MPI_DOUBLE, MPI_SUM, comm));
  PetscFunctionReturn(0);
}

PetscErrorCode MeasureReverseRate(MPI_Comm comm, const ModelSettings &m, PetscInt N, double *ratio) {
  const HeadShape shape = head_shape(m.head_kind, m.d, m.k);
  const Range q{N - std::min<PetscInt>(N, N <= 4096 ? 1024 : 256), N}; // at long context: 256 queries
  std::vector<double> theta((size_t)shape.size), x((size_t)(N * m.d)), lam((size_t)(q.size() * m.d));
  Stream r(1, 0);
  for (double &t : theta) t = r.normal() / std::sqrt((double)m.d);
  for (double &v : x) v = r.normal();
  for (double &v : lam) v = r.normal();
  std::vector<double> out(lam.size()), dx(x.size()), dtheta(theta.size());
  AttentionWork w;
  w.reserve(shape, N);
  // The forward's statistics kept for the reverse where a run keeps them.
  std::vector<double> statistics;
  if (attention_statistics_pay(shape, N)) statistics.resize((size_t)(q.size() * attention_statistics_width(shape)));
  w.statistics = statistics.empty() ? nullptr : statistics.data();
  const AttentionOptions o{LogitScale(m), m.causal};
  auto forward = [&] { attention(shape, theta.data(), o, x.data(), N, q, 1.0, out.data(), w); };
  auto reverse = [&] {
    attention_reverse(shape, theta.data(), o, x.data(), N, q, 1.0, lam.data(), dx.data(), dtheta.data(), w);
  };
  // Rounds of calls (as many as take a millisecond, after one to warm up),
  // a forward round then a reverse round, 9 times: the median of the
  // rounds' ratios (each pair timed together, as the machine's speed drifts).
  auto calls_of = [](auto call) {
    const double t0 = MPI_Wtime();
    call();
    return (int)std::clamp(1e-3 / std::max(MPI_Wtime() - t0, 1e-9), 1.0, 1000.0);
  };
  auto seconds = [](auto call, int calls) {
    const double t0 = MPI_Wtime();
    for (int c = 0; c < calls; ++c) call();
    return (MPI_Wtime() - t0) / calls;
  };
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Barrier(comm));
  const int nf = calls_of(forward), nr = calls_of(reverse);
  std::vector<double> ratios; // reverse seconds over forward seconds
  for (int k = 0; k < 9; ++k) {
    const double tf = seconds(forward, nf);
    ratios.push_back(seconds(reverse, nr) / tf);
  }
  std::nth_element(ratios.begin(), ratios.begin() + 4, ratios.end());
  const UnitOperations u = CountUnit(m, N, q.begin, q.end, (double)N);
  const double mine = (u.reverse + (statistics.empty() ? u.again : 0.0)) / u.forward / ratios[4];
  PetscMPIInt size;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Allreduce(&mine, ratio, 1, MPI_DOUBLE, MPI_SUM, comm));
  *ratio /= size;
  PetscFunctionReturn(0);
}

PetscErrorCode MeasurePeak(MPI_Comm comm, PetscInt threads, double *gflops) {
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Barrier(comm));
  double mine = 0;
#pragma omp parallel num_threads(threads) reduction(+ : mine)
  {
    const PetscInt n = 1024;
    std::vector<double> A(n * n, 1.0 / n), B(n * n, 0.5), C(n * n, 0.0);
    gemm(false, false, n, n, n, 1.0, A.data(), n, B.data(), n, 0.0, C.data(), n); // warm up
#pragma omp barrier
    const int reps = 4;
    const double t0 = omp_get_wtime(); // (threads make no MPI calls: MPI_THREAD_FUNNELED)
    for (int r = 0; r < reps; ++r) gemm(false, false, n, n, n, 1.0, A.data(), n, B.data(), n, 1.0, C.data(), n);
    mine += 2.0 * n * n * n * reps / (omp_get_wtime() - t0) / 1e9;
  }
  PetscCallMPI(MPI_Allreduce(&mine, gflops, 1, MPI_DOUBLE, MPI_SUM, comm));
  PetscFunctionReturn(0);
}

namespace {

// Half the median round trip of `bytes` between comm ranks a and b (both
// call; the others only take part in the barrier and the broadcast).
PetscErrorCode PingPong(MPI_Comm comm, int a, int b, std::size_t bytes, double *seconds) {
  PetscMPIInt rank;
  std::vector<char> buf(bytes, 1);
  std::vector<double> trips;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  const int reps = bytes > 4096 ? 10 : 200;
  PetscCallMPI(MPI_Barrier(comm));
  for (int i = 0; i <= reps && (rank == a || rank == b); ++i) { // the first round trip warms up
    const double t0 = MPI_Wtime();
    if (rank == a) {
      PetscCallMPI(MPI_Send(buf.data(), (int)bytes, MPI_BYTE, b, 0, comm));
      PetscCallMPI(MPI_Recv(buf.data(), (int)bytes, MPI_BYTE, b, 0, comm, MPI_STATUS_IGNORE));
    } else {
      PetscCallMPI(MPI_Recv(buf.data(), (int)bytes, MPI_BYTE, a, 0, comm, MPI_STATUS_IGNORE));
      PetscCallMPI(MPI_Send(buf.data(), (int)bytes, MPI_BYTE, a, 0, comm));
    }
    if (i > 0) trips.push_back(MPI_Wtime() - t0);
  }
  double half = 0;
  if (rank == a) {
    std::nth_element(trips.begin(), trips.begin() + trips.size() / 2, trips.end());
    half = trips[trips.size() / 2] / 2;
  }
  PetscCallMPI(MPI_Bcast(&half, 1, MPI_DOUBLE, a, comm));
  *seconds = half;
  PetscFunctionReturn(0);
}

// Latency and bandwidth between ranks a and b.
PetscErrorCode MeasureLink(MPI_Comm comm, int a, int b, double *latency, double *bandwidth) {
  const std::size_t big = 4u << 20;
  double t_small, t_big;
  PetscFunctionBeginUser;
  PetscCall(PingPong(comm, a, b, 8, &t_small));
  PetscCall(PingPong(comm, a, b, big, &t_big));
  *latency = t_small;
  *bandwidth = (double)big / t_big;
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode MeasureNetwork(MPI_Comm comm, Network *net, NetworkMeasured *measured) {
  PetscMPIInt size, rank;
  MPI_Comm node;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  *measured = NetworkMeasured{};
  if (size < 2) PetscFunctionReturn(0);
  // Each rank's node, named by its lowest rank.
  PetscCallMPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int leader = rank;
  PetscCallMPI(MPI_Bcast(&leader, 1, MPI_INT, 0, node));
  PetscCallMPI(MPI_Comm_free(&node));
  std::vector<int> leaders((size_t)size);
  PetscCallMPI(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm));
  if (leaders[1] == leaders[0]) {
    PetscCall(MeasureLink(comm, 0, 1, &net->latency, &net->bandwidth));
    measured->local = true;
  }
  for (int r = 1; r < size; ++r)
    if (leaders[r] != leaders[0]) {
      PetscCall(MeasureLink(comm, 0, r, &net->remote_latency, &net->remote_bandwidth));
      measured->remote = true;
      break;
    }
  PetscFunctionReturn(0);
}

double peak_memory_mib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

} // namespace mft
