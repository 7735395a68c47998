// The blocked attention kernels: one head over one sequence, blocks of
// queries against their keys (at once or in tiles, the online softmax),
// small products through linalg, the softmax rows through softmax.hpp.
#include "mft/attention.hpp"

#include "mft/linalg.hpp"
#include "mft/softmax.hpp"

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
void projected(const HeadShape &s, const double *theta, const AttentionOptions &o, PetscInt N, Range q,
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
void softmax_rows_reverse(double *dp, const double *p, PetscInt nb, PetscInt nt, double beta, const double *l,
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
void block_products_reverse(const HeadShape &s, PetscInt nk, const QueryBlock &b, PetscInt t0, PetscInt nt,
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
// delta) (softmax_rows_reverse's numbers), then the products.
void block_tile_reverse(const HeadShape &s, const AttentionOptions &o, PetscInt nk, const QueryBlock &b, PetscInt t0,
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
  block_products_reverse(s, nk, b, t0, nt, w);
}

// The reverse from the projections in w, up to them: w.dkappa, w.dw (nk keys)
// and w.dqs (the queries) are set, dO is added to dtheta; then through Q.
// A block takes Y, m and l from the forward's statistics when it kept them,
// and then makes P~ and dS in one pass over each row (block_tile_reverse).
// With them no row is needed whole: every block takes its keys in tiles of
// key_tile, and the blocks are as many queries as suit a tile
// (AttentionWork::rows), so that a tile's scores and dP stay in L2 (at S3's
// shape, 128 queries by 256 keys against 64 by 1024: the reverse of a unit
// 3.29-3.42 -> 3.02-3.06 ms in a microbenchmark). Without them, a tiled
// block makes them in a first sweep over its key tiles (one more score
// product and exp than at once, in cache); a block with its keys at once
// makes P~ and delta in one pass (delta summed over the row, not dY . Y: the
// same to round-off), then dS.
void projected_reverse(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *xq, PetscInt N,
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
      softmax_rows_reverse(w.dp.data(), w.p.data(), b.nb, b.nkb, o.beta, w.l.data(), w.delta.data());
      block_products_reverse(s, nk, b, 0, b.nkb, w);
      continue;
    }
    for (PetscInt r = 0; r < b.nb; ++r) w.delta[r] = row_dot(w.dy.data() + r * s.dv, w.y.data() + r * s.dv, s.dv);
    const PetscInt tile = w.key_tile; // (the statistics kept, or tiled)
    for (PetscInt t0 = 0; t0 < b.nkb; t0 += tile) block_tile_reverse(s, o, nk, b, t0, std::min(tile, b.nkb - t0), w);
  }
  // Through the queries' projection.
  gemm(true, false, s.k, s.d, q.size(), 1.0, w.dqs.data(), s.k, xq, s.d, 1.0, dtheta + s.offQ, s.d);
  gemm(false, false, q.size(), s.d, s.k, 1.0, w.dqs.data(), s.k, theta + s.offQ, s.d, 1.0, dxq, s.d);
}

// Through the keys' and values' projections of n keys x (the mean-field term):
// dkappa (leading dimension ldk) and dw (ldw) onto dx and dtheta's K and V.
void project_keys_reverse(const HeadShape &s, const double *theta, const double *x, PetscInt n, const double *dkappa,
                  PetscInt ldk, const double *dw, PetscInt ldw, double *dx, double *dtheta) {
  gemm(true, false, s.k, s.d, n, 1.0, dkappa, ldk, x, s.d, 1.0, dtheta + s.offK, s.d);
  gemm(false, false, n, s.d, s.k, 1.0, dkappa, ldk, theta + s.offK, s.d, 1.0, dx, s.d);
  gemm(true, false, s.dv, s.d, n, 1.0, dw, ldw, x, s.d, 1.0, dtheta + s.offV, s.d);
  gemm(false, false, n, s.d, s.dv, 1.0, dw, ldw, theta + s.offV, s.d, 1.0, dx, s.d);
}

} // namespace

void attention(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *x,
                       PetscInt N, Range q, double scale, double *out, AttentionWork &w) {
  if (q.size() == 0) return;
  transpose_head(s, theta, true, true, w);
  project_blas(s, x + q.begin * s.d, q.size(), x, key_count(o, N, q), false, w);
  projected(s, theta, o, N, q, scale, out, w);
}

