// Attention kernels: streaming softmax rows, one head, one sequence.
#include "mft/attention.hpp"

#include "mft/linalg.hpp"

#if defined(__AVX2__)
#include <immintrin.h>
#endif
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() and warn that
// it "may be used uninitialized" (or "is used uninitialized") wherever they are
// inlined (GCC bug 105593, fixed in GCC 13): a false positive in the
// compiler's own header.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

namespace mft {

PetscInt AttentionWork::rows(PetscInt nk) const {
  const double keys = (double)(nk > keys_at_once ? key_tile : nk);
  PetscInt b = block;
  while (b > block / 4 && 8.0 * (double)b * keys > kScoreBytes) b /= 2;
  return b;
}

void AttentionWork::reserve(const HeadShape &s, PetscInt N) {
  const size_t B = (size_t)std::min(block, N), T = (size_t)std::min(std::max(keys_at_once, key_tile), N);
  const size_t n = (size_t)N, d = (size_t)s.d, k = (size_t)s.k, dv = (size_t)s.dv; // 64-bit products
  const std::pair<Scratch *, size_t> arrays[] = {
      {&q, n * k},     {&kappa, n * k}, {&w, n * dv},    {&p, B * T},      {&dp, B * T},
      {&m, B},         {&l, B},         {&delta, B},     {&y, B * dv},     {&dy, B * dv},
      {&dyl, B * dv},  {&dq, k},        {&dqs, n * k},   {&dkappa, n * k}, {&dw, n * dv},
      {&qt, d * k},    {&kt, d * k},    {&vt, d * dv},   {&kappat, n * k}, {&wt, n * dv}};
  constexpr size_t line = 64 / sizeof(double);
  const auto lines = [](size_t count) { return (count + line - 1) / line * line; };
  size_t total = line; // room to align the first
  for (const auto &[a, count] : arrays) total += lines(count);
  space.assign(total, 0.0);
  double *at = space.data() + (line - reinterpret_cast<std::uintptr_t>(space.data()) / sizeof(double) % line) % line;
  for (const auto &[a, count] : arrays) {
    a->ptr = at, a->n = count;
    at += lines(count);
  }
}

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

// Keys a query range needs: all N, or with the causal mask those up to the last query.
inline PetscInt key_count(const AttentionOptions &o, PetscInt N, Range q) { return o.causal ? q.end : N; }

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

void attention_forward_plain(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *x,
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

void attention_reverse_plain(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *x,
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

// ---------------------------------------------------------------------------
// Fast kernels: query blocks against their keys, BLAS-3, vectorised exp.

namespace {

#if defined(__AVX2__)
// The vector exps' constants (below, AVX-512 and AVX2 alike): 1 / ln 2 and
// 16 / ln 2; ln 2 split into a 32-bit head and its remainder (and both / 16);
// the Horner coefficients of q(r) / r ~ 1 + r/2 + ... + r^5/6!, q(r) ~ e^r - 1
// of degree 6 on |r| <= ln(2)/32: a near-minimax fit (mpmath's chebyfit at 50
// digits, then rounded to doubles), 1.4e-17 relative error in 1 + q(r) there,
// where the Taylor polynomial of the same degree is 4.4e-16 off.
constexpr double kInverseLn2 = 1.4426950408889634, kSixteenOverLn2 = 16 * kInverseLn2;
constexpr double kLn2Head = 6.93147180369123816490e-01, kLn2Tail = 1.90821492927058770002e-10;
constexpr double kLn2Over16Head = kLn2Head / 16, kLn2Over16Tail = kLn2Tail / 16;
constexpr double kExpLeading = 0.0013889063440655327;
constexpr double kExpCoefficients[] = {0.008333472974951229, 0.041666666663595475, 0.16666666664209706,
                                       0.5000000000000001, 1.0000000000000007};
// 2^(j/16), j = 0..15, correctly rounded (checked against 60-digit decimals).
alignas(64) const double kPowersOfTwo[16] = {
    1.0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0, 0x1.306fe0a31b715p+0,
    0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0, 0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0,
    0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f09p+0, 0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0,
    0x1.ea4afa2a490dap+0};
#endif

#if defined(__AVX512F__)
// exp(x) of 8 arguments x <= 0 (the softmax's), within 1.5 ulp where exp(x)
// > 1e-300: x = (16 n + j) ln2 / 16 + r with m = 16 n + j = round(16 x /
// ln 2) and |r| <= ln(2)/32; exp(x) = 2^n (T_j + T_j q(r)) with T_j =
// 2^(j/16) from a 16-entry table in two registers (one permute) and q(r) ~
// e^r - 1 of degree 6 (above). m is kept as m / 16 = x / ln 2 rounded to
// four bits after the point (one roundscale), so that r = x - (m / 16) ln 2
// takes two FMA steps (the head's product is exact), 2^n is scalef's own
// floor(m / 16), and j = m mod 16 is the low bits of m / 16 + 1.5 2^48,
// whose last place is 1/16 (an addition, not a conversion). Arguments below
// -708 give exp(-708) ~ 3e-308 (their share of a softmax row is zero to
// round-off). Measured: tests/bench/roofline.sh.
inline __m512d exp_nonpositive(__m512d x) {
  x = _mm512_max_pd(x, _mm512_set1_pd(-708.0));
  const __m512d m16 = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(kInverseLn2)),
                                           (4 << 4) | _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512d r = _mm512_fnmadd_pd(m16, _mm512_set1_pd(kLn2Head), x);
  r = _mm512_fnmadd_pd(m16, _mm512_set1_pd(kLn2Tail), r);
  const __m512i j = _mm512_castpd_si512(_mm512_add_pd(m16, _mm512_set1_pd(0x1.8p48)));
  const __m512d T = _mm512_permutex2var_pd(_mm512_load_pd(kPowersOfTwo), j, _mm512_load_pd(kPowersOfTwo + 8));
  __m512d p = _mm512_set1_pd(kExpLeading);
  for (double c : kExpCoefficients) p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(c));
  const __m512d e = _mm512_fmadd_pd(T, _mm512_mul_pd(p, r), T); // T (1 + q)
  return _mm512_scalef_pd(e, m16);
}
#elif defined(__AVX2__) && defined(__FMA__)
// The same exp on 4 arguments with AVX2 and FMA: m as a 64-bit integer from
// the bits of m + 1.5 2^52, T_j by a gather from the table, and 2^n built in
// the exponent bits ((m - j) 2^48 = n 2^52, as m - j = 16 n).
inline __m256d exp_nonpositive(__m256d x) {
  x = _mm256_max_pd(x, _mm256_set1_pd(-708.0));
  const __m256d m = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(kSixteenOverLn2)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256d r = _mm256_fnmadd_pd(m, _mm256_set1_pd(kLn2Over16Head), x);
  r = _mm256_fnmadd_pd(m, _mm256_set1_pd(kLn2Over16Tail), r);
  const __m256d shifter = _mm256_set1_pd(6755399441055744.0); // 1.5 2^52
  const __m256i mi = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(m, shifter)), _mm256_castpd_si256(shifter));
  const __m256i j = _mm256_and_si256(mi, _mm256_set1_epi64x(15));
  const __m256d T = _mm256_i64gather_pd(kPowersOfTwo, j, 8);
  __m256d p = _mm256_set1_pd(kExpLeading);
  for (double c : kExpCoefficients) p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(c));
  const __m256d e = _mm256_fmadd_pd(T, _mm256_mul_pd(p, r), T); // T (1 + q)
  const __m256i two_n =
      _mm256_add_epi64(_mm256_slli_epi64(_mm256_sub_epi64(mi, j), 48), _mm256_set1_epi64x(1023LL << 52));
  return _mm256_mul_pd(e, _mm256_castsi256_pd(two_n));
}
#endif

