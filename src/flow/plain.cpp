// The plain forward pass: full attention matrices, a loop over layers.
#include "mft/flow/plain.hpp"

#include <cmath>

namespace mft {

// Each token of x scaled to norm `norm`.
static void unit_tokens(std::vector<double> &x, PetscInt d, double norm) {
  for (size_t o = 0; o < x.size(); o += (size_t)d) {
    double r = 0;
    for (PetscInt c = 0; c < d; ++c) r += x[o + c] * x[o + c];
    for (PetscInt c = 0; c < d; ++c) x[o + c] *= norm / std::sqrt(r);
  }
}

std::vector<double> plain_read(const ModelSettings &m, const std::vector<double> &x) {
  std::vector<double> read(x);
  if (m.norm == TokenNorm::pre) unit_tokens(read, m.d, std::sqrt((double)m.d));
  return read;
}

void plain_attention(const ModelSettings &m, const double *th, const double *xs, PetscInt N, const double *w,
                     double *P) {
  const HeadShape shape = head_shape(m.head_kind, m.d, m.k);
  const PetscInt d = m.d;
  const double *Q = th + shape.offQ, *K = th + shape.offK;
  std::vector<double> B(d * d);
  for (PetscInt r = 0; r < d; ++r)
    for (PetscInt c = 0; c < d; ++c) {
      double b = 0;
      for (PetscInt q = 0; q < m.k; ++q) b += Q[q * d + r] * K[q * d + c];
      B[r * d + c] = LogitScale(m) * b;
    }
  // The key's mass: its weight (a measure), or 1 (the unweighted sequence).
  auto mass = [&](PetscInt j) { return w ? w[j] : 1.0; };
  for (PetscInt i = 0; i < N; ++i) {
    const PetscInt nj = m.causal ? i + 1 : N;
    double *a = P + i * N, amax = -INFINITY, Z = 0;
    for (PetscInt j = 0; j < nj; ++j) {
      double e = 0;
      for (PetscInt r = 0; r < d; ++r)
        for (PetscInt c = 0; c < d; ++c) e += xs[i * d + r] * B[r * d + c] * xs[j * d + c];
      a[j] = e;
      amax = std::fmax(amax, e);
    }
    for (PetscInt j = 0; j < nj; ++j) Z += mass(j) * std::exp(a[j] - amax);
    for (PetscInt j = 0; j < nj; ++j) a[j] = mass(j) * std::exp(a[j] - amax) / Z;
    for (PetscInt j = nj; j < N; ++j) a[j] = 0;
  }
}

void plain_forward(const ModelSettings &m, const std::vector<double> &theta, PetscInt M, PetscInt N,
                   std::vector<double> &x, const std::vector<double> &weights,
                   const std::function<void(PetscInt, std::vector<double> &)> &after_layer) {
  const HeadShape shape = head_shape(m.head_kind, m.d, m.k);
  const PetscInt d = m.d;
  std::vector<double> A(d * d), P(N * N), v(M * N * d);
  if (m.norm == TokenNorm::sphere) unit_tokens(x, d, 1.0); // the input on the sphere
  for (PetscInt l = 0; l < m.L; ++l) {
    std::fill(v.begin(), v.end(), 0.0);
    const std::vector<double> read = plain_read(m, x);
    for (PetscInt h = 0; h < m.H; ++h) {
      const double *th = theta.data() + (l * m.H + h) * shape.size;
      const double *V = th + shape.offV, *O = th + shape.offO;
      for (PetscInt r = 0; r < d; ++r)
        for (PetscInt c = 0; c < d; ++c) {
          double av = 0;
          if (m.head_kind == HeadKind::qkv) av = V[r * d + c];
          else
            for (PetscInt q = 0; q < m.k; ++q) av += O[r * m.k + q] * V[q * d + c];
          A[r * d + c] = av;
        }
      for (PetscInt seq = 0; seq < M; ++seq) {
        const double *xs = read.data() + seq * N * d;
        plain_attention(m, th, xs, N, weights.empty() ? nullptr : weights.data() + seq * N, P.data());
        for (PetscInt i = 0; i < N; ++i) {
          std::vector<double> mi(d, 0.0);
          for (PetscInt j = 0; j < N; ++j)
            for (PetscInt c = 0; c < d; ++c) mi[c] += P[i * N + j] * xs[j * d + c];
          for (PetscInt r = 0; r < d; ++r) {
            double am = 0;
            for (PetscInt c = 0; c < d; ++c) am += A[r * d + c] * mi[c];
            v[(seq * N + i) * d + r] += am / (double)m.H;
          }
        }
      }
    }
    if (m.norm != TokenNorm::sphere) {
      for (size_t e = 0; e < x.size(); ++e) x[e] += v[e] / (double)m.L;
      if (after_layer) after_layer(l, x);
      continue;
    }
    for (size_t o = 0; o < x.size(); o += d) { // x + (1/L) P_x v, retracted
      double xv = 0;
      for (PetscInt c = 0; c < d; ++c) xv += x[o + c] * v[o + c];
      for (PetscInt c = 0; c < d; ++c) x[o + c] += (v[o + c] - x[o + c] * xv) / (double)m.L;
    }
    unit_tokens(x, d, 1.0);
    if (after_layer) after_layer(l, x);
  }
}

} // namespace mft
