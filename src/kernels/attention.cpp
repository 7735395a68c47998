// The blocked attention kernels: one head over one sequence, blocks of
// queries against their keys (at once or in tiles, the online softmax),
// small products through linalg, the softmax rows through softmax.hpp.
#include "mft/kernels/attention.hpp"

#include "mft/kernels/linalg.hpp"
#include "mft/kernels/softmax.hpp"

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

void AttentionWork::reserve(const HeadShape &shape, PetscInt N) {
  const size_t B = (size_t)std::min(block, N), T = (size_t)std::min(std::max(keys_at_once, key_tile), N);
  const size_t n = (size_t)N, d = (size_t)shape.d, k = (size_t)shape.k, dv = (size_t)shape.dv; // 64-bit products
  const size_t ldt = (size_t)row_stride(N), ldp = (size_t)row_stride((PetscInt)T); // rows apart by odd lines
  const std::pair<Scratch *, size_t> arrays[] = {
      {&q, n * k},   {&kappa, n * k}, {&w, n * dv},  {&p, B * ldp},  {&dp, B * ldp},   {&m, B},       {&l, B},
      {&delta, B},   {&y, B * dv},    {&dy, B * dv}, {&dyl, B * dv}, {&dq, k},         {&dqs, n * k}, {&dkappa, n * k},
      {&dw, n * dv}, {&qt, d * k},    {&kt, d * k},  {&vt, d * dv},  {&kappat, k * ldt}, {&wt, dv * ldt},
      {&norms, n},   {&bound, B}};
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

// The head's transposed blocks: Q^T (queries) and K^T, V^T (keys): d x k, d x k, d x dv.
void transpose_head(const HeadShape &shape, const double *theta, bool queries, bool keys, AttentionWork &work) {
  if (queries) transpose(theta + shape.offQ, shape.k, shape.d, work.qt.data());
  if (keys) {
    transpose(theta + shape.offK, shape.k, shape.d, work.kt.data());
    transpose(theta + shape.offV, shape.dv, shape.d, work.vt.data());
  }
}

// Projections of the queries (q = X_q Q^T) and, when x_keys is given, of the
// nk keys (kappa = X K^T, w = X V^T); then the keys' transposes: kappa^T for
// the scores, and for the reverse (`reverse`) w^T too (dP = dY w^T).
void project_blas(const HeadShape &shape, const double *xq, PetscInt nq, const double *x_keys, PetscInt nk,
                  bool reverse, AttentionWork &work) {
  if (x_keys) {
    gemm(false, false, nk, shape.k, shape.d, 1.0, x_keys, shape.d, work.kt.data(), shape.k, 0.0, work.kappa.data(),
         shape.k);
    gemm(false, false, nk, shape.dv, shape.d, 1.0, x_keys, shape.d, work.vt.data(), shape.dv, 0.0, work.w.data(),
         shape.dv);
  }
  gemm(false, false, nq, shape.k, shape.d, 1.0, xq, shape.d, work.qt.data(), shape.k, 0.0, work.q.data(), shape.k);
  const PetscInt ldt = row_stride(nk);
  transpose(work.kappa.data(), nk, shape.k, work.kappat.data(), ldt);
  if (reverse) transpose(work.w.data(), nk, shape.dv, work.wt.data(), ldt);
  work.keys = {work.kappa.data(),  work.kappat.data(), work.w.data(), work.wt.data(), ldt,
               work.dkappa.data(), work.dw.data()};
}

// kappa and w of nk keys from given projections (row j: kappa_j, then w_j; leading dimension ld).
void load_keys(const HeadShape &shape, const double *kw, PetscInt ld, PetscInt nk, AttentionWork &work) {
  for (PetscInt j = 0; j < nk; ++j) {
    std::copy(kw + j * ld, kw + j * ld + shape.k, work.kappa.data() + j * shape.k);
    std::copy(kw + j * ld + shape.k, kw + j * ld + shape.k + shape.dv, work.w.data() + j * shape.dv);
  }
}

// A block of queries: rows [r0, r0 + nb) of the query range q, whose first
// token is `first`, and its nkb keys (all N, or causal up to its last query).
struct QueryBlock {
  PetscInt r0, nb, first, nkb;
  QueryBlock(const AttentionOptions &o, PetscInt N, Range q, PetscInt r0_, PetscInt rows)
      : r0(r0_), nb(std::min(rows, q.size() - r0_)), first(q.begin + r0_), nkb(o.causal ? q.begin + r0_ + nb : N) {}
  // Valid keys of row r among the nt keys from t0 (the causal mask cuts them).
  PetscInt valid(const AttentionOptions &o, PetscInt r, PetscInt t0, PetscInt nt) const {
    return o.causal ? std::clamp(first + r + 1 - t0, (PetscInt)0, nt) : nt;
  }
  bool tiled(const AttentionWork &work) const { return nkb > work.keys_at_once; }
};

// The keys' reach, max_j |kappa_j|^2 over the nk keys (from kappa^T: the
// squares summed across the keys a dimension at a time, in w.norms).
void key_reach(const HeadShape &shape, PetscInt nk, AttentionWork &work) {
  double *norms = work.norms.data();
  std::fill(norms, norms + nk, 0.0);
  for (PetscInt c = 0; c < shape.k; ++c) {
    const double *kc = work.keys.kappat + c * work.keys.ldt;
    for (PetscInt j = 0; j < nk; ++j) norms[j] += kc[j] * kc[j];
  }
  work.reach = row_max(norms, nk);
}

// Each row's bound on its scores, b_r = beta |q_r| max_j |kappa_j|
// (Cauchy-Schwarz: beta S_rj <= b_r), into w.bound. (Causal rows take every
// key of the call in the maximum: a looser bound, and the same results,
// since a row's shift scales its exps and their sum by the same power of
// two.)
void block_bounds(const HeadShape &shape, const AttentionOptions &o, const QueryBlock &b, AttentionWork &work) {
  for (PetscInt r = 0; r < b.nb; ++r) {
    const double *q = work.q.data() + (b.r0 + r) * shape.k;
    double qq = 0;
    for (PetscInt c = 0; c < shape.k; ++c) qq += q[c] * q[c];
    work.bound[r] = o.beta * std::sqrt(qq * work.reach);
  }
}

// Row r's shift (softmax.hpp) from its bound b_r when b_r <= kBoundedShift:
// then every exp is at least exp(-2 b_r - ln 2) ~ 1e-56, and the row needs
// neither a pass for its maximum nor a clamp. Otherwise (clamped) the row's
// maximum decides its shift (c NaN here).
constexpr double kBoundedShift = 64;
Shift bounded_shift(const AttentionWork &work, PetscInt r) {
  if (work.bound[r] <= kBoundedShift) return {shift_above(work.bound[r]), false};
  return {std::numeric_limits<double>::quiet_NaN(), true};
}

// Scores of the block against the nt keys from t0, unscaled: P = q kappa^T
// (nb x nt, rows row_stride(nt) apart, as dP's).
void block_scores(const HeadShape &shape, PetscInt nk, const QueryBlock &b, PetscInt t0, PetscInt nt,
                  AttentionWork &work) {
  gemm(false, false, b.nb, nt, shape.k, 1.0, work.q.data() + b.r0 * shape.k, shape.k, work.keys.kappat + t0,
       work.keys.ldt, 0.0, work.p.data(), row_stride(nt));
}

// A row of dS = beta P (dP - c) = (beta / l) P~ (dP - c) in place of its
// row of dP (nt entries; f = beta / l, c = dY . Y).
void softmax_row_reverse(double *dp, const double *p, PetscInt nt, double f, double c) {
  for (PetscInt j = 0; j < nt; ++j) dp[j] = f * p[j] * (dp[j] - c);
}

// All the block's keys at once (nkb <= keys_at_once; nk keys projected): the
// softmax of beta q kappa^T over them left unnormalised, P~ = exp(beta S)
// 2^-m (zero where masked), with its rows' shifts m (bounded_shift, or from
// the row's maximum) and sums l (P = P~ / l), and (with_y) Y = P w = (P~ w)
// / l: the sums divide the small Y, not the rows of P.
// With dP (nb x nkb) given, also the reverse's delta_r = sum_j P~_rj dP_rj /
// l_r, and then dS in place of dP, each row's while it is in L1 (a pass over
// the block after all its rows reads it from L2 again: docs/performance.md,
// "Choices in the kernels, measured").
void block_attention(const HeadShape &shape, const AttentionOptions &o, PetscInt nk, const QueryBlock &b,
                     AttentionWork &work, bool with_y = true, double *dp = nullptr) {
  block_scores(shape, nk, b, 0, b.nkb, work);
  const PetscInt ld = row_stride(b.nkb);
  for (PetscInt r = 0; r < b.nb; ++r) {
    double *row = work.p.data() + r * ld;
    const PetscInt nv = b.valid(o, r, 0, b.nkb);
    Shift shift = bounded_shift(work, r);
    if (shift.clamped) shift.c = shift_above(o.beta * row_max(row, nv));
    work.m[r] = shift.c;
    if (dp) { // (the unweighted reverse's pass: a weighted one knows its statistics first)
      double dot;
      work.l[r] = row_exp_dot(row, nv, o.beta, shift, dp + r * ld, &dot);
      work.delta[r] = dot / work.l[r];
    } else {
      work.l[r] = row_exp(row, nv, o.beta, shift);
      if (work.weights) work.l[r] = row_weigh(row, work.weights, nv);
    }
    std::fill(row + nv, row + b.nkb, 0.0);
    if (dp) softmax_row_reverse(dp + r * ld, row, b.nkb, o.beta / work.l[r], work.delta[r]);
  }
  if (!with_y) return;
  gemm(false, false, b.nb, shape.dv, b.nkb, 1.0, work.p.data(), ld, work.keys.w, shape.dv, 0.0, work.y.data(),
       shape.dv);
  for (PetscInt r = 0; r < b.nb; ++r) row_scale(work.y.data() + r * shape.dv, shape.dv, 1.0 / work.l[r]);
}

// The block's keys in tiles of key_tile (flash attention's online softmax):
// Y = softmax(beta q kappa^T) w, and each row's shift m and sum l, such that
// P = exp(beta S) 2^-m / l. A row whose shift its bound fixes keeps it over
// every tile; otherwise a tile whose maximum raises it rescales the row's sum
// and Y by 2^(m_old - m_new) (exactly).
void block_attention_tiled(const HeadShape &shape, const AttentionOptions &o, PetscInt nk, const QueryBlock &b,
                           AttentionWork &work) {
  std::fill(work.m.begin(), work.m.begin() + b.nb, -std::numeric_limits<double>::infinity());
  std::fill(work.l.begin(), work.l.begin() + b.nb, 0.0);
  std::fill(work.y.begin(), work.y.begin() + b.nb * shape.dv, 0.0);
  for (PetscInt t0 = 0; t0 < b.nkb; t0 += work.key_tile) {
    const PetscInt nt = std::min(work.key_tile, b.nkb - t0);
    block_scores(shape, nk, b, t0, nt, work);
    const PetscInt ld = row_stride(nt);
    for (PetscInt r = 0; r < b.nb; ++r) {
      double *row = work.p.data() + r * ld;
      const PetscInt nv = b.valid(o, r, t0, nt);
      std::fill(row + nv, row + nt, 0.0);
      if (nv == 0) continue;
      Shift shift = bounded_shift(work, r);
      if (shift.clamped) {
        shift.c = std::max(work.m[r], shift_above(o.beta * row_max(row, nv)));
        if (shift.c > work.m[r] && work.l[r] > 0) { // (the first tile rescales nothing)
          const double a = std::ldexp(1.0, (int)std::max(work.m[r] - shift.c, -2000.0));
          work.l[r] *= a;
          for (PetscInt c = 0; c < shape.dv; ++c) work.y[r * shape.dv + c] *= a;
        }
      }
      work.m[r] = shift.c;
      const double sum = row_exp(row, nv, o.beta, shift);
      work.l[r] += work.weights ? row_weigh(row, work.weights + t0, nv) : sum;
    }
    gemm(false, false, b.nb, shape.dv, nt, 1.0, work.p.data(), ld, work.keys.w + t0 * shape.dv, shape.dv, 1.0,
         work.y.data(), shape.dv);
  }
  for (PetscInt r = 0; r < b.nb; ++r) row_scale(work.y.data() + r * shape.dv, shape.dv, 1.0 / work.l[r]);
}

// A tiled block's m, l and Y into w.statistics (keep), or back from it.
void keep_statistics(const HeadShape &shape, const QueryBlock &b, AttentionWork &work) {
  const PetscInt width = attention_statistics_width(shape);
  for (PetscInt r = 0; r < b.nb; ++r) {
    double *row = work.statistics + (b.r0 + r) * width;
    row[0] = work.m[r], row[1] = work.l[r];
    std::copy(work.y.data() + r * shape.dv, work.y.data() + (r + 1) * shape.dv, row + 2);
  }
}
void take_statistics(const HeadShape &shape, const QueryBlock &b, AttentionWork &work) {
  const PetscInt width = attention_statistics_width(shape);
  for (PetscInt r = 0; r < b.nb; ++r) {
    const double *row = work.statistics + (b.r0 + r) * width;
    work.m[r] = row[0], work.l[r] = row[1];
    std::copy(row + 2, row + 2 + shape.dv, work.y.data() + r * shape.dv);
  }
}

// The forward from the projections in w: out += scale Attn at the queries q.
void projected(const HeadShape &shape, const double *theta, const AttentionOptions &o, PetscInt N, Range q,
               double scale, double *out, AttentionWork &work) {
  const PetscInt nk = key_count(o, N, q);
  key_reach(shape, nk, work);
  const PetscInt rows = work.rows(nk);
  for (PetscInt r0 = 0; r0 < q.size(); r0 += rows) {
    const QueryBlock b(o, N, q, r0, rows);
    block_bounds(shape, o, b, work);
    if (b.tiled(work)) block_attention_tiled(shape, o, nk, b, work);
    else block_attention(shape, o, nk, b, work);
    if (work.statistics) keep_statistics(shape, b, work);
    double *o_blk = out + r0 * shape.d;
    if (shape.kind == HeadKind::qkv) {
      for (PetscInt e = 0; e < b.nb * shape.d; ++e) o_blk[e] += scale * work.y[e];
    } else { // out += scale Y O^T
      gemm(false, true, b.nb, shape.d, shape.k, scale, work.y.data(), shape.k, theta + shape.offO, shape.k, 1.0, o_blk,
           shape.d);
    }
  }
}

// dP = dY w^T (nb x nt) against the nt keys from t0, into w.dp.
void block_weights_reverse(const HeadShape &shape, PetscInt nk, const QueryBlock &b, PetscInt t0, PetscInt nt,
                           AttentionWork &work) {
  gemm(false, false, b.nb, nt, shape.dv, 1.0, work.dy.data(), shape.dv, work.keys.wt + t0, work.keys.ldt, 0.0,
       work.dp.data(), row_stride(nt));
}

// Rows [t0, t0 + nt) of a key gradient C (cols wide) += A^T B, A the
// block's nb x nt weights (rows row_stride(nt) apart): rows no block has
// reached yet (from `set` on) are set instead, so the gradients need no zeros
// first.
void add_to_keys(PetscInt t0, PetscInt nt, PetscInt nb, const double *A, const double *B, PetscInt cols, double *C,
                 PetscInt set) {
  const PetscInt e = std::min(std::max(set, t0), t0 + nt), ld = row_stride(nt);
  gemm(true, false, e - t0, cols, nb, 1.0, A, ld, B, cols, 1.0, C + t0 * cols, cols);
  gemm(true, false, t0 + nt - e, cols, nb, 1.0, A + (e - t0), ld, B, cols, 0.0, C + e * cols, cols);
}

// The reverse of the block's scores against the nt keys from t0, with P~
// (nb x nt) in w.p, dS = beta P (dP - delta) in w.dp and dY / l in w.dyl:
// dq (+)= dS kappa (set when t0 = 0), dkappa (+)= dS^T q, dw (+)= P^T dY =
// P~^T (dY / l) (set on the rows no block reached before).
void block_products_reverse(const HeadShape &shape, PetscInt nk, const QueryBlock &b, PetscInt t0, PetscInt nt,
                            AttentionWork &work) {
  gemm(false, false, b.nb, shape.k, nt, 1.0, work.dp.data(), row_stride(nt), work.keys.kappa + t0 * shape.k, shape.k,
       t0 == 0 ? 0.0 : 1.0, work.dqs.data() + b.r0 * shape.k, shape.k);
  add_to_keys(t0, nt, b.nb, work.dp.data(), work.q.data() + b.r0 * shape.k, shape.k, work.keys.dkappa, work.keys.set);
  add_to_keys(t0, nt, b.nb, work.p.data(), work.dyl.data(), shape.dv, work.keys.dw, work.keys.set);
  work.keys.set = std::max(work.keys.set, t0 + nt);
}

// The reverse against the nt keys from t0 with each row's m, l and delta_r
// = dY_r . Y_r known first (the forward's statistics, or a tiled block's
// first sweep): dP = dY w^T, the scores again, and one pass over each row
// makes P~ = exp(beta S) 2^-m and, in place of dP, dS = (beta / l) P~ (dP -
// delta) (softmax_row_reverse's numbers; with weighted keys
// row_weigh_reverse's, which also makes the weights' gradient), then the
// products.
void block_tile_reverse(const HeadShape &shape, const AttentionOptions &o, PetscInt nk, const QueryBlock &b,
                        PetscInt t0, PetscInt nt, AttentionWork &work) {
  block_weights_reverse(shape, nk, b, t0, nt, work);
  block_scores(shape, nk, b, t0, nt, work);
  const PetscInt ld = row_stride(nt);
  for (PetscInt r = 0; r < b.nb; ++r) {
    double *row = work.p.data() + r * ld, *dpr = work.dp.data() + r * ld;
    const PetscInt nv = b.valid(o, r, t0, nt);
    const Shift shift{work.m[r], bounded_shift(work, r).clamped};
    if (work.weights) {
      row_exp(row, nv, o.beta, shift);
      row_weigh_reverse(row, dpr, work.weights + t0, nv, o.beta, work.l[r], work.delta[r],
                        work.weight_grad ? work.weight_grad + t0 : nullptr);
    } else {
      row_exp_reverse(row, nv, o.beta, shift, dpr, o.beta / work.l[r], work.delta[r]);
    }
    std::fill(row + nv, row + nt, 0.0);
    std::fill(dpr + nv, dpr + nt, 0.0);
  }
  block_products_reverse(shape, nk, b, t0, nt, work);
}

// The reverse from the projections in w, up to them: w.dkappa, w.dw (nk keys)
// and w.dqs (the queries) are set, dO is added to dtheta; then through Q.
// A block takes Y, m and l from the forward's statistics when it kept them,
// and then makes P~ and dS in one pass over each row (block_tile_reverse).
// With them no row is needed whole: every block takes its keys in tiles of
// key_tile, and the blocks are as many queries as suit a tile
// (AttentionWork::rows), so that a tile's scores and dP stay in L2. Without them, a tiled
// block makes them in a first sweep over its key tiles (one more score
// product and exp than at once, in cache); a block with its keys at once
// makes P~ and delta in one pass (delta summed over the row, not dY . Y: the
// same to round-off), then dS. Weighted keys take the way of known
// statistics: m, l and Y first (a block at once makes them as the forward
// does), then the rows' pass, which makes their gradient too.
void projected_reverse(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *xq,
                       PetscInt N, Range q, double scale, const double *lam, double *dxq, double *dtheta,
                       AttentionWork &work) {
  const PetscInt nk = key_count(o, N, q);
  key_reach(shape, nk, work);
  work.keys.set = 0; // the blocks set the keys' gradients as they reach them (add_to_keys)
  const PetscInt rows = work.rows(work.statistics ? std::min(nk, work.key_tile) : nk);
  for (PetscInt r0 = 0; r0 < q.size(); r0 += rows) {
    const QueryBlock b(o, N, q, r0, rows);
    block_bounds(shape, o, b, work);
    const bool tiled = b.tiled(work);
    const double *l_blk = lam + r0 * shape.d;
    // dY = scale Lambda (qkv) or scale Lambda O (qkvo).
    if (shape.kind == HeadKind::qkv) {
      for (PetscInt e = 0; e < b.nb * shape.d; ++e) work.dy[e] = scale * l_blk[e];
    } else {
      gemm(false, false, b.nb, shape.k, shape.d, scale, l_blk, shape.d, theta + shape.offO, shape.k, 0.0,
           work.dy.data(), shape.k);
    }
    // At once without statistics: dP = dY w^T first, then P~ and delta_r =
    // dY_r . Y_r = sum_j P_rj (dY_r . w_j) = sum_j P~_rj dP_rj / l_r in one
    // pass over each row; qkv heads need no Y, qkvo heads need it for dO.
    const bool known = work.statistics || tiled || work.weights; // m, l and Y before the rows' pass
    if (work.statistics) {
      take_statistics(shape, b, work);
    } else if (tiled) {
      block_attention_tiled(shape, o, nk, b, work);
    } else if (work.weights) {
      block_attention(shape, o, nk, b, work);
    } else {
      block_weights_reverse(shape, nk, b, 0, b.nkb, work);
      block_attention(shape, o, nk, b, work, shape.kind == HeadKind::qkvo, work.dp.data());
    }
    // dO += scale Lambda^T Y.
    if (shape.kind == HeadKind::qkvo)
      gemm(true, false, shape.d, shape.k, b.nb, scale, l_blk, shape.d, work.y.data(), shape.k, 1.0, dtheta + shape.offO,
           shape.k);
    for (PetscInt r = 0; r < b.nb; ++r) { // dY / l, one division a row (as Y's)
      const double inv = 1.0 / work.l[r];
      for (PetscInt e = 0; e < shape.dv; ++e) work.dyl[r * shape.dv + e] = work.dy[r * shape.dv + e] * inv;
    }
    if (!known) { // dS made with P~ (block_attention): back through it
      block_products_reverse(shape, nk, b, 0, b.nkb, work);
      continue;
    }
    for (PetscInt r = 0; r < b.nb; ++r)
      work.delta[r] = row_dot(work.dy.data() + r * shape.dv, work.y.data() + r * shape.dv, shape.dv);
    const PetscInt tile = work.key_tile; // (the statistics kept, tiled, or weighted)
    for (PetscInt t0 = 0; t0 < b.nkb; t0 += tile)
      block_tile_reverse(shape, o, nk, b, t0, std::min(tile, b.nkb - t0), work);
  }
  // Through the queries' projection.
  gemm(true, false, shape.k, shape.d, q.size(), 1.0, work.dqs.data(), shape.k, xq, shape.d, 1.0, dtheta + shape.offQ,
       shape.d);
  gemm(false, false, q.size(), shape.d, shape.k, 1.0, work.dqs.data(), shape.k, theta + shape.offQ, shape.d, 1.0, dxq,
       shape.d);
}

// Through the keys' and values' projections of n keys x (the mean-field term):
// dkappa (leading dimension ldk) and dw (ldw) onto dx and dtheta's K and V.
void project_keys_reverse(const HeadShape &shape, const double *theta, const double *x, PetscInt n,
                          const double *dkappa, PetscInt ldk, const double *dw, PetscInt ldw, double *dx,
                          double *dtheta) {
  gemm(true, false, shape.k, shape.d, n, 1.0, dkappa, ldk, x, shape.d, 1.0, dtheta + shape.offK, shape.d);
  gemm(false, false, n, shape.d, shape.k, 1.0, dkappa, ldk, theta + shape.offK, shape.d, 1.0, dx, shape.d);
  gemm(true, false, shape.dv, shape.d, n, 1.0, dw, ldw, x, shape.d, 1.0, dtheta + shape.offV, shape.d);
  gemm(false, false, n, shape.d, shape.dv, 1.0, dw, ldw, theta + shape.offV, shape.d, 1.0, dx, shape.d);
}

} // namespace

