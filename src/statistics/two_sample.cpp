// Two laws compared from their samples (two_sample.hpp).
#include "mft/statistics/two_sample.hpp"

#include "mft/layout/grid.hpp"
#include "mft/layout/random.hpp"

#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <cmath>

namespace mft {

namespace {

// The variance of the mean over set k's samples of sum_ij D_ij z_ij, for
// every sequence m (D: (M, N, N)), two passes reduced over comm.
PetscErrorCode ProjectionVariance(MPI_Comm comm, const SampleSet &k, PetscInt M, PetscInt N, PetscInt d,
                                  const std::vector<double> &D, std::vector<double> *var) {
  std::vector<double> g((size_t)(N * N)), z((size_t)(N * N)), mean((size_t)M, 0.0);
  auto project = [&](PetscInt s, PetscInt m) {
    SetGram(k, M, N, d, s, m, g.data(), z.data());
    double y = 0;
    for (PetscInt e = 0; e < N * N; ++e) y += D[m * N * N + e] * z[e];
    return y;
  };
  PetscFunctionBeginUser;
  var->assign((size_t)M, 0.0);
  for (PetscInt s = 0; s < k.rows; ++s)
    for (PetscInt m = 0; m < M; ++m) mean[m] += project(s, m);
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, mean.data(), (int)M, MPI_DOUBLE, MPI_SUM, comm));
  for (double &v : mean) v /= (double)k.S;
  for (PetscInt s = 0; s < k.rows; ++s)
    for (PetscInt m = 0; m < M; ++m) (*var)[m] += std::pow(project(s, m) - mean[m], 2);
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, var->data(), (int)M, MPI_DOUBLE, MPI_SUM, comm));
  for (double &v : *var) v = k.S > 1 ? v / (double)(k.S - 1) / (double)k.S : 0.0;
  PetscFunctionReturn(0);
}

// The unique Gram entries (i <= j) of an N x N matrix, in order, and how
// many ordered entries each stands for (1 on the diagonal, 2 off it).
std::vector<PetscInt> UniqueEntries(PetscInt N, std::vector<double> *multiplicity) {
  std::vector<PetscInt> at;
  multiplicity->clear();
  for (PetscInt i = 0; i < N; ++i)
    for (PetscInt j = i; j < N; ++j) at.push_back(i * N + j), multiplicity->push_back(i == j ? 1 : 2);
  return at;
}

// Adds into cov, for every sequence m a U x U block (U unique entries), the
// covariance of the mean over set k's samples of its unique Gram entries,
// estimated from its first kCovarianceRows samples (the ranks hold
// consecutive blocks in rank order: the same samples on any number of
// ranks), two passes reduced over comm.
PetscErrorCode AddGramCovariance(MPI_Comm comm, const SampleSet &k, PetscInt M, PetscInt N, PetscInt d,
                                 const std::vector<PetscInt> &at, std::vector<double> *cov) {
  const size_t U = at.size();
  std::vector<double> g((size_t)(N * N)), z((size_t)(N * N)), mean(M * U, 0.0), c(U), sums(M * U * U, 0.0);
  PetscInt begin = 0;
  PetscMPIInt rank;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Exscan(&k.rows, &begin, 1, MPIU_INT, MPI_SUM, comm));
  if (rank == 0) begin = 0; // (MPI_Exscan leaves rank 0's undefined)
  const PetscInt rows = std::max<PetscInt>(0, std::min(k.rows, kCovarianceRows - begin)),
                 used = std::min(k.S, kCovarianceRows);
  if (used < 2) PetscFunctionReturn(0);
  for (PetscInt s = 0; s < rows; ++s)
    for (PetscInt m = 0; m < M; ++m) {
      SetGram(k, M, N, d, s, m, g.data(), z.data());
      for (size_t u = 0; u < U; ++u) mean[m * U + u] += z[at[u]];
    }
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, mean.data(), (int)mean.size(), MPI_DOUBLE, MPI_SUM, comm));
  for (double &v : mean) v /= (double)used;
  for (PetscInt s = 0; s < rows; ++s)
    for (PetscInt m = 0; m < M; ++m) {
      SetGram(k, M, N, d, s, m, g.data(), z.data());
      for (size_t u = 0; u < U; ++u) c[u] = z[at[u]] - mean[m * U + u];
      double *block = sums.data() + m * U * U;
      for (size_t u = 0; u < U; ++u)
        for (size_t v = 0; v < U; ++v) block[u * U + v] += c[u] * c[v];
    }
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, sums.data(), (int)sums.size(), MPI_DOUBLE, MPI_SUM, comm));
  for (size_t e = 0; e < sums.size(); ++e) (*cov)[e] += sums[e] / (double)(used - 1) / (double)k.S;
  PetscFunctionReturn(0);
}

