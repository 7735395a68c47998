// One attention head over one sequence: forward and reverse kernels.
//
// For queries i in [q.begin, q.end) of a sequence of N tokens x_j (docs/model.md):
//   a[i,j] = beta <Q x_i, K x_j>,  P[i,j] = softmax_j a[i,j]  (j <= i if causal)
//   y_i    = sum_j P[i,j] w_j,  w_j = V x_j                    (dv entries)
//   Attn(x_i) = y_i (qkv: A = V)  or  O y_i (qkvo: A = O V)
// Two implementations (HPCG-style): the fast one works on blocks of `block`
// queries against their keys, in tiles of `key_tile` keys at long context,
// with small-product or BLAS-3 kernels and a vectorised exp (memory
// O(N (k + dv) + block key_tile): linear in N, no N x N matrix); the plain
// one evaluates one softmax row at a time with plain loops, and subtracts the
// row maximum (the fast one shifts a row by a power of two, from a bound on
// its scores where it can: softmax.hpp); the tests hold them to each other.
// Every routine here is not collective: a kernel works on the arrays it is
// given, on the calling thread.
#pragma once

#include "mft/kernels/shape.hpp"

#include <vector>

namespace mft {

// A stretch of AttentionWork's buffer, used like a vector of doubles.
struct Scratch {
  double *ptr = nullptr;
  size_t n = 0;
  double *data() const { return ptr; }
  double *begin() const { return ptr; }
  double *end() const { return ptr + n; }
  size_t size() const { return n; }
  double &operator[](PetscInt i) const { return ptr[i]; }
};

// Scratch space for the kernels, sized once for the largest sequence.
// A block of queries with more than keys_at_once keys takes them in tiles of
// key_tile (flash attention's online softmax: a running shift m and sum l
// per query), so that its scores stay in cache: memory O(block key_tile) for
// them, not O(block N). Tiling costs one more score product and exp in the
// reverse (none where the forward's statistics are kept), so it pays only
// once a block's scores no longer fit in the cache at once (the default
// keys_at_once; docs/performance.md, "Long context").
// Set both before reserve.
struct AttentionWork {
  static constexpr PetscInt block = 128; // queries per block of the fast kernel, at most
  PetscInt keys_at_once = 4096;          // a block with more keys takes them in tiles...
  PetscInt key_tile = 256;               // ...of this many
  // Queries a block of a range whose blocks meet up to nk keys: `block`,
  // halved (down to block / 4) while a block's scores at once (its keys, or
  // a tile of them) would pass kScoreBytes, so that they and their reverse's
  // dP stay in a core's L2.
  static constexpr double kScoreBytes = 524288.0;
  PetscInt rows(PetscInt nk) const;
  Scratch q, kappa, w, p, y, dy, dyl, dq, dkappa, dw, dp, dqs;
  // Per query of a block: the shift m of its softmax row (softmax.hpp) and
  // the sum l of the unnormalised row exp(beta S) 2^-m, and delta = dY . Y.
  Scratch m, l, delta;
  // The keys' |kappa_j|^2 and their maximum (the reach); per query of a
  // block: beta |q| max_j |kappa_j|, a bound on its scores (its shift's).
  Scratch norms, bound;
  double reach = 0;
  // Transposed copies, so that every hot product is op(A) B (the small-product
  // kernels do not take B^T): Q^T, K^T, V^T (d x k, d x k, d x dv), kappa^T, w^T.
  Scratch qt, kt, vt, kappat, wt;
  // Where the forward leaves, and the reverse then takes, each block's
  // softmax statistics: per query of q, in order, m, l and Y (dv + 2
  // numbers, attention_statistics_width). With them the reverse knows
  // delta = dY . Y before its pass over a row, which then makes P~ and dS at
  // once, takes every block's keys in tiles of key_tile, and a tiled block
  // skips its first sweep over the key tiles (one score product and exp less
  // a score). What it reads is what a tiled
  // block's sweep would make, bitwise, when the forward ran on the same
  // tokens and head; a block with its keys at once gets the same gradients
  // as without them to round-off (its delta summed another way). Null (the
  // default): the forward keeps nothing. Set by the caller before each call.
  double *statistics = nullptr;
  // Weighted tokens (docs/model.md, 'Token measures'): key j of the call's
  // sequence (j from its first token) enters every softmax row with its
  // weight, P[i,j] = w_j exp(a[i,j]) / sum_j' w_j' exp(a[i,j']). `weights`
  // null: every key alike (the unweighted kernels, bitwise). With weights the
  // reverse also adds to weight_grad[j] (when not null) the derivative of
  // its output, taken along lam, in w_j: sum_i (P[i,j] / w_j) (dP[i,j] -
  // delta_i). Set by the caller before each call.
  const double *weights = nullptr;
  double *weight_grad = nullptr;
  // The keys the blocked kernels read: kappa (nk x k), w (nk x dv) and
  // their transposes kappa^T, w^T (leading dimension ldt), and where the
  // reverse leaves their gradients dkappa (nk x k), dw (nk x dv): this
  // work's own arrays, or a caller's keys projected once for many query
  // chunks (attention_on_keys, attention_on_keys_reverse). Set by each call.
  struct Keys {
    const double *kappa = nullptr, *kappat = nullptr, *w = nullptr, *wt = nullptr;
    PetscInt ldt = 0;
    double *dkappa = nullptr, *dw = nullptr;
    PetscInt set = 0; // the reverse: rows [0, set) of dkappa and dw hold sums, the rest nothing yet
  } keys;
  void reserve(const HeadShape &shape, PetscInt N);
  AttentionWork() = default;
  AttentionWork(const AttentionWork &) = delete; // the Scratch members point into space
  AttentionWork &operator=(const AttentionWork &) = delete;
  AttentionWork(AttentionWork &&) = default; // (a vector's move keeps its buffer)
  AttentionWork &operator=(AttentionWork &&) = default;

private:
  // Every array above, each from a cache line of its own, in one buffer:
  // where they lie does not depend on what the heap held before, and no two
  // threads' works share a line. Left to the allocator one by one, a step's
  // time depended on what ran before it in the process (docs/performance.md,
  // "Choices in the kernels, measured").
  std::vector<double> space;
};

// Numbers a query keeps (AttentionWork::statistics).
inline PetscInt attention_statistics_width(const HeadShape &shape) { return shape.dv + 2; }

// Whether keeping the statistics of sequences of N tokens pays: always when
// their queries' keys take tiles (a sweep saved), else from N >=
// kKeysPerStatistic (dv + 2) keys a query. They cross memory twice (written
// by the forward, read by the reverse); the pass they save is the reverse's
// row maxima and its separate dS pass, worth it when a row is long against
// the dv + 2 numbers kept (the threshold was set by timing both sides of it).
constexpr PetscInt kKeysPerStatistic = 16;
bool attention_statistics_pay(const HeadShape &shape, PetscInt N);

struct AttentionOptions {
  double beta = 1.0;
  bool causal = false;
};

// The keys a query range attends to: all N, or with the causal mask those up to its last query.
inline PetscInt key_count(const AttentionOptions &o, PetscInt N, Range q) { return o.causal ? q.end : N; }

// out[(i - q.begin) * d + c] += scale * Attn_theta(x_i)_c for i in q.
void attention_plain(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *x,
                     PetscInt N, Range q, double scale, double *out, AttentionWork &work);

// The transpose of the forward map's Jacobian applied to lam (one row of d
// entries per query i in q, weighted by scale): adds to dx (N x d: every
// token, as query and as key) and to dtheta (the head's entries).
void attention_plain_reverse(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *x,
                             PetscInt N, Range q, double scale, const double *lam, double *dx, double *dtheta,
                             AttentionWork &work);

// The fast kernels: the same maps, blocked, on BLAS.
void attention(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *x, PetscInt N,
               Range q, double scale, double *out, AttentionWork &work);
void attention_reverse(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *x,
                       PetscInt N, Range q, double scale, const double *lam, double *dx, double *dtheta,
                       AttentionWork &work);

// The same maps split at the keys' and values' projections, for a sequence cut
// across token groups: each group projects its own tokens, the projections
// (k + dv numbers a token and head, not the d of the token) cross the network,
// and the gradients with respect to them come back to the tokens' group.
//   attention_project:           kw[j * ld + c] = (K x_j)_c (c < k),
//                                kw[j * ld + k + c] = (V x_j)_c, for n tokens x;
//   attention_projected: as attention, with the queries' tokens
//                                xq (q.size() rows) and every key's projections kw;
//   attention_projected_reverse: as attention_reverse for the queries (dxq),
//                                the projections' gradients added to dkw (rows
//                                as kw), dtheta's Q (and O) blocks;
//   attention_project_reverse:   the rest of the reverse, through the
//                                projections of n keys x: adds to dx and
//                                dtheta's K and V blocks.
void attention_project(const HeadShape &shape, const double *theta, const double *x, PetscInt n, double *kw,
                       PetscInt ld, AttentionWork &work);
void attention_projected(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *xq,
                         const double *kw, PetscInt ld, PetscInt N, Range q, double scale, double *out,
                         AttentionWork &work);
void attention_projected_reverse(const HeadShape &shape, const double *theta, const AttentionOptions &o,
                                 const double *xq, const double *kw, PetscInt ld, PetscInt N, Range q, double scale,
                                 const double *lam, double *dxq, double *dkw, double *dtheta, AttentionWork &work);
void attention_project_reverse(const HeadShape &shape, const double *theta, const double *x, PetscInt n,
                               const double *dkw, PetscInt ld, double *dx, double *dtheta);

// The same maps for many chunks of one sequence's queries against keys
// projected once (threads over a sequence's queries, velocity.hpp). A key
// store of nk keys holds kappa, kappa^T, w and w^T (attention_keys_size
// numbers):
//   attention_project_keys: rows [r.begin, r.end) of the store from those
//                           tokens x (x points at the sequence's first); w^T
//                           only for the reverse (`reverse`: dP = dY w^T);
//   attention_on_keys: as attention at the queries q (tokens xq,
//                           q.size() rows) against the store's keys;
//   attention_on_keys_reverse: as attention_reverse for the queries (dxq, and
//                           dtheta's Q and O blocks), the keys' gradients set
//                           (not added) in dkappa (rows < key count of q, ld
//                           k) and dw (ld dv);
//   attention_project_keys_reverse: through the projections of n keys x: the keys'
//                           gradients onto dx and dtheta's K and V blocks.
std::ptrdiff_t attention_keys_size(const HeadShape &shape, PetscInt nk);
void attention_project_keys(const HeadShape &shape, const double *theta, const double *x, Range r, PetscInt nk,
                            bool reverse, double *store, AttentionWork &work);
void attention_on_keys(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *xq,
                       const double *store, PetscInt nk, PetscInt N, Range q, double scale, double *out,
                       AttentionWork &work);
void attention_on_keys_reverse(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *xq,
                               const double *store, PetscInt nk, PetscInt N, Range q, double scale, const double *lam,
                               double *dxq, double *dkappa, double *dw, double *dtheta, AttentionWork &work);
void attention_project_keys_reverse(const HeadShape &shape, const double *theta, const double *x, PetscInt n,
                                    const double *dkappa, const double *dw, double *dx, double *dtheta);

} // namespace mft