void attention(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *x, PetscInt N,
               Range q, double scale, double *out, AttentionWork &work) {
  if (q.size() == 0) return;
  transpose_head(shape, theta, true, true, work);
  project_blas(shape, x + q.begin * shape.d, q.size(), x, key_count(o, N, q), false, work);
  projected(shape, theta, o, N, q, scale, out, work);
}

void attention_reverse(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *x,
                       PetscInt N, Range q, double scale, const double *lam, double *dx, double *dtheta,
                       AttentionWork &work) {
  if (q.size() == 0) return;
  const PetscInt nk = key_count(o, N, q);
  transpose_head(shape, theta, true, true, work);
  project_blas(shape, x + q.begin * shape.d, q.size(), x, nk, true, work);
  projected_reverse(shape, theta, o, x + q.begin * shape.d, N, q, scale, lam, dx + q.begin * shape.d, dtheta, work);
  project_keys_reverse(shape, theta, x, nk, work.dkappa.data(), shape.k, work.dw.data(), shape.dv, dx, dtheta);
}

void attention_project(const HeadShape &shape, const double *theta, const double *x, PetscInt n, double *kw,
                       PetscInt ld, AttentionWork &work) {
  if (n == 0) return;
  transpose_head(shape, theta, false, true, work);
  gemm(false, false, n, shape.k, shape.d, 1.0, x, shape.d, work.kt.data(), shape.k, 0.0, kw, ld);
  gemm(false, false, n, shape.dv, shape.d, 1.0, x, shape.d, work.vt.data(), shape.dv, 0.0, kw + shape.k, ld);
}

