// The plain attention kernels: one query at a time, every score formed, the
// reverse by the chain rule entry by entry. What the blocked kernels
// (attention.cpp) are checked against.
#include "mft/kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mft {

namespace {

inline double dot(const double *a, const double *b, PetscInt n) {
  double shape = 0;
  for (PetscInt c = 0; c < n; ++c) shape += a[c] * b[c];
  return shape;
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
void project(const HeadShape &shape, const double *theta, const double *x, PetscInt nk, Range q, AttentionWork &work) {
  for (PetscInt j = 0; j < nk; ++j) {
    matvec(theta + shape.offK, x + j * shape.d, shape.k, shape.d, &work.kappa[j * shape.k]);
    matvec(theta + shape.offV, x + j * shape.d, shape.dv, shape.d, &work.w[j * shape.dv]);
  }
  for (PetscInt i = q.begin; i < q.end; ++i)
    matvec(theta + shape.offQ, x + i * shape.d, shape.k, shape.d, &work.q[(i - q.begin) * shape.k]);
}

// The softmax row of query i over keys j < nj (normalised into w.p; each
// key's exp times its weight, with weighted keys) and y = sum_j p_j w_j.
void softmax_row(const HeadShape &shape, const AttentionOptions &o, const double *qi, PetscInt nj,
                 AttentionWork &work) {
  double amax = -std::numeric_limits<double>::infinity();
  for (PetscInt j = 0; j < nj; ++j) {
    work.p[j] = o.beta * dot(qi, &work.kappa[j * shape.k], shape.k);
    amax = std::max(amax, work.p[j]);
  }
  double Z = 0;
  for (PetscInt j = 0; j < nj; ++j) Z += (work.p[j] = std::exp(work.p[j] - amax) * (work.weights ? work.weights[j] : 1.0));
  const double invZ = 1.0 / Z;
  std::fill(work.y.begin(), work.y.begin() + shape.dv, 0.0);
  for (PetscInt j = 0; j < nj; ++j) {
    const double pj = (work.p[j] *= invZ);
    const double *wj = &work.w[j * shape.dv];
    for (PetscInt c = 0; c < shape.dv; ++c) work.y[c] += pj * wj[c];
  }
}

} // namespace

void attention_plain(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *x,
                     PetscInt N, Range q, double scale, double *out, AttentionWork &work) {
  project(shape, theta, x, key_count(o, N, q), q, work);
  for (PetscInt i = q.begin; i < q.end; ++i) {
    softmax_row(shape, o, &work.q[(i - q.begin) * shape.k], o.causal ? i + 1 : N, work);
    double *oi = out + (i - q.begin) * shape.d;
    if (shape.kind == HeadKind::qkv) {
      for (PetscInt c = 0; c < shape.d; ++c) oi[c] += scale * work.y[c];
    } else {
      for (PetscInt r = 0; r < shape.d; ++r)
        oi[r] += scale * dot(theta + shape.offO + r * shape.k, work.y.data(), shape.k);
    }
  }
}

void attention_plain_reverse(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *x,
                             PetscInt N, Range q, double scale, const double *lam, double *dx, double *dtheta,
                             AttentionWork &work) {
  const PetscInt nk = key_count(o, N, q);
  project(shape, theta, x, nk, q, work);
  std::fill(work.dkappa.begin(), work.dkappa.begin() + nk * shape.k, 0.0);
  std::fill(work.dw.begin(), work.dw.begin() + nk * shape.dv, 0.0);
  for (PetscInt i = q.begin; i < q.end; ++i) {
    const double *qi = &work.q[(i - q.begin) * shape.k];
    const double *li = lam + (i - q.begin) * shape.d;
    const PetscInt nj = o.causal ? i + 1 : N;
    softmax_row(shape, o, qi, nj, work);
    // dy = A_out^T (scale * lam_i), and for qkvo dO += (scale * lam_i) y^T.
    if (shape.kind == HeadKind::qkv) {
      for (PetscInt c = 0; c < shape.d; ++c) work.dy[c] = scale * li[c];
    } else {
      std::fill(work.dy.begin(), work.dy.begin() + shape.dv, 0.0);
      matvec_t_add(theta + shape.offO, li, shape.d, shape.k, scale, work.dy.data());
      for (PetscInt r = 0; r < shape.d; ++r)
        for (PetscInt c = 0; c < shape.k; ++c) dtheta[shape.offO + r * shape.k + c] += scale * li[r] * work.y[c];
    }
    // Softmax reverse: da_j = p_j (dy.w_j - dy.y); a_j = beta q_i.kappa_j;
    // a weighted key's weight: p_j / weight_j (dy.w_j - dy.y).
    const double dyy = dot(work.dy.data(), work.y.data(), shape.dv);
    std::fill(work.dq.begin(), work.dq.end(), 0.0);
    for (PetscInt j = 0; j < nj; ++j) {
      const double pj = work.p[j];
      const double *wj = &work.w[j * shape.dv];
      const double dp = dot(work.dy.data(), wj, shape.dv) - dyy;
      const double da = o.beta * pj * dp;
      if (work.weight_grad) work.weight_grad[j] += pj / work.weights[j] * dp;
      const double *kj = &work.kappa[j * shape.k];
      double *dkj = &work.dkappa[j * shape.k];
      for (PetscInt c = 0; c < shape.k; ++c) {
        work.dq[c] += da * kj[c];
        dkj[c] += da * qi[c];
      }
      double *dwj = &work.dw[j * shape.dv];
      for (PetscInt c = 0; c < shape.dv; ++c) dwj[c] += pj * work.dy[c];
    }
    outer_add(dtheta + shape.offQ, work.dq.data(), x + i * shape.d, shape.k, shape.d);
    matvec_t_add(theta + shape.offQ, work.dq.data(), shape.k, shape.d, 1.0, dx + i * shape.d);
  }
  // Keys: the mean-field term, every query's contribution to key j at once.
  for (PetscInt j = 0; j < nk; ++j) {
    const double *xj = x + j * shape.d;
    outer_add(dtheta + shape.offK, &work.dkappa[j * shape.k], xj, shape.k, shape.d);
    matvec_t_add(theta + shape.offK, &work.dkappa[j * shape.k], shape.k, shape.d, 1.0, dx + j * shape.d);
    outer_add(dtheta + shape.offV, &work.dw[j * shape.dv], xj, shape.dv, shape.d);
    matvec_t_add(theta + shape.offV, &work.dw[j * shape.dv], shape.dv, shape.d, 1.0, dx + j * shape.d);
  }
}

} // namespace mft
