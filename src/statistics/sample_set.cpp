// Samples of a law as plain arrays of tokens (sample_set.hpp): Gram matrices
// summed over a set's members, their means and spread reduced over the ranks.
#include "mft/statistics/sample_set.hpp"

#include <algorithm>
#include <cmath>

namespace mft {

SampleSet BlockSet(const SampleBlock &b, double weight) { return SampleSet({{b.tokens, weight}}, b.S, b.rows); }

namespace {

// G_ij = x_i . x_j of one sequence of N tokens in R^d, into g (N, N).
void Gram(const double *x, PetscInt N, PetscInt d, double *g) {
  for (PetscInt i = 0; i < N; ++i)
    for (PetscInt j = 0; j < N; ++j) {
      double s = 0;
      for (PetscInt c = 0; c < d; ++c) s += x[i * d + c] * x[j * d + c];
      g[i * N + j] = s;
    }
}

} // namespace

void SetGram(const SampleSet &k, PetscInt M, PetscInt N, PetscInt d, PetscInt s, PetscInt m, double *g, double *z) {
  std::fill(z, z + N * N, 0.0);
  for (const SampleSet::Member &member : k.members) {
    Gram(member.tokens + ((size_t)s * M + m) * N * d, N, d, g);
    for (PetscInt e = 0; e < N * N; ++e) z[e] += member.weight * g[e];
  }
}

PetscErrorCode GramOf(MPI_Comm comm, const Law &law, PetscInt M, PetscInt N, PetscInt d, std::vector<double> *mean,
                      std::vector<double> *se) {
  const size_t per = (size_t)(N * N), G = (size_t)M * per;
  std::vector<double> g(per), z(per), mu(G), var(G);
  PetscFunctionBeginUser;
  mean->assign(G, 0.0);
  se->assign(G, 0.0);
  for (const SampleSet &k : law) {
    std::fill(mu.begin(), mu.end(), 0.0), std::fill(var.begin(), var.end(), 0.0);
    for (int pass = 0; pass < 2; ++pass) { // the mean, then the spread about it
      std::vector<double> &sum = pass ? var : mu;
      for (PetscInt s = 0; s < k.rows; ++s)
        for (PetscInt m = 0; m < M; ++m) {
          SetGram(k, M, N, d, s, m, g.data(), z.data());
          for (size_t e = 0; e < per; ++e) sum[m * per + e] += pass ? std::pow(z[e] - mu[m * per + e], 2) : z[e];
        }
      PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, sum.data(), (int)G, MPI_DOUBLE, MPI_SUM, comm));
      if (!pass)
        for (double &v : mu) v /= (double)k.S;
    }
    for (size_t e = 0; e < G; ++e) (*mean)[e] += mu[e], (*se)[e] += k.S > 1 ? var[e] / (double)(k.S - 1) / (double)k.S : 0.0;
  }
  for (double &v : *se) v = std::sqrt(v); // the sets' variances add
  PetscFunctionReturn(0);
}

} // namespace mft