// The softmax's row operations, with AVX-512 (8 wide, exp_nonpositive), with
// AVX2 and FMA (4 wide, exp_nonpositive), or plain. The scores arrive unscaled:
// beta >= 0 is applied after the maximum is subtracted (max of beta S = beta max S).

// max_j row[j], j < n (-infinity when n = 0). Four running maxima (a
// maximum's latency, not the loads, bounded one), exact in any order.
double row_max(const double *row, PetscInt n) {
  double mx = -std::numeric_limits<double>::infinity();
  PetscInt j = 0;
#if defined(__AVX512F__)
  __m512d v0 = _mm512_set1_pd(mx), v1 = v0, v2 = v0, v3 = v0;
  for (; j + 32 <= n; j += 32) {
    v0 = _mm512_max_pd(v0, _mm512_loadu_pd(row + j));
    v1 = _mm512_max_pd(v1, _mm512_loadu_pd(row + j + 8));
    v2 = _mm512_max_pd(v2, _mm512_loadu_pd(row + j + 16));
    v3 = _mm512_max_pd(v3, _mm512_loadu_pd(row + j + 24));
  }
  for (; j + 8 <= n; j += 8) v0 = _mm512_max_pd(v0, _mm512_loadu_pd(row + j));
  mx = _mm512_reduce_max_pd(_mm512_max_pd(_mm512_max_pd(v0, v1), _mm512_max_pd(v2, v3)));
#elif defined(__AVX2__) && defined(__FMA__)
  __m256d v0 = _mm256_set1_pd(mx), v1 = v0, v2 = v0, v3 = v0;
  for (; j + 16 <= n; j += 16) {
    v0 = _mm256_max_pd(v0, _mm256_loadu_pd(row + j));
    v1 = _mm256_max_pd(v1, _mm256_loadu_pd(row + j + 4));
    v2 = _mm256_max_pd(v2, _mm256_loadu_pd(row + j + 8));
    v3 = _mm256_max_pd(v3, _mm256_loadu_pd(row + j + 12));
  }
  for (; j + 4 <= n; j += 4) v0 = _mm256_max_pd(v0, _mm256_loadu_pd(row + j));
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_max_pd(_mm256_max_pd(v0, v1), _mm256_max_pd(v2, v3)));
  for (double v : lanes) mx = std::max(mx, v);
#endif
  for (; j < n; ++j) mx = std::max(mx, row[j]);
  return mx;
}

