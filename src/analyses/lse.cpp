// The log-sum-exp test: sample points, affine parts removed, Gram spectrum.
#include "mft/analyses/lse.hpp"

#include "mft/flow/data.hpp"
#include "mft/flow/families.hpp"
#include "mft/layout/grid.hpp"
#include "mft/layout/h5.hpp"
#include "mft/kernels/linalg.hpp"
#include "mft/layout/random.hpp"

#include <cmath>

namespace mft {

// Every token of every sequence, on every rank: generated or read from
// data.file, with the file's weights (empty: 1/N each).
static PetscErrorCode AllTokens(MPI_Comm comm, const Settings &s, std::vector<double> *x, std::vector<double> *w,
                                PetscInt *M, PetscInt *N, PetscInt *d) {
  PetscFunctionBeginUser;
  if (s.data.file.empty()) {
    *M = s.data.M, *N = s.data.N, *d = s.model.d;
    x->resize((size_t)(*M * *N * *d));
    for (PetscInt m = 0; m < *M; ++m) family_sample(s.data, *d, m, *N, x->data() + m * *N * *d);
    PetscFunctionReturn(0);
  }
  h5::File f;
  PetscCall(h5::Open(comm, s.data.file, false, &f));
  f.finite = true;
  const auto dims = h5::Shape(f, "/data/tokens");
  if (dims.size() != 3) PetscCall(h5::Close(&f));
  PetscCheck(dims.size() == 3, comm, PETSC_ERR_FILE_UNEXPECTED, "data file %s: /data/tokens is not of shape (M, N, d)",
             s.data.file.c_str());
  *M = (PetscInt)dims[0], *N = (PetscInt)dims[1], *d = (PetscInt)dims[2];
  x->resize((size_t)(*M * *N * *d));
  Range all;
  all.end = *M;
  PetscCall(h5::ReadRows(f, "/data/tokens", dims, 1, all, x->data()));
  PetscCall(ReadWeights(f, s.data.file, *M, *N, w));
  PetscCall(h5::Close(&f));
  PetscFunctionReturn(0);
}

// log (1/N) sum_i exp(<a, x_i>) (or log sum_i w_i exp(<a, x_i>), the
// measure's), with the largest exponent taken out.
static double empirical_lse(const double *x, const double *w, PetscInt N, PetscInt d, const double *a) {
  std::vector<double> e((size_t)N);
  double emax = -INFINITY, sum = 0;
  for (PetscInt i = 0; i < N; ++i) {
    double v = 0;
    for (PetscInt c = 0; c < d; ++c) v += a[c] * x[i * d + c];
    e[i] = v;
    emax = std::fmax(emax, v);
  }
  if (w) {
    for (PetscInt i = 0; i < N; ++i) sum += w[i] * std::exp(e[i] - emax);
    return emax + std::log(sum);
  }
  for (PetscInt i = 0; i < N; ++i) sum += std::exp(e[i] - emax);
  return emax + std::log(sum / (double)N);
}

PetscErrorCode LseTest(MPI_Comm comm, const Settings &s, LseResult *r) {
  PetscMPIInt rank, size;
  std::vector<double> x, w;
  PetscInt M = 0, N = 0, d = 0;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  const bool closed = s.lse.mode == LseMode::closed;
  if (closed) {
    PetscCheck(s.data.file.empty() && family_has_closed_form(s.data.family), comm, PETSC_ERR_USER_INPUT,
               "lse.mode = closed needs a family with a closed form (uniform_cube, laplace, gauss_mix2, gaussian), "
               "not %s", s.data.file.empty() ? s.data.family.c_str() : "a data file");
    const double limit = family_closed_form_radius(s.data);
    PetscCheck(s.lse.radius < limit, comm, PETSC_ERR_USER_INPUT,
               "lse.radius = %g is outside the closed form's domain: %s needs radius < sqrt(2)/data.param_max = %g",
               s.lse.radius, s.data.family.c_str(), limit);
    M = s.data.M, N = s.data.N, d = s.model.d;
  } else {
    PetscCall(AllTokens(comm, s, &x, &w, &M, &N, &d));
  }
  std::vector<SequenceLaw> laws;
  if (closed)
    for (PetscInt m = 0; m < M; ++m) laws.push_back(family_law(s.data, d, m));

  // This rank's points, their design rows [1, a] and their lse values.
  const Range pts = split(s.lse.points, size, rank);
  const PetscInt q = d + 1;
  std::vector<double> A((size_t)(pts.size() * q)), F((size_t)(pts.size() * M)), a((size_t)d);
  for (PetscInt j = pts.begin; j < pts.end; ++j) {
    Stream rs(s.lse.seed, kLsePoint, (std::uint64_t)j);
    double norm = 0;
    for (auto &c : a) {
      c = rs.normal();
      norm += c * c;
    }
    const double scale = s.lse.radius * std::pow(rs.uniform(), 1.0 / (double)d) / std::sqrt(norm);
    double *row = &A[(j - pts.begin) * q];
    row[0] = 1.0;
    for (PetscInt c = 0; c < d; ++c) row[c + 1] = a[c] *= scale;
    for (PetscInt m = 0; m < M; ++m)
      F[(j - pts.begin) * M + m] =
          closed ? family_lse(s.data, laws[m], a.data(), d)
                 : empirical_lse(&x[m * N * d], w.empty() ? nullptr : &w[m * N], N, d, a.data());
  }
  // Least-squares affine part: C = (A^T A)^{-1} A^T F, both sums reduced over ranks.
  std::vector<double> AtA((size_t)(q * q), 0.0), AtF((size_t)(q * M), 0.0);
  for (PetscInt j = 0; j < pts.size(); ++j)
    for (PetscInt u = 0; u < q; ++u) {
      for (PetscInt v = 0; v < q; ++v) AtA[u * q + v] += A[j * q + u] * A[j * q + v];
      for (PetscInt m = 0; m < M; ++m) AtF[u * M + m] += A[j * q + u] * F[j * M + m];
    }
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, AtA.data(), (int)AtA.size(), MPI_DOUBLE, MPI_SUM, comm));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, AtF.data(), (int)AtF.size(), MPI_DOUBLE, MPI_SUM, comm));
  PetscCall(SolveSPD(AtA, q, M, AtF));
  // Residuals and their Gram matrix.
  std::vector<double> G((size_t)(M * M), 0.0), res((size_t)M);
  for (PetscInt j = 0; j < pts.size(); ++j) {
    for (PetscInt m = 0; m < M; ++m) {
      double fit = 0;
      for (PetscInt u = 0; u < q; ++u) fit += A[j * q + u] * AtF[u * M + m];
      res[m] = F[j * M + m] - fit;
    }
    for (PetscInt m = 0; m < M; ++m)
      for (PetscInt n = 0; n < M; ++n) G[m * M + n] += res[m] * res[n];
  }
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, G.data(), (int)G.size(), MPI_DOUBLE, MPI_SUM, comm));
  for (auto &g : G) g /= (double)s.lse.points;
  r->M = M;
  r->gram = G;
  PetscCall(SymmetricEigenvalues(G, M, &r->eigenvalues));
  r->relative_min = r->eigenvalues.back() > 0 ? r->eigenvalues.front() / r->eigenvalues.back() : 0.0;
  PetscFunctionReturn(0);
}

} // namespace mft
