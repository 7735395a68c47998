// The softmax's row passes and the kernels' vectorised exp (AVX-512, AVX2
// with FMA, or plain).
#include "mft/kernels/softmax.hpp"

#include "mft/kernels/simd.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mft {

namespace {

// The exps' constants: ln 2, 1 / ln 2, and ln 2 split into a 32-bit head
// (n ln2_head exact) and its remainder.
constexpr double kLn2 = 0.6931471805599453, kInverseLn2 = 1.4426950408889634;
constexpr double kLn2Head = 6.93147180369123816490e-01, kLn2Tail = 1.90821492927058770002e-10;
#if defined(__AVX512F__)
// The AVX-512 exp's Horner coefficients of q(r) / r ~ 1 + r/2 + ... + r^5/6!,
// q(r) ~ e^r - 1 of degree 6 on |r| <= ln(2)/32: a near-minimax fit
// (mpmath's chebyfit at 50 digits, then rounded to doubles), 1.4e-17
// relative error in 1 + q(r) there, where the Taylor polynomial of the same
// degree is 4.4e-16 off.
constexpr double kExpLeading = 0.0013889063440655327;
constexpr double kExpCoefficients[] = {0.008333472974951229, 0.041666666663595475, 0.16666666664209706,
                                       0.5000000000000001, 1.0000000000000007};
// 2^(j/16), j = 0..15, correctly rounded (checked against 60-digit decimals).
alignas(64) const double kPowersOfTwo[16] = {
    1.0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0, 0x1.306fe0a31b715p+0,
    0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0, 0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0,
    0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f09p+0, 0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0,
    0x1.ea4afa2a490dap+0};
#elif defined(__AVX2__) && defined(__FMA__)
// The AVX2 exp's p(r) ~ (e^r - 1) / r on |r| <= ln(2)/2, degree 10, highest
// first: mpmath's chebyfit at 50 digits, rounded to doubles; 1 + r p(r) is
// within 9.8e-18 (relative) of e^r there.
constexpr double kExpNoTable[] = {2.5105217004720745e-08, 2.7626371065696354e-07, 2.7557255400206422e-06,
                                  2.480150431378554e-05,  0.00019841269874820627, 0.001388888893251478,
                                  0.008333333333326136,   0.041666666666573066,   0.1666666666666667,
                                  0.5000000000000006,     1.0};
#endif

// The exps of a row's scores s_j at its shift c (an integer): exp(beta s_j)
// 2^-c. beta s = n ln 2 + r with n = round(beta s / ln 2) (to 1/16 with
// AVX-512), and r = beta s - n ln 2 exact to its last place (n ln2_head is
// exact, and the FMA rounds beta s - n ln2_head once), so no shift is
// subtracted from the scores first and no rounding of beta (s - shift)
// enters. `clamped`: scores below (c ln 2 - 708) / beta are taken there
// (their exp(beta s) 2^-c ~ 3e-308 is zero against the row's largest);
// without it every beta s_j >= c ln 2 - 708 must hold (row_exp).
struct RowExp {
  double beta, shift, floor;
  RowExp(double beta_, Shift s)
      : beta(beta_), shift(s.c), floor(s.clamped ? (s.c * kLn2 - 708.0) / beta_ : -HUGE_VAL) {}
};

#if defined(__AVX512F__)
// exp(beta s) 2^-c of 8 scores, within 1.5 ulp where it is > 1e-300: m =
// 16 n + j = round(16 beta s / ln 2), kept as m / 16 (one roundscale), so
// that r = beta s - (m / 16) ln 2 takes two FMA steps; exp(beta s) 2^-c =
// 2^(n - c) (T_j + T_j q(r)), T_j = 2^(j/16) from a 16-entry table in two
// registers (one permute), q(r) ~ e^r - 1 of degree 6 (above), j = m mod 16
// the low bits of m / 16 + 1.5 2^48 (whose last place is 1/16), and 2^(n -
// c) scalef's floor(m / 16 - c), which takes a result below the normal
// range to a subnormal or zero: no clamp is needed (`clamped` is AVX2's).
// Measured: tests/bench/roofline.sh.
template <bool scaled, bool> struct VectorExp {
  __m512d beta, to_n, shift;
  explicit VectorExp(const RowExp &e)
      : beta(_mm512_set1_pd(e.beta)), to_n(_mm512_set1_pd(e.beta * kInverseLn2)), shift(_mm512_set1_pd(e.shift)) {}
  __m512d operator()(__m512d s) const {
    const __m512d m16 =
        _mm512_roundscale_pd(_mm512_mul_pd(s, to_n), (4 << 4) | _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512d r = scaled ? _mm512_fmsub_pd(s, beta, _mm512_mul_pd(m16, _mm512_set1_pd(kLn2Head)))
                       : _mm512_fnmadd_pd(m16, _mm512_set1_pd(kLn2Head), s);
    r = _mm512_fnmadd_pd(m16, _mm512_set1_pd(kLn2Tail), r);
    const __m512i j = _mm512_castpd_si512(_mm512_add_pd(m16, _mm512_set1_pd(0x1.8p48)));
    const __m512d T = _mm512_permutex2var_pd(_mm512_load_pd(kPowersOfTwo), j, _mm512_load_pd(kPowersOfTwo + 8));
    __m512d p = _mm512_set1_pd(kExpLeading);
    for (double c : kExpCoefficients) p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(c));
    const __m512d e = _mm512_fmadd_pd(T, _mm512_mul_pd(p, r), T); // T (1 + q)
    return _mm512_scalef_pd(e, _mm512_sub_pd(m16, shift));
  }
};
#elif defined(__AVX2__) && defined(__FMA__)
// exp(beta s) 2^-c of 4 scores with AVX2 and FMA, within 1.5 ulp where it is
// > 1e-300, and no table: AVX2 has no two-register permute, and its gather
// (the 16-entry table's other way in) costs more than the five FMAs it
// saves. |r| <= ln(2)/2, and exp(beta s) 2^-c = 2^(n - c) (1 + r p(r)), p(r)
// ~ (e^r - 1) / r of degree 10 (kExpNoTable). n - c is the low bits of beta
// s / ln 2 + (1.5 2^52 - c) (one FMA; 2^51 + n - c in the mantissa), and n
// that sum less 1.5 2^52 - c, so that (n - c) 2^52, those bits shifted up by
// 52, is added to the exponent of 1 + r p(r) (in [0.70, 1.42]; the result
// stays normal down to beta s - c ln 2 = -708).
template <bool scaled, bool clamped> struct VectorExp {
  __m256d beta, to_n, shifter, floor;
  explicit VectorExp(const RowExp &e)
      : beta(_mm256_set1_pd(e.beta)), to_n(_mm256_set1_pd(e.beta * kInverseLn2)),
        shifter(_mm256_set1_pd(6755399441055744.0 - e.shift)), floor(_mm256_set1_pd(e.floor)) {}
  __m256d operator()(__m256d s) const {
    if constexpr (clamped) s = _mm256_max_pd(s, floor);
    const __m256d n_shifted = _mm256_fmadd_pd(s, to_n, shifter);
    const __m256d n = _mm256_sub_pd(n_shifted, shifter);
    __m256d r = scaled ? _mm256_fmsub_pd(s, beta, _mm256_mul_pd(n, _mm256_set1_pd(kLn2Head)))
                       : _mm256_fnmadd_pd(n, _mm256_set1_pd(kLn2Head), s);
    r = _mm256_fnmadd_pd(n, _mm256_set1_pd(kLn2Tail), r);
    __m256d p = _mm256_set1_pd(kExpNoTable[0]);
    for (std::size_t i = 1; i < sizeof kExpNoTable / sizeof *kExpNoTable; ++i)
      p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kExpNoTable[i]));
    const __m256d e = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0)); // 1 + r p(r)
    const __m256i two_n = _mm256_slli_epi64(_mm256_castpd_si256(n_shifted), 52);
    return _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(e), two_n));
  }
};
#endif