// row[j] <- exp(beta (row[j] - shift)) for j < n (arguments <= 0); returns
// their sum (two running sums of vectors, then the rest in order). `scaled`:
// beta != 1 (at beta = 1 the product is skipped: the same numbers, one
// multiplication an entry less). What the pass does besides with each new
// entry e_j (Along): nothing; *dot <- sum_j e_j with[j], summed as row_dot
// sums (one running sum of vectors in order, then the rest): the reverse's
// delta in the same pass; or with[j] <- (f e_j) (with[j] - c), the reverse's
// dS in place of dP, as softmax_reverse_rows makes it (bitwise).
enum class Along { nothing, dot, softmax_reverse };
template <bool scaled, Along along>
double row_exp_at(double *row, PetscInt n, double beta, double shift, double *with, double f, double c, double *dot) {
  double Z = 0, D = 0;
  PetscInt j = 0;
#if defined(__AVX512F__)
  const __m512d sh = _mm512_set1_pd(shift), sc = _mm512_set1_pd(beta), vf = _mm512_set1_pd(f), vc = _mm512_set1_pd(c);
  __m512d d = _mm512_setzero_pd();
  auto at = [&](PetscInt i) {
    const __m512d a = _mm512_sub_pd(_mm512_loadu_pd(row + i), sh);
    const __m512d e = exp_nonpositive(scaled ? _mm512_mul_pd(sc, a) : a);
    _mm512_storeu_pd(row + i, e);
    if constexpr (along == Along::dot) d = _mm512_fmadd_pd(e, _mm512_loadu_pd(with + i), d);
    if constexpr (along == Along::softmax_reverse)
      _mm512_storeu_pd(with + i, _mm512_mul_pd(_mm512_mul_pd(vf, e), _mm512_sub_pd(_mm512_loadu_pd(with + i), vc)));
    return e;
  };
  __m512d s0 = _mm512_setzero_pd(), s1 = s0;
  for (; j + 16 <= n; j += 16) s0 = _mm512_add_pd(s0, at(j)), s1 = _mm512_add_pd(s1, at(j + 8));
  for (; j + 8 <= n; j += 8) s0 = _mm512_add_pd(s0, at(j));
  Z = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
  if constexpr (along == Along::dot) D = _mm512_reduce_add_pd(d);
#elif defined(__AVX2__) && defined(__FMA__)
  const __m256d sh = _mm256_set1_pd(shift), sc = _mm256_set1_pd(beta), vf = _mm256_set1_pd(f), vc = _mm256_set1_pd(c);
  __m256d d = _mm256_setzero_pd();
  auto at = [&](PetscInt i) {
    const __m256d a = _mm256_sub_pd(_mm256_loadu_pd(row + i), sh);
    const __m256d e = exp_nonpositive(scaled ? _mm256_mul_pd(sc, a) : a);
    _mm256_storeu_pd(row + i, e);
    if constexpr (along == Along::dot) d = _mm256_fmadd_pd(e, _mm256_loadu_pd(with + i), d);
    if constexpr (along == Along::softmax_reverse)
      _mm256_storeu_pd(with + i, _mm256_mul_pd(_mm256_mul_pd(vf, e), _mm256_sub_pd(_mm256_loadu_pd(with + i), vc)));
    return e;
  };
  __m256d s0 = _mm256_setzero_pd(), s1 = s0;
  for (; j + 8 <= n; j += 8) s0 = _mm256_add_pd(s0, at(j)), s1 = _mm256_add_pd(s1, at(j + 4));
  for (; j + 4 <= n; j += 4) s0 = _mm256_add_pd(s0, at(j));
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(s0, s1));
  Z = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  if constexpr (along == Along::dot) {
    _mm256_store_pd(lanes, d);
    D = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  }
#endif
  for (; j < n; ++j) { // the rest after the vectors (all of them, plain)
    Z += (row[j] = std::exp(beta * (row[j] - shift)));
    if constexpr (along == Along::dot) D += row[j] * with[j];
    if constexpr (along == Along::softmax_reverse) with[j] = f * row[j] * (with[j] - c);
  }
  if constexpr (along == Along::dot) *dot = D;
  return Z;
}

template <Along along>
double row_exp_along(double *row, PetscInt n, double beta, double shift, double *with, double f, double c,
                     double *dot) {
  return beta == 1.0 ? row_exp_at<false, along>(row, n, beta, shift, with, f, c, dot)
                     : row_exp_at<true, along>(row, n, beta, shift, with, f, c, dot);
}

double row_exp(double *row, PetscInt n, double beta, double shift) {
  return row_exp_along<Along::nothing>(row, n, beta, shift, nullptr, 0, 0, nullptr);
}

// row_exp, and *dot <- sum_j row[j] with[j] of the new row.
double row_exp_dot(double *row, PetscInt n, double beta, double shift, double *with, double *dot) {
  return row_exp_along<Along::dot>(row, n, beta, shift, with, 0, 0, dot);
}

// row_exp, and dp[j] <- (f row[j]) (dp[j] - c) with the new row: the
// reverse's dS = beta P (dP - delta) at f = beta / l, c = delta.
void row_exp_reverse(double *row, PetscInt n, double beta, double shift, double *dp, double f, double c) {
  row_exp_along<Along::softmax_reverse>(row, n, beta, shift, dp, f, c, nullptr);
}

// sum_j a[j] b[j], j < n (8 partial sums with AVX-512, 4 with AVX2: the
// compiler does not reorder a plain loop's sum, which then waits on each
// addition).
double row_dot(const double *a, const double *b, PetscInt n) {
  double sum = 0;
  PetscInt j = 0;
#if defined(__AVX512F__)
  __m512d acc = _mm512_setzero_pd();
  for (; j + 8 <= n; j += 8) acc = _mm512_fmadd_pd(_mm512_loadu_pd(a + j), _mm512_loadu_pd(b + j), acc);
  sum = _mm512_reduce_add_pd(acc);
#elif defined(__AVX2__) && defined(__FMA__)
  __m256d acc = _mm256_setzero_pd();
  for (; j + 4 <= n; j += 4) acc = _mm256_fmadd_pd(_mm256_loadu_pd(a + j), _mm256_loadu_pd(b + j), acc);
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, acc);
  sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
#endif
  for (; j < n; ++j) sum += a[j] * b[j];
  return sum;
}

// row[j] *= f for j < n.
void row_scale(double *row, PetscInt n, double f) {
  PetscInt j = 0;
#if defined(__AVX512F__)
  const __m512d vf = _mm512_set1_pd(f);
  for (; j + 8 <= n; j += 8) _mm512_storeu_pd(row + j, _mm512_mul_pd(_mm512_loadu_pd(row + j), vf));
#endif
  for (; j < n; ++j) row[j] *= f;
}

} // namespace

const char *ExponentialPath() {
#if defined(__AVX512F__)
  return "own AVX-512 (1.1 ulp)";
#elif defined(__AVX2__) && defined(__FMA__)
  return "own AVX2 (1.1 ulp)";
#else
  return "libm";
#endif
}