void attention_reverse(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *x,
                       PetscInt N, Range q, double scale, const double *lam, double *dx, double *dtheta,
                       AttentionWork &w) {
  if (q.size() == 0) return;
  const PetscInt nk = key_count(o, N, q);
  transpose_head(s, theta, true, true, w);
  project_blas(s, x + q.begin * s.d, q.size(), x, nk, true, w);
  projected_reverse(s, theta, o, x + q.begin * s.d, N, q, scale, lam, dx + q.begin * s.d, dtheta, w);
  project_keys_reverse(s, theta, x, nk, w.dkappa.data(), s.k, w.dw.data(), s.dv, dx, dtheta);
}

void attention_project(const HeadShape &s, const double *theta, const double *x, PetscInt n, double *kw, PetscInt ld,
                       AttentionWork &w) {
  if (n == 0) return;
  transpose_head(s, theta, false, true, w);
  gemm(false, false, n, s.k, s.d, 1.0, x, s.d, w.kt.data(), s.k, 0.0, kw, ld);
  gemm(false, false, n, s.dv, s.d, 1.0, x, s.d, w.vt.data(), s.dv, 0.0, kw + s.k, ld);
}

void attention_projected(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *xq,
                                 const double *kw, PetscInt ld, PetscInt N, Range q, double scale, double *out,
                                 AttentionWork &w) {
  if (q.size() == 0) return;
  transpose_head(s, theta, true, false, w);
  load_keys(s, kw, ld, key_count(o, N, q), w);
  project_blas(s, xq, q.size(), nullptr, key_count(o, N, q), false, w);
  projected(s, theta, o, N, q, scale, out, w);
}

void attention_projected_reverse(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *xq,
                                 const double *kw, PetscInt ld, PetscInt N, Range q, double scale, const double *lam,
                                 double *dxq, double *dkw, double *dtheta, AttentionWork &w) {
  if (q.size() == 0) return;
  const PetscInt nk = key_count(o, N, q);
  transpose_head(s, theta, true, false, w);
  load_keys(s, kw, ld, nk, w);
  project_blas(s, xq, q.size(), nullptr, nk, true, w);
  projected_reverse(s, theta, o, xq, N, q, scale, lam, dxq, dtheta, w);
  for (PetscInt j = 0; j < nk; ++j) {
    for (PetscInt c = 0; c < s.k; ++c) dkw[j * ld + c] += w.dkappa[j * s.k + c];
    for (PetscInt c = 0; c < s.dv; ++c) dkw[j * ld + s.k + c] += w.dw[j * s.dv + c];
  }
}

void attention_project_reverse(const HeadShape &s, const double *theta, const double *x, PetscInt n, const double *dkw,
                               PetscInt ld, double *dx, double *dtheta) {
  if (n == 0) return;
  project_keys_reverse(s, theta, x, n, dkw, ld, dkw + s.k, ld, dx, dtheta);
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

void attention_on_keys(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *xq,
                            const double *store, PetscInt nk, PetscInt N, Range q, double scale, double *out,
                            AttentionWork &w) {
  if (q.size() == 0) return;
  transpose_head(s, theta, true, false, w);
  gemm(false, false, q.size(), s.k, s.d, 1.0, xq, s.d, w.qt.data(), s.k, 0.0, w.q.data(), s.k);
  w.keys = keys_of(s, store, nk);
  projected(s, theta, o, N, q, scale, out, w);
}

void attention_on_keys_reverse(const HeadShape &s, const double *theta, const AttentionOptions &o, const double *xq,
                            const double *store, PetscInt nk, PetscInt N, Range q, double scale, const double *lam,
                            double *dxq, double *dkappa, double *dw, double *dtheta, AttentionWork &w) {
  if (q.size() == 0) return;
  transpose_head(s, theta, true, false, w);
  gemm(false, false, q.size(), s.k, s.d, 1.0, xq, s.d, w.qt.data(), s.k, 0.0, w.q.data(), s.k);
  w.keys = keys_of(s, store, nk);
  w.keys.dkappa = dkappa, w.keys.dw = dw;
  projected_reverse(s, theta, o, xq, N, q, scale, lam, dxq, dtheta, w);
}

void attention_project_keys_reverse(const HeadShape &s, const double *theta, const double *x, PetscInt n,
                            const double *dkappa, const double *dw, double *dx, double *dtheta) {
  if (n == 0) return;
  project_keys_reverse(s, theta, x, n, dkappa, s.k, dw, s.dv, dx, dtheta);
}

} // namespace mft