// The same in scalar code (the rest of a row without a vector unit): r as
// above, exp(r) from the C library, 2^(n - c) by ldexp.
double exp_scaled(double s, const RowExp &e, bool clamped) {
  if (clamped) s = std::max(s, e.floor);
  const double n = std::nearbyint(s * (e.beta * kInverseLn2));
  const double r = std::fma(s, e.beta, -n * kLn2Head) - n * kLn2Tail;
  return std::ldexp(std::exp(r), (int)(n - e.shift));
}

// row[j] <- exp(beta row[j]) 2^-shift for j < n (RowExp); returns their sum
// (running sums of vectors, two with AVX-512 and one with AVX2, then the rest
// in order). The rest (fewer than a vector: a causal row's, a short row's) is
// exponentiated in one vector padded with zeros, not one at a time.
// `scaled`: beta != 1 (at beta = 1 the product is skipped: the same numbers,
// one multiplication an entry less). What the pass does besides with each
// new entry e_j (Along): nothing; *dot <- sum_j e_j with[j], summed as
// row_dot sums (one running sum of vectors in order, then the rest): the
// reverse's delta in the same pass; or with[j] <- (f e_j) (with[j] - c), the
// reverse's dS in place of dP, as softmax_row_reverse makes it (bitwise).
enum class Along { nothing, dot, softmax_reverse };
template <bool scaled, bool clamped, Along along>
double row_exp_at(double *row, PetscInt n, const RowExp &x, double *with, double f, double c, double *dot) {
  double Z = 0, D = 0;
  PetscInt j = 0;
  bool made = false; // the rest's exponentials made already (in a padded vector)
#if defined(__AVX512F__)
  const VectorExp<scaled, clamped> exp(x);
  const __m512d vf = _mm512_set1_pd(f), vc = _mm512_set1_pd(c);
  __m512d d = _mm512_setzero_pd();
  auto at = [&](PetscInt i) {
    const __m512d e = exp(_mm512_loadu_pd(row + i));
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
  if (j < n) { // the rest's exponentials in one padded vector (summed below, in order)
    const __mmask8 m = (__mmask8)((1u << (n - j)) - 1);
    _mm512_mask_storeu_pd(row + j, m, exp(_mm512_maskz_loadu_pd(m, row + j)));
    made = true;
  }
#elif defined(__AVX2__) && defined(__FMA__)
  const VectorExp<scaled, clamped> exp(x);
  const __m256d vf = _mm256_set1_pd(f), vc = _mm256_set1_pd(c);
  __m256d d = _mm256_setzero_pd();
  auto at = [&](PetscInt i) {
    const __m256d e = exp(_mm256_loadu_pd(row + i));
    _mm256_storeu_pd(row + i, e);
    if constexpr (along == Along::dot) d = _mm256_fmadd_pd(e, _mm256_loadu_pd(with + i), d);
    if constexpr (along == Along::softmax_reverse)
      _mm256_storeu_pd(with + i, _mm256_mul_pd(_mm256_mul_pd(vf, e), _mm256_sub_pd(_mm256_loadu_pd(with + i), vc)));
    return e;
  };
  // One running sum: the exp's 16 operations a vector outlast an addition's
  // latency, and a second sum would be kept on the stack (16 registers).
  __m256d s0 = _mm256_setzero_pd();
  for (; j + 4 <= n; j += 4) s0 = _mm256_add_pd(s0, at(j));
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, s0);
  Z = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  if constexpr (along == Along::dot) {
    _mm256_store_pd(lanes, d);
    D = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  }
  if (j < n) { // the rest's exponentials in one padded vector (summed below, in order)
    const __m256i m = _mm256_cmpgt_epi64(_mm256_set1_epi64x(n - j), _mm256_setr_epi64x(0, 1, 2, 3));
    _mm256_maskstore_pd(row + j, m, exp(_mm256_maskload_pd(row + j, m)));
    made = true;
  }
#endif
  for (; j < n; ++j) { // the rest after the vectors (all of them, plain)
    Z += (row[j] = made ? row[j] : exp_scaled(row[j], x, clamped));
    if constexpr (along == Along::dot) D += row[j] * with[j];
    if constexpr (along == Along::softmax_reverse) with[j] = f * row[j] * (with[j] - c);
  }
  if constexpr (along == Along::dot) *dot = D;
  return Z;
}