void exponentials(double *x, PetscInt n) {
  PetscInt j = 0;
#if defined(__AVX512F__)
  for (; j + 8 <= n; j += 8) _mm512_storeu_pd(x + j, exp_nonpositive(_mm512_loadu_pd(x + j)));
#elif defined(__AVX2__) && defined(__FMA__)
  for (; j + 4 <= n; j += 4) _mm256_storeu_pd(x + j, exp_nonpositive(_mm256_loadu_pd(x + j)));
#endif
  for (; j < n; ++j) x[j] = std::exp(x[j]);
}

namespace {

#if defined(__AVX512F__)
// An 8 x 8 block of B (row-major, leading dimension ldb) into Bt (ld):
// pairs of rows interleaved, then their 128-bit and 256-bit lanes.
inline void transpose8x8(const double *B, PetscInt ldb, double *Bt, PetscInt ld) {
  __m512d r[8], t[8], u[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_pd(B + i * ldb);
  for (int i = 0; i < 8; i += 2) t[i] = _mm512_unpacklo_pd(r[i], r[i + 1]), t[i + 1] = _mm512_unpackhi_pd(r[i], r[i + 1]);
  // u[0..3]: rows 0-3 of columns (0|4), (1|5), (2|6), (3|7); u[4..7] rows 4-7 of the same.
  const __m512i low = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0), high = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
  for (int h = 0; h < 2; ++h) {
    const __m512d *a = t + 4 * h;
    u[4 * h + 0] = _mm512_permutex2var_pd(a[0], low, a[2]);
    u[4 * h + 1] = _mm512_permutex2var_pd(a[1], low, a[3]);
    u[4 * h + 2] = _mm512_permutex2var_pd(a[0], high, a[2]);
    u[4 * h + 3] = _mm512_permutex2var_pd(a[1], high, a[3]);
  }
  const __m512i first = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0), second = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
  for (int c = 0; c < 4; ++c) {
    _mm512_storeu_pd(Bt + c * ld, _mm512_permutex2var_pd(u[c], first, u[4 + c]));
    _mm512_storeu_pd(Bt + (c + 4) * ld, _mm512_permutex2var_pd(u[c], second, u[4 + c]));
  }
}
#endif

// B (rows x cols, row-major) -> Bt (cols x rows), eight rows of B at a time:
// each column then writes one cache line of Bt whole. (Row by row, the
// columns' writes are `rows` doubles apart: at rows = 1024, 8 KiB, every
// column's line falls in the same L1 set and they evict each other.) With
// AVX-512, 8 x 8 blocks in registers (a step's transposes took 2.8% of an
// S2 step element by element).
// Bt's leading dimension is ld (rows by default).
void transpose(const double *B, PetscInt rows, PetscInt cols, double *Bt, PetscInt ld = -1) {
  constexpr PetscInt kLine = 8;
  if (ld < 0) ld = rows;
  PetscInt r0 = 0;
  for (; r0 + kLine <= rows; r0 += kLine) {
    PetscInt c = 0;
#if defined(__AVX512F__)
    for (; c + kLine <= cols; c += kLine) transpose8x8(B + r0 * cols + c, cols, Bt + c * ld + r0, ld);
#endif
    for (; c < cols; ++c)
      for (PetscInt r = 0; r < kLine; ++r) Bt[c * ld + r0 + r] = B[(r0 + r) * cols + c];
  }
  for (; r0 < rows; ++r0)
    for (PetscInt c = 0; c < cols; ++c) Bt[c * ld + r0] = B[r0 * cols + c];
}

// The head's transposed blocks: Q^T (queries) and K^T, V^T (keys): d x k, d x k, d x dv.
void transpose_head(const HeadShape &s, const double *theta, bool queries, bool keys, AttentionWork &w) {
  if (queries) transpose(theta + s.offQ, s.k, s.d, w.qt.data());
  if (keys) {
    transpose(theta + s.offK, s.k, s.d, w.kt.data());
    transpose(theta + s.offV, s.dv, s.d, w.vt.data());
  }
}

// Projections of the queries (q = X_q Q^T) and, when x_keys is given, of the
// nk keys (kappa = X K^T, w = X V^T); then the keys' transposes: kappa^T for
// the scores, and for the reverse (`reverse`) w^T too (dP = dY w^T).
void project_blas(const HeadShape &s, const double *xq, PetscInt nq, const double *x_keys, PetscInt nk, bool reverse,
                  AttentionWork &w) {
  if (x_keys) {
    gemm(false, false, nk, s.k, s.d, 1.0, x_keys, s.d, w.kt.data(), s.k, 0.0, w.kappa.data(), s.k);
    gemm(false, false, nk, s.dv, s.d, 1.0, x_keys, s.d, w.vt.data(), s.dv, 0.0, w.w.data(), s.dv);
  }
  gemm(false, false, nq, s.k, s.d, 1.0, xq, s.d, w.qt.data(), s.k, 0.0, w.q.data(), s.k);
  transpose(w.kappa.data(), nk, s.k, w.kappat.data());
  if (reverse) transpose(w.w.data(), nk, s.dv, w.wt.data());
  w.keys = {w.kappa.data(), w.kappat.data(), w.w.data(), w.wt.data(), nk, w.dkappa.data(), w.dw.data()};
}

// kappa and w of nk keys from given projections (row j: kappa_j, then w_j; leading dimension ld).
void load_keys(const HeadShape &s, const double *kw, PetscInt ld, PetscInt nk, AttentionWork &w) {
  for (PetscInt j = 0; j < nk; ++j) {
    std::copy(kw + j * ld, kw + j * ld + s.k, w.kappa.data() + j * s.k);
    std::copy(kw + j * ld + s.k, kw + j * ld + s.k + s.dv, w.w.data() + j * s.dv);
  }
}