// Per sequence, Var(|eps|^2) = 2 |Sigma|_F^2 for the Gram means' error eps
// (Gaussian to first order), Sigma the N^2 x N^2 covariance of the ordered
// entries: G_ij and G_ji are one random quantity, and under common noise
// every entry moves with the others. From the unique entries' covariance
// of both laws' sets; beyond kCovarianceEntries unique entries, from their
// variances alone (each with its transposed twin).
PetscErrorCode SecondOrderVariance(MPI_Comm comm, const Law &model, const Law &limit, PetscInt M, PetscInt N,
                                   PetscInt d, const std::vector<double> &gs, const std::vector<double> &ls,
                                   std::vector<double> *second) {
  std::vector<double> mult;
  const std::vector<PetscInt> at = UniqueEntries(N, &mult);
  const size_t U = at.size(), per = (size_t)(N * N);
  PetscFunctionBeginUser;
  second->assign((size_t)M, 0.0);
  if (U > (size_t)kCovarianceEntries) {
    for (PetscInt m = 0; m < M; ++m)
      for (size_t u = 0; u < U; ++u) {
        const double V = std::pow(gs[m * per + at[u]], 2) + std::pow(ls[m * per + at[u]], 2);
        (*second)[m] += 2 * mult[u] * mult[u] * V * V;
      }
    PetscFunctionReturn(0);
  }
  std::vector<double> cov(M * U * U, 0.0);
  for (const Law *law : {&model, &limit})
    for (const SampleSet &k : *law) PetscCall(AddGramCovariance(comm, k, M, N, d, at, &cov));
  for (PetscInt m = 0; m < M; ++m)
    for (size_t u = 0; u < U; ++u)
      for (size_t v = 0; v < U; ++v) (*second)[m] += 2 * mult[u] * mult[v] * std::pow(cov[(m * U + u) * U + v], 2);
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode GramGapOf(MPI_Comm comm, const Law &model, const Law &limit, PetscInt M, PetscInt N, PetscInt d,
                         GramGap *gap, PetscInt simultaneous) {
  std::vector<double> gm, gs, lm, ls;
  PetscFunctionBeginUser;
  PetscCall(GramOf(comm, model, M, N, d, &gm, &gs));
  PetscCall(GramOf(comm, limit, M, N, d, &lm, &ls));
  const size_t per = (size_t)(N * N);
  std::vector<double> D((size_t)M * per), first((size_t)M, 0.0), first_model((size_t)M, 0.0), v;
  for (size_t e = 0; e < D.size(); ++e) D[e] = gm[e] - lm[e];
  for (const Law *law : {&model, &limit}) // Var(2 sum D G): each side's sets
    for (const SampleSet &k : *law) {
      PetscCall(ProjectionVariance(comm, k, M, N, d, D, &v));
      for (PetscInt m = 0; m < M; ++m) first[m] += 4 * v[m], first_model[m] += law == &model ? 4 * v[m] : 0.0;
    }
  std::vector<double> second;
  PetscCall(SecondOrderVariance(comm, model, limit, M, N, d, gs, ls, &second));
  // Simultaneous over the sequences (Sidak): every sequence's interval
  // holds at once with 95%, so the largest gap lies in [max lo, max hi].
  const double z = SidakZ(simultaneous > 0 ? simultaneous : M);
  GramGap worst;
  worst.err = -1;
  for (PetscInt m = 0; m < M; ++m) {
    double d2 = 0, floor = 0, norm2 = 0;
    for (size_t at = m * per; at < (m + 1) * per; ++at)
      d2 += D[at] * D[at], floor += gs[at] * gs[at] + ls[at] * ls[at], norm2 += lm[at] * lm[at];
    const double corrected = d2 - floor, half = z * std::sqrt(first[m] + second[m]), norm = std::sqrt(norm2);
    const double err = std::sqrt(std::max(corrected, 0.0)) / norm;
    if (err > worst.err) {
      worst.err = err, worst.sequence = m;
      worst.model_share = first[m] > 0 ? first_model[m] / first[m] : 1;
    }
    worst.floor = std::max(worst.floor, std::sqrt(floor) / norm);
    worst.lo = std::max(worst.lo, std::sqrt(std::max(corrected - half, 0.0)) / norm);
    worst.hi = std::max(worst.hi, std::sqrt(std::max(corrected + half, 0.0)) / norm);
  }
  worst.resolved = worst.lo > 0;
  *gap = worst;
  PetscFunctionReturn(0);
}

double GramRelative(const std::vector<double> &a, const std::vector<double> &b, PetscInt M, PetscInt N) {
  const size_t per = (size_t)(N * N);
  double worst = 0;
  for (PetscInt m = 0; m < M; ++m) {
    double num = 0, den = 0;
    for (size_t e = m * per; e < (m + 1) * per; ++e) num += (a[e] - b[e]) * (a[e] - b[e]), den += b[e] * b[e];
    worst = std::max(worst, std::sqrt(num / den));
  }
  return worst;
}

double SidakZ(PetscInt n) {
  return boost::math::quantile(boost::math::normal(), 1 - (1 - std::pow(0.95, 1.0 / (double)n)) / 2);
}

std::uint64_t EnergySeed(size_t k, PetscInt m) { return 20261207 + ((std::uint64_t)k << 32) + (std::uint64_t)m; }

namespace {

// The largest energy distance over probe set k's sequences into g, each
// sequence's interval +- z se, the largest's [max lo, max hi]; NaN where a
// side has fewer than 2 samples.
PetscErrorCode EnergyOfSet(MPI_Comm comm, size_t k, const Samples &a, const Samples &b, double z, LawGap *g) {
  const PetscInt n = a.N * a.d, stride = a.M * n;
  PetscFunctionBeginUser;
  if (a.S < 2 || b.S < 2) { // (a trained study's survivors): no distance
    g->energy.value = g->energy.se = g->energy_lo = g->energy_hi = NAN;
    PetscFunctionReturn(0);
  }
  for (PetscInt m = 0; m < a.M; ++m) {
    Energy e;
    PetscCall(EnergyOf(comm, a.tokens.data() + m * n, a.block.size(), b.tokens.data() + m * n, b.block.size(), n,
                       stride, kEnergyDirections, EnergySeed(k, m), &e));
    g->energy_lo = std::max(g->energy_lo, e.value - z * e.se), g->energy_hi = std::max(g->energy_hi, e.value + z * e.se);
    if (e.value > g->energy.value) g->energy = e;
  }
  g->energy_resolved = g->energy_lo > 0;
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode LawGapOf(MPI_Comm comm, const std::vector<std::string> &names, const std::vector<Samples> &x,
                        const std::vector<Law> &y_law, const std::vector<const Samples *> &y, LawGap *g) {
  PetscFunctionBeginUser;
  *g = LawGap();
  g->gap.err = -1, g->energy.value = -HUGE_VAL, g->energy_lo = 0, g->energy_hi = 0;
  PetscInt sequences = 0; // every probe set's: the intervals hold them all at once
  for (const Samples &a : x) sequences += a.M;
  for (size_t k = 0; k < names.size(); ++k) {
    const Samples &a = x[k];
    GramGap gap, &w = g->gap;
    PetscCall(GramGapOf(comm, {SamplesSet(a)}, y_law[k], a.M, a.N, a.d, &gap, sequences));
    const double lo = std::max(w.lo, gap.lo), hi = std::max(w.hi, gap.hi), floor = std::max(w.floor, gap.floor);
    if (gap.err > w.err) w = gap, g->probe = names[k];
    w.lo = lo, w.hi = hi, w.floor = floor, w.resolved = lo > 0;
    PetscCall(EnergyOfSet(comm, k, a, *y[k], SidakZ(sequences), g));
  }
  PetscFunctionReturn(0);
}

} // namespace mft