template <Along along>
double row_exp_along(double *row, PetscInt n, double beta, Shift shift, double *with, double f, double c,
                     double *dot) {
  const RowExp x(beta, shift);
  if (shift.clamped)
    return beta == 1.0 ? row_exp_at<false, true, along>(row, n, x, with, f, c, dot)
                       : row_exp_at<true, true, along>(row, n, x, with, f, c, dot);
  return beta == 1.0 ? row_exp_at<false, false, along>(row, n, x, with, f, c, dot)
                     : row_exp_at<true, false, along>(row, n, x, with, f, c, dot);
}

} // namespace

// The softmax's row operations, with AVX-512 (8 wide, VectorExp), with AVX2
// and FMA (4 wide, VectorExp), or plain.

double shift_above(double b) { return std::ceil(b * kInverseLn2); }

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

double row_exp(double *row, PetscInt n, double beta, Shift shift) {
  return row_exp_along<Along::nothing>(row, n, beta, shift, nullptr, 0, 0, nullptr);
}

// row_exp, and *dot <- sum_j row[j] with[j] of the new row.
double row_exp_dot(double *row, PetscInt n, double beta, Shift shift, double *with, double *dot) {
  return row_exp_along<Along::dot>(row, n, beta, shift, with, 0, 0, dot);
}