// A block of queries: rows [r0, r0 + nb) of the query range q, whose first
// token is `first`, and its nkb keys (all N, or causal up to its last query).
struct QueryBlock {
  PetscInt r0, nb, first, nkb;
  QueryBlock(const AttentionOptions &o, PetscInt N, Range q, PetscInt r0_, PetscInt rows)
      : r0(r0_), nb(std::min(rows, q.size() - r0_)), first(q.begin + r0_),
        nkb(o.causal ? q.begin + r0_ + nb : N) {}
  // Valid keys of row r among the nt keys from t0 (the causal mask cuts them).
  PetscInt valid(const AttentionOptions &o, PetscInt r, PetscInt t0, PetscInt nt) const {
    return o.causal ? std::clamp(first + r + 1 - t0, (PetscInt)0, nt) : nt;
  }
  bool tiled(const AttentionWork &w) const { return nkb > w.keys_at_once; }
};

// Scores of the block against the nt keys from t0, unscaled: P = q kappa^T (nb x nt).
void block_scores(const HeadShape &s, PetscInt nk, const QueryBlock &b, PetscInt t0, PetscInt nt, AttentionWork &w) {
  gemm(false, false, b.nb, nt, s.k, 1.0, w.q.data() + b.r0 * s.k, s.k, w.keys.kappat + t0, w.keys.ldt, 0.0, w.p.data(), nt);
}

// All the block's keys at once (nkb <= keys_at_once; nk keys projected): the
// softmax of beta q kappa^T over them left unnormalised, P~ = exp(beta (S -
// max S)) (zero where masked), with its row maxima m and sums l (P = P~ /
// l), and (with_y) Y = P w = (P~ w) / l: the sums divide the small Y, not
// the rows of P.
// With dP (nb x nkb) given, also the reverse's delta_r = sum_j P~_rj dP_rj / l_r.
void block_attention(const HeadShape &s, const AttentionOptions &o, PetscInt nk, const QueryBlock &b,
                     AttentionWork &w, bool with_y = true, double *dp = nullptr) {
  block_scores(s, nk, b, 0, b.nkb, w);
  for (PetscInt r = 0; r < b.nb; ++r) {
    double *row = w.p.data() + r * b.nkb;
    const PetscInt nv = b.valid(o, r, 0, b.nkb);
    const double shift = w.m[r] = row_max(row, nv);
    if (dp) {
      double dot;
      w.l[r] = row_exp_dot(row, nv, o.beta, shift, dp + r * b.nkb, &dot);
      w.delta[r] = dot / w.l[r];
    } else {
      w.l[r] = row_exp(row, nv, o.beta, shift);
    }
    std::fill(row + nv, row + b.nkb, 0.0);
  }
  if (!with_y) return;
  gemm(false, false, b.nb, s.dv, b.nkb, 1.0, w.p.data(), b.nkb, w.keys.w, s.dv, 0.0, w.y.data(), s.dv);
  for (PetscInt r = 0; r < b.nb; ++r) row_scale(w.y.data() + r * s.dv, s.dv, 1.0 / w.l[r]);
}

// The block's keys in tiles of key_tile (flash attention's online softmax):
// Y = softmax(beta q kappa^T) w, and each row's maximum score m and sum l,
// such that P = exp(beta (S - m)) / l. A tile raising a row's maximum rescales
// the row's sum and Y by exp(beta (m_old - m_new)).
void block_attention_tiled(const HeadShape &s, const AttentionOptions &o, PetscInt nk, const QueryBlock &b,
                           AttentionWork &w) {
  std::fill(w.m.begin(), w.m.begin() + b.nb, -std::numeric_limits<double>::infinity());
  std::fill(w.l.begin(), w.l.begin() + b.nb, 0.0);
  std::fill(w.y.begin(), w.y.begin() + b.nb * s.dv, 0.0);
  for (PetscInt t0 = 0; t0 < b.nkb; t0 += w.key_tile) {
    const PetscInt nt = std::min(w.key_tile, b.nkb - t0);
    block_scores(s, nk, b, t0, nt, w);
    for (PetscInt r = 0; r < b.nb; ++r) {
      double *row = w.p.data() + r * nt;
      const PetscInt nv = b.valid(o, r, t0, nt);
      std::fill(row + nv, row + nt, 0.0);
      if (nv == 0) continue;
      const double mx = std::max(w.m[r], row_max(row, nv));
      if (mx > w.m[r] && w.l[r] > 0) { // 0 * -infinity is not 0: the first tile rescales nothing
        const double a = std::exp(o.beta * (w.m[r] - mx));
        w.l[r] *= a;
        for (PetscInt c = 0; c < s.dv; ++c) w.y[r * s.dv + c] *= a;
      }
      w.m[r] = mx;
      w.l[r] += row_exp(row, nv, o.beta, mx);
    }
    gemm(false, false, b.nb, s.dv, nt, 1.0, w.p.data(), nt, w.keys.w + t0 * s.dv, s.dv, 1.0, w.y.data(), s.dv);
  }
  for (PetscInt r = 0; r < b.nb; ++r) row_scale(w.y.data() + r * s.dv, s.dv, 1.0 / w.l[r]);
}

// A tiled block's m, l and Y into w.statistics (keep), or back from it.
void keep_statistics(const HeadShape &s, const QueryBlock &b, AttentionWork &w) {
  const PetscInt width = attention_statistics_width(s);
  for (PetscInt r = 0; r < b.nb; ++r) {
    double *row = w.statistics + (b.r0 + r) * width;
    row[0] = w.m[r], row[1] = w.l[r];
    std::copy(w.y.data() + r * s.dv, w.y.data() + (r + 1) * s.dv, row + 2);
  }
}
void take_statistics(const HeadShape &s, const QueryBlock &b, AttentionWork &w) {
  const PetscInt width = attention_statistics_width(s);
  for (PetscInt r = 0; r < b.nb; ++r) {
    const double *row = w.statistics + (b.r0 + r) * width;
    w.m[r] = row[0], w.l[r] = row[1];
    std::copy(row + 2, row + 2 + s.dv, w.y.data() + r * s.dv);
  }
}

