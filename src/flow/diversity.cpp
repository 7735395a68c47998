// The heads' diversity at the tokens entering each layer (diversity.hpp).
#include "mft/flow/diversity.hpp"

#include "mft/flow/plain.hpp"
#include "mft/flow/problem.hpp"
#include "mft/layout/grid.hpp"
#include "mft/layout/heads.hpp"

#include <algorithm>
#include <cmath>

namespace mft {

namespace {

// One head's N x N attention matrix over one sequence through its
// projections: q_i = Q xs_i and k_j = K xs_j (k numbers each), a[i,j] =
// beta k^-g q_i . k_j, and the softmax plain_attention takes (the keys'
// masses w, the causal mask): O(N d k + N^2 k) a head, where plain.hpp's
// Q^T K form costs O(N^2 d^2) (a reference of d = 256 spent 43% of its
// training there). q, kk: scratch of N k each.
void ProjectedAttention(const ModelSettings &m, const HeadShape &shape, const double *th, const double *xs, PetscInt N,
                        const double *w, std::vector<double> &q, std::vector<double> &kk, double *P) {
  const PetscInt d = m.d, k = m.k;
  std::fill(q.begin(), q.end(), 0.0), std::fill(kk.begin(), kk.end(), 0.0);
  for (PetscInt i = 0; i < N; ++i)
    for (PetscInt r = 0; r < k; ++r)
      for (PetscInt c = 0; c < d; ++c)
        q[i * k + r] += th[shape.offQ + r * d + c] * xs[i * d + c], kk[i * k + r] += th[shape.offK + r * d + c] * xs[i * d + c];
  const double scale = LogitScale(m);
  for (PetscInt i = 0; i < N; ++i) {
    const PetscInt nj = m.causal ? i + 1 : N;
    double *a = P + i * N, amax = -INFINITY, Z = 0;
    for (PetscInt j = 0; j < nj; ++j) {
      double e = 0;
      for (PetscInt r = 0; r < k; ++r) e += q[i * k + r] * kk[j * k + r];
      a[j] = scale * e, amax = std::fmax(amax, a[j]);
    }
    for (PetscInt j = 0; j < nj; ++j) Z += (w ? w[j] : 1.0) * std::exp(a[j] - amax);
    for (PetscInt j = 0; j < nj; ++j) a[j] = (w ? w[j] : 1.0) * std::exp(a[j] - amax) / Z;
    for (PetscInt j = nj; j < N; ++j) a[j] = 0;
  }
}

} // namespace

PetscErrorCode HeadDiversity(MPI_Comm comm, const ModelSettings &m, const std::vector<double> &heads,
                             const Trajectory &t, const std::vector<double> &weights, double *D) {
  const HeadShape shape = head_shape(m.head_kind, m.d, m.k);
  const PetscInt M = t.M, N = t.N, NN = N * N;
  PetscMPIInt size, rank;
  PetscFunctionBeginUser;
  PetscCheck(t.S == m.L && (PetscInt)t.tokens.size() == m.L + 1, comm, PETSC_ERR_ARG_WRONG,
             "the heads' diversity needs the tokens entering every layer (a trajectory of %" PetscInt_FMT
             " slices, not %" PetscInt_FMT ")",
             m.L, t.S);
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  const Range own = split(m.H, size, rank);
  // Per layer and sequence: sum_h A_h (N x N) and sum_h |A_h|_F^2 over this rank's heads.
  std::vector<double> sum((size_t)(m.L * M * NN), 0.0), square((size_t)(m.L * M), 0.0), x, P((size_t)NN);
  std::vector<double> q((size_t)(N * m.k)), kk((size_t)(N * m.k));
  for (PetscInt l = 0; l < m.L; ++l) {
    PetscCall(GatherAll(t.tokens[l], &x));
    const std::vector<double> read = plain_read(m, x);
    for (PetscInt h = own.begin; h < own.end; ++h)
      for (PetscInt s = 0; s < M; ++s) {
        ProjectedAttention(m, shape, heads.data() + (l * m.H + h) * shape.size, read.data() + s * N * m.d, N,
                           weights.empty() ? nullptr : weights.data() + s * N, q, kk, P.data());
        double *a = sum.data() + (l * M + s) * NN;
        for (PetscInt e = 0; e < NN; ++e) a[e] += P[e], square[l * M + s] += P[e] * P[e];
      }
  }
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, sum.data(), (int)sum.size(), MPI_DOUBLE, MPI_SUM, comm));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, square.data(), (int)square.size(), MPI_DOUBLE, MPI_SUM, comm));
  // (1/H) sum_h |A_h - Abar|^2 = (1/H) sum_h |A_h|^2 - |Abar|^2
  double total = 0;
  for (PetscInt ls = 0; ls < m.L * M; ++ls) {
    double mean2 = 0;
    for (PetscInt e = 0; e < NN; ++e) mean2 += sum[ls * NN + e] * sum[ls * NN + e];
    total += std::fmax(0.0, square[ls] / (double)m.H - mean2 / ((double)m.H * (double)m.H));
  }
  *D = total / (double)(m.L * M);
  PetscFunctionReturn(0);
}

} // namespace mft