// row_exp, and dp[j] <- (f row[j]) (dp[j] - c) with the new row: the
// reverse's dS = beta P (dP - delta) at f = beta / l, c = delta.
void row_exp_reverse(double *row, PetscInt n, double beta, Shift shift, double *dp, double f, double c) {
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

// (Plain loops, summed in order: weighted rows are not the hot path.)
double row_weigh(double *row, const double *w, PetscInt n) {
  double sum = 0;
  for (PetscInt j = 0; j < n; ++j) sum += (row[j] *= w[j]);
  return sum;
}

void row_weigh_reverse(double *row, double *dp, const double *w, PetscInt n, double beta, double l, double c,
                       double *grad) {
  const double inverse = 1.0 / l;
  for (PetscInt j = 0; j < n; ++j) {
    const double g = row[j] * inverse * (dp[j] - c);
    if (grad) grad[j] += g;
    row[j] *= w[j];
    dp[j] = beta * w[j] * g;
  }
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

const char *ExponentialPath() {
#if defined(__AVX512F__)
  return "own AVX-512 (1.1 ulp)";
#elif defined(__AVX2__) && defined(__FMA__)
  return "own AVX2 (0.8 ulp)";
#else
  return "libm";
#endif
}

// (The exp alone, as the row passes apply it, without their sum: the
// benchmark prices the bound's exps at this rate.)
void exponentials(double *x, PetscInt n) {
  const RowExp e(1.0, Shift{0.0, true});
  PetscInt j = 0;
#if defined(__AVX512F__)
  const VectorExp<false, true> exp(e);
  for (; j + 8 <= n; j += 8) _mm512_storeu_pd(x + j, exp(_mm512_loadu_pd(x + j)));
#elif defined(__AVX2__) && defined(__FMA__)
  const VectorExp<false, true> exp(e);
  for (; j + 4 <= n; j += 4) _mm256_storeu_pd(x + j, exp(_mm256_loadu_pd(x + j)));
#endif
  for (; j < n; ++j) x[j] = exp_scaled(x[j], e, true);
}

void exponentials_shifted(double *x, PetscInt rows, const double *shift) {
  const RowExp e(1.0, Shift{0.0, true});
  constexpr PetscInt W = 8;
#if defined(__AVX512F__)
  const VectorExp<false, true> exp(e);
  const __m512d c = _mm512_loadu_pd(shift);
  for (PetscInt j = 0; j < rows; ++j) _mm512_storeu_pd(x + j * W, exp(_mm512_sub_pd(_mm512_loadu_pd(x + j * W), c)));
#elif defined(__AVX2__) && defined(__FMA__)
  const VectorExp<false, true> exp(e);
  const __m256d c0 = _mm256_loadu_pd(shift), c1 = _mm256_loadu_pd(shift + 4);
  for (PetscInt j = 0; j < rows; ++j) {
    _mm256_storeu_pd(x + j * W, exp(_mm256_sub_pd(_mm256_loadu_pd(x + j * W), c0)));
    _mm256_storeu_pd(x + j * W + 4, exp(_mm256_sub_pd(_mm256_loadu_pd(x + j * W + 4), c1)));
  }
#else
  for (PetscInt j = 0; j < rows; ++j)
    for (PetscInt w = 0; w < W; ++w) x[j * W + w] = exp_scaled(x[j * W + w] - shift[w], e, true);
#endif
}

} // namespace mft