// The forward from the projections in w: out += scale Attn at the queries q.
void forward_projected(const HeadShape &s, const double *theta, const AttentionOptions &o, PetscInt N, Range q,
                       double scale, double *out, AttentionWork &w) {
  const PetscInt nk = key_count(o, N, q);
  const PetscInt rows = w.rows(nk);
  for (PetscInt r0 = 0; r0 < q.size(); r0 += rows) {
    const QueryBlock b(o, N, q, r0, rows);
    if (b.tiled(w)) block_attention_tiled(s, o, nk, b, w);
    else block_attention(s, o, nk, b, w);
    if (w.statistics) keep_statistics(s, b, w);
    double *o_blk = out + r0 * s.d;
    if (s.kind == HeadKind::qkv) {
      for (PetscInt e = 0; e < b.nb * s.d; ++e) o_blk[e] += scale * w.y[e];
    } else { // out += scale Y O^T
      gemm(false, true, b.nb, s.d, s.k, scale, w.y.data(), s.k, theta + s.offO, s.k, 1.0, o_blk, s.d);
    }
  }
}

// dS = beta P (dP - c_r) = (beta / l_r) P~ (dP - c_r) in place of dP (nb x
// nt), row r's c_r = dY_r . Y_r.
void softmax_reverse_rows(double *dp, const double *p, PetscInt nb, PetscInt nt, double beta, const double *l,
                          const double *c) {
  for (PetscInt r = 0; r < nb; ++r) {
    double *dpr = dp + r * nt;
    const double *pr = p + r * nt;
    const double f = beta / l[r], cr = c[r];
    for (PetscInt j = 0; j < nt; ++j) dpr[j] = f * pr[j] * (dpr[j] - cr);
  }
}

// dP = dY w^T (nb x nt) against the nt keys from t0, into w.dp.
void block_weights_reverse(const HeadShape &s, PetscInt nk, const QueryBlock &b, PetscInt t0, PetscInt nt,
                           AttentionWork &w) {
  gemm(false, false, b.nb, nt, s.dv, 1.0, w.dy.data(), s.dv, w.keys.wt + t0, w.keys.ldt, 0.0, w.dp.data(), nt);
}

// Rows [t0, t0 + nt) of a key gradient C (cols wide) += A^T B, A the
// block's nb x nt weights: rows no block has reached yet (from `set` on) are
// set instead, so the gradients need no zeros first.
void add_to_keys(PetscInt t0, PetscInt nt, PetscInt nb, const double *A, const double *B, PetscInt cols, double *C,
                 PetscInt set) {
  const PetscInt e = std::min(std::max(set, t0), t0 + nt);
  gemm(true, false, e - t0, cols, nb, 1.0, A, nt, B, cols, 1.0, C + t0 * cols, cols);
  gemm(true, false, t0 + nt - e, cols, nb, 1.0, A + (e - t0), nt, B, cols, 0.0, C + e * cols, cols);
}

// The reverse of the block's scores against the nt keys from t0, with P~
// (nb x nt) in w.p, dS = beta P (dP - delta) in w.dp and dY / l in w.dyl:
// dq (+)= dS kappa (set when t0 = 0), dkappa (+)= dS^T q, dw (+)= P^T dY =
// P~^T (dY / l) (set on the rows no block reached before).
void block_reverse_products(const HeadShape &s, PetscInt nk, const QueryBlock &b, PetscInt t0, PetscInt nt,
                            AttentionWork &w) {
  gemm(false, false, b.nb, s.k, nt, 1.0, w.dp.data(), nt, w.keys.kappa + t0 * s.k, s.k, t0 == 0 ? 0.0 : 1.0,
       w.dqs.data() + b.r0 * s.k, s.k);
  add_to_keys(t0, nt, b.nb, w.dp.data(), w.q.data() + b.r0 * s.k, s.k, w.keys.dkappa, w.keys.set);
  add_to_keys(t0, nt, b.nb, w.p.data(), w.dyl.data(), s.dv, w.keys.dw, w.keys.set);
  w.keys.set = std::max(w.keys.set, t0 + nt);
}

// The reverse against the nt keys from t0 with each row's m, l and delta_r
// = dY_r . Y_r known first (the forward's statistics, or a tiled block's
// first sweep): dP = dY w^T, the scores again, and one pass over each row
// makes P~ = exp(beta (S - m)) and, in place of dP, dS = (beta / l) P~ (dP -
// delta) (softmax_reverse_rows's numbers), then the products.
void block_reverse_tile(const HeadShape &s, const AttentionOptions &o, PetscInt nk, const QueryBlock &b, PetscInt t0,
                        PetscInt nt, AttentionWork &w) {
  block_weights_reverse(s, nk, b, t0, nt, w);
  block_scores(s, nk, b, t0, nt, w);
  for (PetscInt r = 0; r < b.nb; ++r) {
    double *row = w.p.data() + r * nt, *dpr = w.dp.data() + r * nt;
    const PetscInt nv = b.valid(o, r, t0, nt);
    row_exp_reverse(row, nv, o.beta, w.m[r], dpr, o.beta / w.l[r], w.delta[r]);
    std::fill(row + nv, row + nt, 0.0);
    std::fill(dpr + nv, dpr + nt, 0.0);
  }
  block_reverse_products(s, nk, b, t0, nt, w);
}