void attention_projected(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *xq,
                         const double *kw, PetscInt ld, PetscInt N, Range q, double scale, double *out,
                         AttentionWork &work) {
  if (q.size() == 0) return;
  transpose_head(shape, theta, true, false, work);
  load_keys(shape, kw, ld, key_count(o, N, q), work);
  project_blas(shape, xq, q.size(), nullptr, key_count(o, N, q), false, work);
  projected(shape, theta, o, N, q, scale, out, work);
}

void attention_projected_reverse(const HeadShape &shape, const double *theta, const AttentionOptions &o,
                                 const double *xq, const double *kw, PetscInt ld, PetscInt N, Range q, double scale,
                                 const double *lam, double *dxq, double *dkw, double *dtheta, AttentionWork &work) {
  if (q.size() == 0) return;
  const PetscInt nk = key_count(o, N, q);
  transpose_head(shape, theta, true, false, work);
  load_keys(shape, kw, ld, nk, work);
  project_blas(shape, xq, q.size(), nullptr, nk, true, work);
  projected_reverse(shape, theta, o, xq, N, q, scale, lam, dxq, dtheta, work);
  for (PetscInt j = 0; j < nk; ++j) {
    for (PetscInt c = 0; c < shape.k; ++c) dkw[j * ld + c] += work.dkappa[j * shape.k + c];
    for (PetscInt c = 0; c < shape.dv; ++c) dkw[j * ld + shape.k + c] += work.dw[j * shape.dv + c];
  }
}

