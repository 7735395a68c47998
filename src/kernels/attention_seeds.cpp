// The lanes kernels (attention_seeds.hpp): attention_plain's arithmetic with
// every number a vector of kLanes models' numbers.
#include "mft/kernels/attention_seeds.hpp"

#include "mft/kernels/softmax.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace mft {

namespace {

constexpr PetscInt W = kLanes;

// A vector of the lanes' numbers (GCC's vector extension: one AVX-512
// register, two AVX2 ones, ...); loaded and stored without alignment.
typedef double V __attribute__((vector_size(W * sizeof(double))));
static_assert(W == 8, "exponentials_shifted takes rows of 8 lanes");

inline V load(const double *p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(double *p, V v) { std::memcpy(p, &v, sizeof v); }
inline V splat(double a) { return V{} + a; }

// Lanes arrays of shape (rows x cols): element (r, c) at (r cols + c) W.
inline const double *at(const double *a, PetscInt e) { return a + e * W; }
inline double *at(double *a, PetscInt e) { return a + e * W; }

// A head's dimensions, each fixed at compile time where it is not 0: the
// small shapes the studies use get loops the compiler unrolls, their sums in
// registers (instantiated in Dispatch below); any other shape runs the same
// code with the shape's own numbers.
template <int D, int K, int DV> struct Dims {
  static constexpr int fixed_d = D, fixed_k = K, fixed_dv = DV;
  PetscInt d_, k_, dv_;
  explicit Dims(const HeadShape &s) : d_(s.d), k_(s.k), dv_(s.dv) {}
  PetscInt d() const { return D ? D : d_; }
  PetscInt k() const { return K ? K : k_; }
  PetscInt dv() const { return DV ? DV : dv_; }
};

// out (rows) = A (rows x cols) v
inline void matvec(const double *__restrict A, const double *__restrict v, PetscInt rows, PetscInt cols,
                   double *__restrict out) {
  for (PetscInt r = 0; r < rows; ++r) {
    V s{};
    for (PetscInt c = 0; c < cols; ++c) s += load(at(A, r * cols + c)) * load(at(v, c));
    store(at(out, r), s);
  }
}

// out (cols) += A^T (rows x cols) v (each entry summed in a register: a sum
// through memory would wait for its own store at every term)
inline void matvec_t_add(const double *__restrict A, const double *__restrict v, PetscInt rows, PetscInt cols,
                         double *__restrict out) {
  for (PetscInt c = 0; c < cols; ++c) {
    V s = load(at(out, c));
    for (PetscInt r = 0; r < rows; ++r) s += load(at(A, r * cols + c)) * load(at(v, r));
    store(at(out, c), s);
  }
}

// G (rows x cols) += u v^T
inline void outer_add(double *__restrict G, const double *__restrict u, const double *__restrict v, PetscInt rows,
                      PetscInt cols) {
  for (PetscInt r = 0; r < rows; ++r) {
    const V ur = load(at(u, r));
    for (PetscInt c = 0; c < cols; ++c) store(at(G, r * cols + c), load(at(G, r * cols + c)) + ur * load(at(v, c)));
  }
}

// out[c] = sum_j a[j] B[j ld + c], j < nj, for c < n (NC: n when fixed at
// compile time, else 0). With NC, j runs outside and every c's sum stays in
// a register of its own, so that the sums' chains interleave; one sum after
// another, each waits on its own latency at every term.
template <int NC>
inline void weighted_rows(const double *__restrict a, const double *__restrict B, PetscInt nj, PetscInt ld, PetscInt n,
                          double *__restrict out) {
  if constexpr (NC > 0) {
    V acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = V{};
    for (PetscInt j = 0; j < nj; ++j) {
      const V aj = load(at(a, j));
      for (int c = 0; c < NC; ++c) acc[c] += aj * load(at(B, j * ld + c));
    }
    for (int c = 0; c < NC; ++c) store(at(out, c), acc[c]);
  } else {
    for (PetscInt c = 0; c < n; ++c) {
      V s{};
      for (PetscInt j = 0; j < nj; ++j) s += load(at(a, j)) * load(at(B, j * ld + c));
      store(at(out, c), s);
    }
  }
}

inline V dot(const double *__restrict a, const double *__restrict b, PetscInt n) {
  V s{};
  for (PetscInt c = 0; c < n; ++c) s += load(at(a, c)) * load(at(b, c));
  return s;
}

// Where a call's projections and softmax row are (the work's scratch).
struct Rows {
  double *q, *kappa, *w, *p, *y;
};

// out (rows) = A (rows x NC) v, v's NC entries in registers (loaded once for every row).
template <int NC>
inline void matvec_fixed(const double *__restrict A, const V *v, PetscInt rows, double *__restrict out) {
  for (PetscInt r = 0; r < rows; ++r) {
    V s{};
    for (int c = 0; c < NC; ++c) s += load(at(A, r * NC + c)) * v[c];
    store(at(out, r), s);
  }
}

// kappa_j = K x_j, w_j = V x_j, q_j = Q x_j for every token j.
template <class Dm>
void project(const Dm &m, const HeadShape &sh, const double *theta, const double *x, PetscInt N, const Rows &r) {
  if constexpr (Dm::fixed_d > 0) {
    constexpr int D = Dm::fixed_d;
    for (PetscInt j = 0; j < N; ++j) {
      V xj[D];
      for (int c = 0; c < D; ++c) xj[c] = load(at(x, j * D + c));
      matvec_fixed<D>(at(theta, sh.offQ), xj, m.k(), at(r.q, j * m.k()));
      matvec_fixed<D>(at(theta, sh.offK), xj, m.k(), at(r.kappa, j * m.k()));
      matvec_fixed<D>(at(theta, sh.offV), xj, m.dv(), at(r.w, j * m.dv()));
    }
    return;
  }
  for (PetscInt j = 0; j < N; ++j) {
    const double *xj = at(x, j * m.d());
    matvec(at(theta, sh.offQ), xj, m.k(), m.d(), at(r.q, j * m.k()));
    matvec(at(theta, sh.offK), xj, m.k(), m.d(), at(r.kappa, j * m.k()));
    matvec(at(theta, sh.offV), xj, m.dv(), m.d(), at(r.w, j * m.dv()));
  }
}

// Query i's softmax row over keys j < nj: each key's exp (times its
// weight) into p, unnormalised, y = sum_j p_j w_j / Z; returns 1 / Z (the
// row's P is p / Z).
template <class Dm>
V softmax_row(const Dm &m, const AttentionOptions &o, PetscInt i, PetscInt nj, const double *weights,
              const double *__restrict kappa, const double *__restrict w, const double *__restrict qi,
              double *__restrict p, double *__restrict y) {
  V amax = splat(-std::numeric_limits<double>::infinity());
  const V beta = splat(o.beta);
  for (PetscInt j = 0; j < nj; ++j) {
    const V a = beta * dot(qi, at(kappa, j * m.k()), m.k());
    store(at(p, j), a);
    amax = a > amax ? a : amax;
  }
  double shift[W];
  store(shift, amax);
  exponentials_shifted(p, nj, shift);
  V Z{};
  for (PetscInt j = 0; j < nj; ++j) {
    V e = load(at(p, j));
    if (weights) store(at(p, j), e *= splat(weights[j]));
    Z += e;
  }
  const V invZ = splat(1.0) / Z;
  weighted_rows<Dm::fixed_dv>(p, w, nj, m.dv(), m.dv(), y);
  for (PetscInt c = 0; c < m.dv(); ++c) store(at(y, c), load(at(y, c)) * invZ);
  return invZ;
}

template <class Dm>
V softmax_row(const Dm &m, const AttentionOptions &o, PetscInt i, PetscInt nj, const double *weights, const Rows &r) {
  return softmax_row(m, o, i, nj, weights, r.kappa, r.w, at(r.q, i * m.k()), r.p, r.y);
}

template <class Dm>
void forward(const Dm &m, const HeadShape &sh, const double *theta, const AttentionOptions &o, const double *x,
             PetscInt N, double scale, const double *weights, double *out, SeedsWork &work) {
  const Rows r{work.q.data(), work.kappa.data(), work.w.data(), work.p.data(), work.y.data()};
  project(m, sh, theta, x, N, r);
  const V sc = splat(scale);
  for (PetscInt i = 0; i < N; ++i) {
    softmax_row(m, o, i, o.causal ? i + 1 : N, weights, r);
    const double *__restrict y = r.y;
    double *__restrict oi = at(out, i * m.d());
    if (sh.kind == HeadKind::qkv) {
      for (PetscInt c = 0; c < m.d(); ++c) store(at(oi, c), load(at(oi, c)) + sc * load(at(y, c)));
    } else {
      for (PetscInt rr = 0; rr < m.d(); ++rr)
        store(at(oi, rr), load(at(oi, rr)) + sc * dot(at(theta, sh.offO + rr * m.k()), y, m.k()));
    }
  }
}

// Query i's reverse from its row p and output y: dy = A_out^T (scale lam_i)
// (for qkvo dO += (scale lam_i) y^T); da_j = beta p_j (dy.w_j - dy.y), a
// weighted key's weight p_j / weight_j (dy.w_j - dy.y); the keys' dkappa_j,
// dw_j and the query's dq.
template <class Dm>
void reverse_row(const Dm &m, const HeadShape &sh, const double *__restrict theta, const AttentionOptions &o,
                 PetscInt nj, const double *weights, const double *__restrict li, V sc, const double *__restrict y,
                 const double *__restrict p, V invZ, const double *__restrict kappa, const double *__restrict w,
                 const double *__restrict qi, double *dtheta, double *weight_grad, SeedsWork &work) {
  double *__restrict dy = work.dy.data(), *__restrict da = work.da.data(), *__restrict dq = work.dq.data();
  double *__restrict dkappa = work.dkappa.data(), *__restrict dw = work.dw.data();
  if (sh.kind == HeadKind::qkv) {
    for (PetscInt c = 0; c < m.d(); ++c) store(at(dy, c), sc * load(at(li, c)));
  } else {
    for (PetscInt c = 0; c < m.k(); ++c) {
      V s{};
      for (PetscInt r = 0; r < m.d(); ++r) s += load(at(theta, sh.offO + r * m.k() + c)) * (sc * load(at(li, r)));
      store(at(dy, c), s);
    }
    for (PetscInt r = 0; r < m.d(); ++r) { // dO += (scale lam_i) y^T
      const V lr = sc * load(at(li, r));
      for (PetscInt c = 0; c < m.k(); ++c) {
        double *g = at(dtheta, sh.offO + r * m.k() + c);
        store(g, load(g) + lr * load(at(y, c)));
      }
    }
  }
  const V dyy = dot(dy, y, m.dv()), beta = splat(o.beta);
  for (PetscInt j = 0; j < nj; ++j) {
    const V pj = load(at(p, j)) * invZ;
    const V dp = dot(dy, at(w, j * m.dv()), m.dv()) - dyy;
    const V daj = beta * pj * dp;
    store(at(da, j), daj);
    if (weight_grad) store(at(weight_grad, j), load(at(weight_grad, j)) + pj / splat(weights[j]) * dp);
    for (PetscInt c = 0; c < m.k(); ++c)
      store(at(dkappa, j * m.k() + c), load(at(dkappa, j * m.k() + c)) + daj * load(at(qi, c)));
    for (PetscInt c = 0; c < m.dv(); ++c)
      store(at(dw, j * m.dv() + c), load(at(dw, j * m.dv() + c)) + pj * load(at(dy, c)));
  }
  weighted_rows<Dm::fixed_k>(da, kappa, nj, m.k(), m.k(), dq);
}

template <class Dm>
void reverse(const Dm &m, const HeadShape &sh, const double *theta, const AttentionOptions &o, const double *x,
             PetscInt N, double scale, const double *weights, const double *lam, double *dx, double *dtheta,
             double *weight_grad, SeedsWork &work) {
  const Rows r{work.q.data(), work.kappa.data(), work.w.data(), work.p.data(), work.y.data()};
  project(m, sh, theta, x, N, r);
  std::fill(work.dkappa.begin(), work.dkappa.begin() + N * m.k() * W, 0.0);
  std::fill(work.dw.begin(), work.dw.begin() + N * m.dv() * W, 0.0);
  for (PetscInt i = 0; i < N; ++i) {
    const PetscInt nj = o.causal ? i + 1 : N;
    const V invZ = softmax_row(m, o, i, nj, weights, r);
    reverse_row(m, sh, theta, o, nj, weights, at(lam, i * m.d()), splat(scale), r.y, r.p, invZ,
                r.kappa, r.w, at(r.q, i * m.k()), dtheta, weight_grad, work);
    outer_add(at(dtheta, sh.offQ), work.dq.data(), at(x, i * m.d()), m.k(), m.d());
    matvec_t_add(at(theta, sh.offQ), work.dq.data(), m.k(), m.d(), at(dx, i * m.d()));
  }
  // Keys: the mean-field term, every query's contribution to key j at once.
  for (PetscInt j = 0; j < N; ++j) {
    const double *xj = at(x, j * m.d());
    outer_add(at(dtheta, sh.offK), at(work.dkappa.data(), j * m.k()), xj, m.k(), m.d());
    matvec_t_add(at(theta, sh.offK), at(work.dkappa.data(), j * m.k()), m.k(), m.d(), at(dx, j * m.d()));
    outer_add(at(dtheta, sh.offV), at(work.dw.data(), j * m.dv()), xj, m.dv(), m.d());
    matvec_t_add(at(theta, sh.offV), at(work.dw.data(), j * m.dv()), m.dv(), m.d(), at(dx, j * m.d()));
  }
}

// Runs f(dims) with the head's dimensions fixed at compile time for the
// shapes instantiated here (d = 4 with k = 1 .. 16, qkv and qkvo; d = 8, 16
// with k = d or 2), at run time for the others.
template <class F> void Dispatch(const HeadShape &s, F f) {
  const bool qkv = s.kind == HeadKind::qkv;
#define MFT_DIMS(D, K)                                                                                                 \
  if (s.d == D && s.k == K) return qkv ? f(Dims<D, K, D>(s)) : f(Dims<D, K, K>(s));
  MFT_DIMS(4, 1) MFT_DIMS(4, 2) MFT_DIMS(4, 4) MFT_DIMS(4, 8) MFT_DIMS(4, 16)
  MFT_DIMS(8, 2) MFT_DIMS(8, 8) MFT_DIMS(16, 2) MFT_DIMS(16, 16)
#undef MFT_DIMS
  f(Dims<0, 0, 0>(s));
}

} // namespace

void SeedsWork::reserve(const HeadShape &shape, PetscInt N) {
  const size_t n = (size_t)N * W;
  q.assign(n * (size_t)shape.k, 0.0), kappa.assign(q.size(), 0.0), dkappa.assign(q.size(), 0.0);
  w.assign(n * (size_t)shape.dv, 0.0), dw.assign(w.size(), 0.0);
  p.assign(n, 0.0), da.assign(n, 0.0);
  y.assign((size_t)(shape.dv * W), 0.0), dy.assign(y.size(), 0.0), dq.assign((size_t)(shape.k * W), 0.0);
}

void attention_seeds(const HeadShape &sh, const double *theta, const AttentionOptions &o, const double *x, PetscInt N,
                     double scale, const double *weights, double *out, SeedsWork &work) {
  Dispatch(sh, [&](const auto &m) { forward(m, sh, theta, o, x, N, scale, weights, out, work); });
}

void attention_seeds_reverse(const HeadShape &sh, const double *theta, const AttentionOptions &o, const double *x,
                             PetscInt N, double scale, const double *weights, const double *lam, double *dx,
                             double *dtheta, double *weight_grad, SeedsWork &work) {
  Dispatch(sh, [&](const auto &m) {
    reverse(m, sh, theta, o, x, N, scale, weights, lam, dx, dtheta, weight_grad, work);
  });
}

void lanes_gather(const double *const *src, PetscInt n, double *dst) {
  static const double zeros[1] = {0.0};
  const double *from[W];
  PetscInt step[W];
  for (PetscInt w = 0; w < W; ++w) from[w] = src[w] ? src[w] : zeros, step[w] = src[w] ? 1 : 0;
  for (PetscInt e = 0; e < n; ++e) // row by row: each entry's lanes written together
    for (PetscInt w = 0; w < W; ++w) dst[e * W + w] = from[w][e * step[w]];
}

void lanes_scatter(const double *src, PetscInt n, double *const *dst, bool add) {
  for (PetscInt w = 0; w < W; ++w) {
    if (!dst[w]) continue;
    if (add)
      for (PetscInt e = 0; e < n; ++e) dst[w][e] += src[e * W + w];
    else
      for (PetscInt e = 0; e < n; ++e) dst[w][e] = src[e * W + w];
  }
}

} // namespace mft