// The reverse from the projections in w, up to them: w.dkappa, w.dw (nk keys)
// and w.dqs (the queries) are set, dO is added to dtheta; then through Q.
// A block takes Y, m and l from the forward's statistics when it kept them,
// and then makes P~ and dS in one pass over each row (block_reverse_tile).
// With them no row is needed whole: every block takes its keys in tiles of
// key_tile, and the blocks are as many queries as suit a tile
// (AttentionWork::rows), so that a tile's scores and dP stay in L2 (at S3's
// shape, 128 queries by 256 keys against 64 by 1024: the reverse of a unit
// 3.29-3.42 -> 3.02-3.06 ms in a microbenchmark). Without them, a tiled
// block makes them in a first sweep over its key tiles (one more score
// product and exp than at once, in cache); a block with its keys at once
// makes P~ and delta in one pass (delta summed over the row, not dY . Y: the
// same to round-off), then dS.
void reverse_projected(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *xq, PetscInt N,
                       Range q, double scale, const double *lam, double *dxq, double *dtheta, AttentionWork &w) {
  const PetscInt nk = key_count(o, N, q);
  w.keys.set = 0; // the blocks set the keys' gradients as they reach them (add_to_keys)
  const PetscInt rows = w.rows(w.statistics ? std::min(nk, w.key_tile) : nk);
  for (PetscInt r0 = 0; r0 < q.size(); r0 += rows) {
    const QueryBlock b(o, N, q, r0, rows);
    const bool tiled = b.tiled(w);
    const double *l_blk = lam + r0 * s.d;
    // dY = scale Lambda (qkv) or scale Lambda O (qkvo).
    if (s.kind == HeadKind::qkv) {
      for (PetscInt e = 0; e < b.nb * s.d; ++e) w.dy[e] = scale * l_blk[e];
    } else {
      gemm(false, false, b.nb, s.k, s.d, scale, l_blk, s.d, theta + s.offO, s.k, 0.0, w.dy.data(), s.k);
    }
    // At once without statistics: dP = dY w^T first, then P~ and delta_r =
    // dY_r . Y_r = sum_j P_rj (dY_r . w_j) = sum_j P~_rj dP_rj / l_r in one
    // pass over each row; qkv heads need no Y, qkvo heads need it for dO.
    const bool known = w.statistics || tiled; // m, l and Y before the rows' pass
    if (w.statistics) {
      take_statistics(s, b, w);
    } else if (tiled) {
      block_attention_tiled(s, o, nk, b, w);
    } else {
      block_weights_reverse(s, nk, b, 0, b.nkb, w);
      block_attention(s, o, nk, b, w, s.kind == HeadKind::qkvo, w.dp.data());
    }
    // dO += scale Lambda^T Y.
    if (s.kind == HeadKind::qkvo)
      gemm(true, false, s.d, s.k, b.nb, scale, l_blk, s.d, w.y.data(), s.k, 1.0, dtheta + s.offO, s.k);
    for (PetscInt r = 0; r < b.nb; ++r)
      for (PetscInt e = 0; e < s.dv; ++e) w.dyl[r * s.dv + e] = w.dy[r * s.dv + e] / w.l[r];
    if (!known) { // dS from dP, then back through it
      softmax_reverse_rows(w.dp.data(), w.p.data(), b.nb, b.nkb, o.beta, w.l.data(), w.delta.data());
      block_reverse_products(s, nk, b, 0, b.nkb, w);
      continue;
    }
    for (PetscInt r = 0; r < b.nb; ++r) w.delta[r] = row_dot(w.dy.data() + r * s.dv, w.y.data() + r * s.dv, s.dv);
    const PetscInt tile = w.key_tile; // (the statistics kept, or tiled)
    for (PetscInt t0 = 0; t0 < b.nkb; t0 += tile) block_reverse_tile(s, o, nk, b, t0, std::min(tile, b.nkb - t0), w);
  }
  // Through the queries' projection.
  gemm(true, false, s.k, s.d, q.size(), 1.0, w.dqs.data(), s.k, xq, s.d, 1.0, dtheta + s.offQ, s.d);
  gemm(false, false, q.size(), s.d, s.k, 1.0, w.dqs.data(), s.k, theta + s.offQ, s.d, 1.0, dxq, s.d);
}

// Through the keys' and values' projections of n keys x (the mean-field term):
// dkappa (leading dimension ldk) and dw (ldw) onto dx and dtheta's K and V.
void reverse_keys(const HeadShape &s, const double *theta, const double *x, PetscInt n, const double *dkappa,
                  PetscInt ldk, const double *dw, PetscInt ldw, double *dx, double *dtheta) {
  gemm(true, false, s.k, s.d, n, 1.0, dkappa, ldk, x, s.d, 1.0, dtheta + s.offK, s.d);
  gemm(false, false, n, s.d, s.k, 1.0, dkappa, ldk, theta + s.offK, s.d, 1.0, dx, s.d);
  gemm(true, false, s.dv, s.d, n, 1.0, dw, ldw, x, s.d, 1.0, dtheta + s.offV, s.d);
  gemm(false, false, n, s.d, s.dv, 1.0, dw, ldw, theta + s.offV, s.d, 1.0, dx, s.d);
}

} // namespace

void attention_forward(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *x,
                       PetscInt N, Range q, double scale, double *out, AttentionWork &w) {
  if (q.size() == 0) return;
  transpose_head(s, theta, true, true, w);
  project_blas(s, x + q.begin * s.d, q.size(), x, key_count(o, N, q), false, w);
  forward_projected(s, theta, o, N, q, scale, out, w);
}

void attention_reverse(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *x,
                       PetscInt N, Range q, double scale, const double *lam, double *dx, double *dtheta,
                       AttentionWork &w) {
  if (q.size() == 0) return;
  const PetscInt nk = key_count(o, N, q);
  transpose_head(s, theta, true, true, w);
  project_blas(s, x + q.begin * s.d, q.size(), x, nk, true, w);
  reverse_projected(s, theta, o, x + q.begin * s.d, N, q, scale, lam, dx + q.begin * s.d, dtheta, w);
  reverse_keys(s, theta, x, nk, w.dkappa.data(), s.k, w.dw.data(), s.dv, dx, dtheta);
}