void attention_project_reverse(const HeadShape &shape, const double *theta, const double *x, PetscInt n,
                               const double *dkw, PetscInt ld, double *dx, double *dtheta) {
  if (n == 0) return;
  project_keys_reverse(shape, theta, x, n, dkw, ld, dkw + shape.k, ld, dx, dtheta);
}

bool attention_statistics_pay(const HeadShape &shape, PetscInt N) {
  return N > AttentionWork().keys_at_once || N >= kKeysPerStatistic * attention_statistics_width(shape);
}

std::ptrdiff_t attention_keys_size(const HeadShape &shape, PetscInt nk) {
  return ((std::ptrdiff_t)nk + row_stride(nk)) * (shape.k + shape.dv);
}

namespace {
// Where a store of nk keys holds kappa (at 0), kappa^T, w and w^T
// (attention.hpp; the transposes' rows ldt = row_stride(nk) apart).
struct StoreParts {
  PetscInt ldt;
  std::ptrdiff_t kappat, w, wt;
  StoreParts(const HeadShape &shape, PetscInt nk)
      : ldt(row_stride(nk)), kappat((std::ptrdiff_t)nk * shape.k), w(kappat + (std::ptrdiff_t)ldt * shape.k),
        wt(w + (std::ptrdiff_t)nk * shape.dv) {}
};
AttentionWork::Keys keys_of(const HeadShape &shape, const double *store, PetscInt nk) {
  const StoreParts at(shape, nk);
  AttentionWork::Keys k;
  k.kappa = store, k.kappat = store + at.kappat, k.w = store + at.w, k.wt = store + at.wt;
  k.ldt = at.ldt;
  return k;
}
} // namespace

