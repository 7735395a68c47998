// The softmax's row passes and the kernels' exponential: what the blocked
// attention kernels do along one row of scores. With AVX-512 8 wide, with
// AVX2 and FMA 4 wide, otherwise plain; the exp is the kernels' own (within
// 1.5 ulp of the C library's), not libm's, wherever a vector unit has it.
// The scores s_j arrive unscaled; a row's exps are exp(beta s_j) 2^-c at
// its shift c (beta >= 0).
// Every routine here is not collective.
#pragma once

#include <petscsys.h>

namespace mft {

// A row's shift: its exps are exp(beta s_j) 2^-c, c an integer (as a
// double) from a bound b >= beta s_j over the row (shift_above), so that
// none passes 2 by more than round-off. `clamped`: a score may lie below
// (c ln 2 - 708) / beta, and the AVX2 exp takes it there (its exp ~
// 3e-308, zero against the row's largest, which the row's maximum as b
// makes at least 1/2; AVX-512's scalef needs no clamp). Otherwise every
// beta s_j >= c ln 2 - 708 (a looser bound than the maximum, known before
// the row: no pass for the maximum and no clamp).
struct Shift {
  double c;
  bool clamped;
};

// ceil(b / ln 2): the shift c of a row whose beta s_j are at most b.
double shift_above(double b);

// max_j row[j], j < n (-infinity when n = 0).
double row_max(const double *row, PetscInt n);

// row[j] <- exp(beta row[j]) 2^-c for j < n (within 1.5 ulp where above
// 1e-300: no shift is subtracted from the scores, so no rounding of one
// enters); returns their sum.
double row_exp(double *row, PetscInt n, double beta, Shift shift);

// row_exp, and *dot <- sum_j row[j] with[j] of the new row (the reverse's delta in the same pass).
double row_exp_dot(double *row, PetscInt n, double beta, Shift shift, double *with, double *dot);

// row_exp, and dp[j] <- (f row[j]) (dp[j] - c) with the new row: the
// reverse's dS = beta P (dP - delta) at f = beta / l, c = delta.
void row_exp_reverse(double *row, PetscInt n, double beta, Shift shift, double *dp, double f, double c);

// Weighted keys (AttentionWork::weights): row[j] *= w[j] for j < n;
// returns the new row's sum.
double row_weigh(double *row, const double *w, PetscInt n);

// The reverse of a weighted row whose P~ = exp(beta S) 2^-m is in row (not
// yet weighted), with g_j = (row[j] / l) (dp[j] - c): grad[j] += g_j (when
// grad is not null), row[j] <- w[j] row[j] (P~ weighted) and dp[j] <- beta
// w[j] g_j, the reverse's dS = beta P (dP - delta) at c = delta.
void row_weigh_reverse(double *row, double *dp, const double *w, PetscInt n, double beta, double l, double c,
                       double *grad);

// sum_j a[j] b[j], j < n, in partial sums of the vector width.
double row_dot(const double *a, const double *b, PetscInt n);

// row[j] *= f for j < n.
void row_scale(double *row, PetscInt n, double f);

// x <- exp(x), n entries x <= 0 (below -708 taken there), with the kernels'
// exponential (for the benchmark's measured rate and its test).
void exponentials(double *x, PetscInt n);

// x[j 8 + w] <- exp(x[j 8 + w] - shift[w]) for j < rows, w < 8 (the lanes
// kernels' rows, attention_seeds.hpp: the subtraction and the exp in one
// pass; each entry exactly as exponentials makes it from x - shift).
void exponentials_shifted(double *x, PetscInt rows, const double *shift);

// Which exp the kernels use on this build: "own AVX-512 (1.1 ulp)", "own AVX2
// (0.8 ulp)" (with FMA; no table) or "libm".
const char *ExponentialPath();

} // namespace mft