void attention_project(const HeadShape &s, const double *theta, const double *x, PetscInt n, double *kw, PetscInt ld,
                       AttentionWork &w) {
  if (n == 0) return;
  transpose_head(s, theta, false, true, w);
  gemm(false, false, n, s.k, s.d, 1.0, x, s.d, w.kt.data(), s.k, 0.0, kw, ld);
  gemm(false, false, n, s.dv, s.d, 1.0, x, s.d, w.vt.data(), s.dv, 0.0, kw + s.k, ld);
}

void attention_forward_projected(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *xq,
                                 const double *kw, PetscInt ld, PetscInt N, Range q, double scale, double *out,
                                 AttentionWork &w) {
  if (q.size() == 0) return;
  transpose_head(s, theta, true, false, w);
  load_keys(s, kw, ld, key_count(o, N, q), w);
  project_blas(s, xq, q.size(), nullptr, key_count(o, N, q), false, w);
  forward_projected(s, theta, o, N, q, scale, out, w);
}

void attention_reverse_projected(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *xq,
                                 const double *kw, PetscInt ld, PetscInt N, Range q, double scale, const double *lam,
                                 double *dxq, double *dkw, double *dtheta, AttentionWork &w) {
  if (q.size() == 0) return;
  const PetscInt nk = key_count(o, N, q);
  transpose_head(s, theta, true, false, w);
  load_keys(s, kw, ld, nk, w);
  project_blas(s, xq, q.size(), nullptr, nk, true, w);
  reverse_projected(s, theta, o, xq, N, q, scale, lam, dxq, dtheta, w);
  for (PetscInt j = 0; j < nk; ++j) {
    for (PetscInt c = 0; c < s.k; ++c) dkw[j * ld + c] += w.dkappa[j * s.k + c];
    for (PetscInt c = 0; c < s.dv; ++c) dkw[j * ld + s.k + c] += w.dw[j * s.dv + c];
  }
}

void attention_project_reverse(const HeadShape &s, const double *theta, const double *x, PetscInt n, const double *dkw,
                               PetscInt ld, double *dx, double *dtheta) {
  if (n == 0) return;
  reverse_keys(s, theta, x, n, dkw, ld, dkw + s.k, ld, dx, dtheta);
}

bool attention_statistics_pay(const HeadShape &s, PetscInt N) {
  return N > AttentionWork().keys_at_once || N >= kKeysPerStatistic * attention_statistics_width(s);
}

std::ptrdiff_t attention_keys_size(const HeadShape &s, PetscInt nk) { return 2 * (std::ptrdiff_t)nk * (s.k + s.dv); }

namespace {
// Where a store of nk keys holds kappa (at 0), kappa^T, w and w^T (attention.hpp).
struct StoreParts {
  std::ptrdiff_t kappat, w, wt;
  StoreParts(const HeadShape &s, PetscInt nk)
      : kappat((std::ptrdiff_t)nk * s.k), w(2 * kappat), wt(w + (std::ptrdiff_t)nk * s.dv) {}
};
AttentionWork::Keys keys_of(const HeadShape &s, const double *store, PetscInt nk) {
  const StoreParts at(s, nk);
  AttentionWork::Keys k;
  k.kappa = store, k.kappat = store + at.kappat, k.w = store + at.w, k.wt = store + at.wt;
  k.ldt = nk;
  return k;
}
} // namespace

void attention_project_keys(const HeadShape &s, const double *theta, const double *x, Range r, PetscInt nk,
                            bool reverse, double *store, AttentionWork &w) {
  if (r.size() == 0) return;
  const StoreParts at(s, nk);
  double *kappa = store + (std::ptrdiff_t)r.begin * s.k, *values = store + at.w + (std::ptrdiff_t)r.begin * s.dv;
  const double *xr = x + (std::ptrdiff_t)r.begin * s.d;
  transpose_head(s, theta, false, true, w);
  gemm(false, false, r.size(), s.k, s.d, 1.0, xr, s.d, w.kt.data(), s.k, 0.0, kappa, s.k);
  gemm(false, false, r.size(), s.dv, s.d, 1.0, xr, s.d, w.vt.data(), s.dv, 0.0, values, s.dv);
  transpose(kappa, r.size(), s.k, store + at.kappat + r.begin, nk);
  if (reverse) transpose(values, r.size(), s.dv, store + at.wt + r.begin, nk);
}

void attention_forward_keys(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *xq,
                            const double *store, PetscInt nk, PetscInt N, Range q, double scale, double *out,
                            AttentionWork &w) {
  if (q.size() == 0) return;
  transpose_head(s, theta, true, false, w);
  gemm(false, false, q.size(), s.k, s.d, 1.0, xq, s.d, w.qt.data(), s.k, 0.0, w.q.data(), s.k);
  w.keys = keys_of(s, store, nk);
  forward_projected(s, theta, o, N, q, scale, out, w);
}

void attention_reverse_keys(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *xq,
                            const double *store, PetscInt nk, PetscInt N, Range q, double scale, const double *lam,
                            double *dxq, double *dkappa, double *dw, double *dtheta, AttentionWork &w) {
  if (q.size() == 0) return;
  transpose_head(s, theta, true, false, w);
  gemm(false, false, q.size(), s.k, s.d, 1.0, xq, s.d, w.qt.data(), s.k, 0.0, w.q.data(), s.k);
  w.keys = keys_of(s, store, nk);
  w.keys.dkappa = dkappa, w.keys.dw = dw;
  reverse_projected(s, theta, o, xq, N, q, scale, lam, dxq, dtheta, w);
}

void attention_keys_reverse(const HeadShape &s, const double *theta, const double *x, PetscInt n,
                            const double *dkappa, const double *dw, double *dx, double *dtheta) {
  if (n == 0) return;
  reverse_keys(s, theta, x, n, dkappa, s.k, dw, s.dv, dx, dtheta);
}

} // namespace mft