void attention_project_keys(const HeadShape &shape, const double *theta, const double *x, Range r, PetscInt nk,
                            bool reverse, double *store, AttentionWork &work) {
  if (r.size() == 0) return;
  const StoreParts at(shape, nk);
  double *kappa = store + (std::ptrdiff_t)r.begin * shape.k,
         *values = store + at.w + (std::ptrdiff_t)r.begin * shape.dv;
  const double *xr = x + (std::ptrdiff_t)r.begin * shape.d;
  transpose_head(shape, theta, false, true, work);
  gemm(false, false, r.size(), shape.k, shape.d, 1.0, xr, shape.d, work.kt.data(), shape.k, 0.0, kappa, shape.k);
  gemm(false, false, r.size(), shape.dv, shape.d, 1.0, xr, shape.d, work.vt.data(), shape.dv, 0.0, values, shape.dv);
  transpose(kappa, r.size(), shape.k, store + at.kappat + r.begin, at.ldt);
  if (reverse) transpose(values, r.size(), shape.dv, store + at.wt + r.begin, at.ldt);
}

void attention_on_keys(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *xq,
                       const double *store, PetscInt nk, PetscInt N, Range q, double scale, double *out,
                       AttentionWork &work) {
  if (q.size() == 0) return;
  transpose_head(shape, theta, true, false, work);
  gemm(false, false, q.size(), shape.k, shape.d, 1.0, xq, shape.d, work.qt.data(), shape.k, 0.0, work.q.data(),
       shape.k);
  work.keys = keys_of(shape, store, nk);
  projected(shape, theta, o, N, q, scale, out, work);
}

void attention_on_keys_reverse(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *xq,
                               const double *store, PetscInt nk, PetscInt N, Range q, double scale, const double *lam,
                               double *dxq, double *dkappa, double *dw, double *dtheta, AttentionWork &work) {
  if (q.size() == 0) return;
  transpose_head(shape, theta, true, false, work);
  gemm(false, false, q.size(), shape.k, shape.d, 1.0, xq, shape.d, work.qt.data(), shape.k, 0.0, work.q.data(),
       shape.k);
  work.keys = keys_of(shape, store, nk);
  work.keys.dkappa = dkappa, work.keys.dw = dw;
  projected_reverse(shape, theta, o, xq, N, q, scale, lam, dxq, dtheta, work);
}

void attention_project_keys_reverse(const HeadShape &shape, const double *theta, const double *x, PetscInt n,
                                    const double *dkappa, const double *dw, double *dx, double *dtheta) {
  if (n == 0) return;
  project_keys_reverse(shape, theta, x, n, dkappa, shape.k, dw, shape.dv, dx, dtheta);
}

} // namespace mft
