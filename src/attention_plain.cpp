// The plain attention kernels: one query at a time, every score formed, the
// reverse by the chain rule entry by entry. What the blocked kernels
// (attention.cpp) are checked against.
#include "mft/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mft {

namespace {

inline double dot(const double *a, const double *b, PetscInt n) {
  double s = 0;
  for (PetscInt c = 0; c < n; ++c) s += a[c] * b[c];
  return s;
}

// out (rows) = A (rows x cols) v
inline void matvec(const double *A, const double *v, PetscInt rows, PetscInt cols, double *out) {
  for (PetscInt r = 0; r < rows; ++r) out[r] = dot(A + r * cols, v, cols);
}

// out (cols) += alpha A^T (rows x cols) v
inline void matvec_t_add(const double *A, const double *v, PetscInt rows, PetscInt cols, double alpha, double *out) {
  for (PetscInt r = 0; r < rows; ++r) {
    const double vr = alpha * v[r];
    for (PetscInt c = 0; c < cols; ++c) out[c] += A[r * cols + c] * vr;
  }
}

// G (rows x cols) += u v^T
inline void outer_add(double *G, const double *u, const double *v, PetscInt rows, PetscInt cols) {
  for (PetscInt r = 0; r < rows; ++r)
    for (PetscInt c = 0; c < cols; ++c) G[r * cols + c] += u[r] * v[c];
}

// kappa_j = K x_j, w_j = V x_j for j < nk; q_i = Q x_i for i in q.
void project(const HeadShape &s, const double *theta, const double *x, PetscInt nk, Range q, AttentionWork &w) {
  for (PetscInt j = 0; j < nk; ++j) {
    matvec(theta + s.offK, x + j * s.d, s.k, s.d, &w.kappa[j * s.k]);
    matvec(theta + s.offV, x + j * s.d, s.dv, s.d, &w.w[j * s.dv]);
  }
  for (PetscInt i = q.begin; i < q.end; ++i) matvec(theta + s.offQ, x + i * s.d, s.k, s.d, &w.q[(i - q.begin) * s.k]);
}

// The softmax row of query i over keys j < nj (normalised into w.p) and y = sum_j p_j w_j.
void softmax_row(const HeadShape &s, const AttentionOptions &o, const double *qi, PetscInt nj, AttentionWork &w) {
  double amax = -std::numeric_limits<double>::infinity();
  for (PetscInt j = 0; j < nj; ++j) {
    w.p[j] = o.beta * dot(qi, &w.kappa[j * s.k], s.k);
    amax = std::max(amax, w.p[j]);
  }
  double Z = 0;
  for (PetscInt j = 0; j < nj; ++j) Z += (w.p[j] = std::exp(w.p[j] - amax));
  const double invZ = 1.0 / Z;
  std::fill(w.y.begin(), w.y.begin() + s.dv, 0.0);
  for (PetscInt j = 0; j < nj; ++j) {
    const double pj = (w.p[j] *= invZ);
    const double *wj = &w.w[j * s.dv];
    for (PetscInt c = 0; c < s.dv; ++c) w.y[c] += pj * wj[c];
  }
}

} // namespace


void attention_plain(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *x,
                             PetscInt N, Range q, double scale, double *out, AttentionWork &w) {
  project(s, theta, x, key_count(o, N, q), q, w);
  for (PetscInt i = q.begin; i < q.end; ++i) {
    softmax_row(s, o, &w.q[(i - q.begin) * s.k], o.causal ? i + 1 : N, w);
    double *oi = out + (i - q.begin) * s.d;
    if (s.kind == HeadKind::qkv) {
      for (PetscInt c = 0; c < s.d; ++c) oi[c] += scale * w.y[c];
    } else {
      for (PetscInt r = 0; r < s.d; ++r) oi[r] += scale * dot(theta + s.offO + r * s.k, w.y.data(), s.k);
    }
  }
}

void attention_plain_reverse(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *x,
                             PetscInt N, Range q, double scale, const double *lam, double *dx, double *dtheta,
                             AttentionWork &w) {
  const PetscInt nk = key_count(o, N, q);
  project(s, theta, x, nk, q, w);
  std::fill(w.dkappa.begin(), w.dkappa.begin() + nk * s.k, 0.0);
  std::fill(w.dw.begin(), w.dw.begin() + nk * s.dv, 0.0);
  for (PetscInt i = q.begin; i < q.end; ++i) {
    const double *qi = &w.q[(i - q.begin) * s.k];
    const double *li = lam + (i - q.begin) * s.d;
    const PetscInt nj = o.causal ? i + 1 : N;
    softmax_row(s, o, qi, nj, w);
    // dy = A_out^T (scale * lam_i), and for qkvo dO += (scale * lam_i) y^T.
    if (s.kind == HeadKind::qkv) {
      for (PetscInt c = 0; c < s.d; ++c) w.dy[c] = scale * li[c];
    } else {
      std::fill(w.dy.begin(), w.dy.begin() + s.dv, 0.0);
      matvec_t_add(theta + s.offO, li, s.d, s.k, scale, w.dy.data());
      for (PetscInt r = 0; r < s.d; ++r)
        for (PetscInt c = 0; c < s.k; ++c) dtheta[s.offO + r * s.k + c] += scale * li[r] * w.y[c];
    }
    // Softmax reverse: da_j = p_j (dy.w_j - dy.y); a_j = beta q_i.kappa_j.
    const double dyy = dot(w.dy.data(), w.y.data(), s.dv);
    std::fill(w.dq.begin(), w.dq.end(), 0.0);
    for (PetscInt j = 0; j < nj; ++j) {
      const double pj = w.p[j];
      const double *wj = &w.w[j * s.dv];
      const double da = o.beta * pj * (dot(w.dy.data(), wj, s.dv) - dyy);
      const double *kj = &w.kappa[j * s.k];
      double *dkj = &w.dkappa[j * s.k];
      for (PetscInt c = 0; c < s.k; ++c) {
        w.dq[c] += da * kj[c];
        dkj[c] += da * qi[c];
      }
      double *dwj = &w.dw[j * s.dv];
      for (PetscInt c = 0; c < s.dv; ++c) dwj[c] += pj * w.dy[c];
    }
    outer_add(dtheta + s.offQ, w.dq.data(), x + i * s.d, s.k, s.d);
    matvec_t_add(theta + s.offQ, w.dq.data(), s.k, s.d, 1.0, dx + i * s.d);
  }
  // Keys: the mean-field term, every query's contribution to key j at once.
  for (PetscInt j = 0; j < nk; ++j) {
    const double *xj = x + j * s.d;
    outer_add(dtheta + s.offK, &w.dkappa[j * s.k], xj, s.k, s.d);
    matvec_t_add(theta + s.offK, &w.dkappa[j * s.k], s.k, s.d, 1.0, dx + j * s.d);
    outer_add(dtheta + s.offV, &w.dw[j * s.dv], xj, s.dv, s.d);
    matvec_t_add(theta + s.offV, &w.dw[j * s.dv], s.dv, s.d, 1.0, dx + j * s.d);
  }
}

} // namespace mft
