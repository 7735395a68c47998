// Mean-field velocity: head-group partial sums, reductions, one-sweep reverse.
#include "mft/velocity.hpp"

#include "mft/exchange.hpp"

// PetscObjectStateGet is public API, but 3.18 declares it in this header only.
#include <petsc/private/petscimpl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <omp.h>
#include <cstring>

namespace mft {

PetscErrorCode VelocityCreate(const Grid &g, const TokenLayout &t, Heads *h, const ModelSettings &m, CutForm form,
                              PetscInt threads, Velocity *v) {
  PetscFunctionBeginUser;
  PetscCall(EventsRegister());
  v->grid = &g;
  v->tokens = &t;
  v->heads = h;
  v->options.beta = m.beta;
  v->options.causal = m.causal;
  PetscCall(VecDuplicate(t.local, &v->x_local));
  PetscCall(VecDuplicate(t.local, &v->lam_local));
  PetscCall(VecDuplicate(t.local, &v->dx_local));
  PetscCall(VecDuplicate(t.state, &v->scratch));
  if (g.Ph > 1) v->partial.assign((size_t)(t.group.size() * t.d), 0.0);
  v->form = form;
  v->key_width = form == CutForm::tokens ? t.d : h->group.size() * (h->shape.k + h->shape.dv);
  v->keys.assign(t.cuts.size() * (size_t)t.N * (size_t)v->key_width, 0.0);
  v->dkeys.assign(v->keys.size(), 0.0);
  v->threads = std::max<PetscInt>(1, threads);
  v->works.resize((size_t)v->threads);
  for (AttentionWork &w : v->works) w.reserve(h->shape, t.N);
  v->chunks = std::max<PetscInt>(1, std::min<PetscInt>(kGradientChunks, t.seqs.size()));
  v->chunk_grad.assign((size_t)v->chunks * h->layer_grad.size(), 0.0);
  const double copy = 8.0 * ((double)t.group.size() * t.d + (form == CutForm::tokens ? (double)v->dkeys.size() : 0.0));
  v->head_chunks = HeadChunks(t.seqs.size(), h->group.size(), copy);
  v->head_partial.assign((size_t)(v->head_chunks - 1) * (size_t)t.group.size() * (size_t)t.d, 0.0);
  if (form == CutForm::tokens) v->dkeys_partial.assign((size_t)(v->head_chunks - 1) * v->dkeys.size(), 0.0);
  // Query chunks where the keys come as tokens (the projections form's cut
  // rows are projected by their owners already).
  PetscInt queries = 0;
  for (PetscInt m = t.seqs.begin; m < t.seqs.end; ++m) queries = std::max(queries, t.queries(m).size());
  const double rows = (double)t.seqs.size() * (double)h->group.size() * (double)t.N * (double)(h->shape.k + h->shape.dv);
  if (form == CutForm::tokens || t.cuts.empty())
    v->query_chunks = QueryChunks(t.seqs.size() * v->head_chunks, queries, 8.0 * rows);
  if (v->query_chunks > 1) {
    v->projected.assign((size_t)(2 * rows), 0.0); // kappa, w and their transposes
    v->dprojected.assign((size_t)rows * (size_t)v->query_chunks, 0.0);
    v->query_grad.assign((size_t)(t.seqs.size() * v->query_chunks) * h->layer_grad.size(), 0.0);
  }
  PetscFunctionReturn(0);
}

PetscErrorCode VelocityDestroy(Velocity *v) {
  PetscFunctionBeginUser;
  PetscCall(TokensShareCutRowsEnd(*v->tokens, &v->sharing));
  PetscCall(VecDestroy(&v->x_local));
  PetscCall(VecDestroy(&v->lam_local));
  PetscCall(VecDestroy(&v->dx_local));
  PetscCall(VecDestroy(&v->scratch));
  PetscFunctionReturn(0);
}

namespace {

// The first entry of flat token j in the group's gathered tokens.
PetscInt at(const TokenLayout &t, PetscInt m, PetscInt i) { return (m * t.N + i - t.group.begin) * t.d; }

// Where the statistics of layer l, local head hl, from query i of sequence m
// go (null when none are kept).
double *statistics_at(Velocity &v, PetscInt l, PetscInt hl, PetscInt m, PetscInt i) {
  if (v.statistics.empty()) return nullptr;
  const TokenLayout &t = *v.tokens;
  const std::ptrdiff_t row = ((std::ptrdiff_t)l * v.heads->group.size() + hl) * t.group.size() + m * t.N + i -
                             t.group.begin;
  return v.statistics.data() + row * attention_statistics_width(v.heads->shape);
}

// The rows of cut c: its whole sequence's tokens, or local head hl's projections.
// (64-bit: the rows of a long cut sequence can pass 2^31 numbers).
std::ptrdiff_t key_block(const Velocity &v, PetscInt c, PetscInt hl) {
  const std::ptrdiff_t first = (std::ptrdiff_t)c * v.tokens->N * v.key_width;
  return v.form == CutForm::tokens ? first : first + hl * (v.heads->shape.k + v.heads->shape.dv);
}

// Where head chunk j (velocity.hpp) sums its heads' contributions to the
// group's tokens: `first` (the result) for chunk 0, else its own copy; and
// to the cut rows' gradients: dkeys, or in the tokens form its own copy.
double *ChunkTokens(Velocity &v, double *first, PetscInt j) {
  return j == 0 ? first
                : v.head_partial.data() + (size_t)(j - 1) * (size_t)v.tokens->group.size() * (size_t)v.tokens->d;
}
double *ChunkKeys(Velocity &v, PetscInt j) {
  return j == 0 || v.form != CutForm::tokens ? v.dkeys.data() : v.dkeys_partial.data() + (size_t)(j - 1) * v.dkeys.size();
}

// A kernel's weighted keys for sequence m (AttentionWork::weights), and in
// the reverse where its weights' gradient goes: copy `part` of the local
// sequence's N tokens (null: unweighted, or the forward).
void Weigh(const Velocity &v, PetscInt m, double *grad, AttentionWork &w) {
  w.weights = v.tokens->sequence_weights(m);
  w.weight_grad = grad;
}
double *WeightPart(Velocity &v, PetscInt part, PetscInt m) {
  const TokenLayout &t = *v.tokens;
  if (!t.weighted()) return nullptr;
  return v.weight_parts.data() + ((size_t)part * (size_t)t.seqs.size() + (size_t)(m - t.seqs.begin)) * (size_t)t.N;
}

} // namespace

PetscErrorCode VelocityKeep(Velocity *v, PetscInt L) {
  const TokenLayout &t = *v->tokens;
  const Heads &h = *v->heads;
  PetscFunctionBeginUser;
  v->kept_layer.assign((size_t)L, 0);
  v->kept.resize((size_t)L * (size_t)t.group.size() * (size_t)t.d); // 64-bit: L n can pass 2^31
  // What the other buffers take (the cost model's count): the rest is the room of the cut rows and statistics.
  const double others = 8.0 * (double)(v->kept.size() + v->keys.size() + v->dkeys.size() + v->head_partial.size() +
                                       v->dkeys_partial.size() + v->projected.size() + v->dprojected.size());
  const KeptForAdjoint k = KeptForTheAdjoint(L, (double)v->keys.size(), h.group.size(), t.group.size(), h.shape, t.N,
                                             v->memory < 0 ? -1.0 : std::max(0.0, v->memory - others));
  v->kept_keys.resize(k.rows > 0 ? (size_t)L * v->keys.size() : 0);
  v->statistics.resize(k.statistics > 0 ? (size_t)(k.statistics / 8.0) : 0);
  v->forwards = false;
  PetscFunctionReturn(0);
}

namespace {

PetscErrorCode RowsArrived(Velocity *v);

// x_local <- the group's tokens of x (from the forward's copy when `reuse` and
// one is kept for layer l; the forward keeps its own), then the cut
// sequences' rows: made and their share started, or, for the adjoint of a
// forward that kept them, the forward's.
PetscErrorCode Gather(Velocity *v, PetscInt l, Vec x, bool reuse) {
  const TokenLayout &t = *v->tokens;
  const Heads &h = *v->heads;
  const PetscInt n = t.group.size() * t.d;
  const bool keeping = l < (PetscInt)v->kept_layer.size();
  PetscScalar *xl;
  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MFT_EXCHANGE, 0, 0, 0, 0));
  PetscCall(HeadsReady(v->heads, l)); // layer l of the replica (its bucket may still be in flight)
  if (reuse && keeping && v->kept_layer[l]) {
    const double *kept = v->kept.data() + (size_t)l * (size_t)n;
    const PetscScalar *xs;
    PetscCall(VecGetArrayRead(x, &xs));
    // Bitwise (a NaN state is its own): the same vector restored by the trajectory.
    const bool same = std::memcmp(xs, kept + (t.owned.begin - t.group.begin) * t.d,
                                  sizeof(double) * (size_t)(t.owned.size() * t.d)) == 0;
    PetscCall(VecRestoreArrayRead(x, &xs));
    PetscCheck(same, PETSC_COMM_SELF, PETSC_ERR_PLIB, "the adjoint's state of layer %" PetscInt_FMT
               " is not the forward's", l);
    PetscCall(VecGetArray(v->x_local, &xl));
    std::copy(kept, kept + n, xl);
    PetscCall(VecRestoreArray(v->x_local, &xl));
    v->forwards = true;
  } else {
    v->forwards = false;
    PetscCall(TokensGather(t, x, v->x_local));
    if (!reuse && keeping) {
      PetscCall(VecGetArray(v->x_local, &xl));
      std::copy(xl, xl + n, v->kept.data() + (size_t)l * (size_t)n);
      PetscCall(VecRestoreArray(v->x_local, &xl));
      v->kept_layer[l] = 1;
    }
  }
  PetscCall(PetscLogEventEnd(MFT_EXCHANGE, 0, 0, 0, 0));
  if (!t.cuts.empty() && v->forwards && !v->kept_keys.empty()) { // the rows the forward shared, kept
    PetscCall(RowsArrived(v));
    const double *kept = v->kept_keys.data() + (size_t)l * v->keys.size();
    std::copy(kept, kept + v->keys.size(), v->keys.data());
  } else if (!t.cuts.empty()) { // the group's rows of its cut sequences (tokens or projections), then shared
    const PetscScalar *xs;
    PetscCall(RowsArrived(v)); // a share still in flight (no kernel took it) ends before its rows change
    PetscCall(PetscLogEventBegin(MFT_KERNELS, 0, 0, 0, 0));
    PetscCall(VecGetArrayRead(v->x_local, &xs));
    for (PetscInt c = 0; c < (PetscInt)t.cuts.size(); ++c) {
      const CutSequence &cs = t.cuts[c];
      const PetscInt row = cs.mine.begin - cs.m * t.N;
      const double *xc = xs + at(t, cs.m, row);
      if (v->form == CutForm::tokens)
        std::copy(xc, xc + cs.mine.size() * t.d, v->keys.data() + key_block(*v, c, 0) + row * t.d);
      else
        for (PetscInt hl = 0; hl < h.group.size(); ++hl)
          attention_project(h.shape, h.head(l, hl), xc, cs.mine.size(),
                            v->keys.data() + key_block(*v, c, hl) + (std::ptrdiff_t)row * v->key_width, v->key_width, v->works[0]);
    }
    PetscCall(VecRestoreArrayRead(v->x_local, &xs));
    PetscCall(PetscLogEventEnd(MFT_KERNELS, 0, 0, 0, 0));
    PetscCall(PetscLogEventBegin(MFT_EXCHANGE, 0, 0, 0, 0));
    PetscCall(TokensShareCutRowsBegin(t, v->keys.data(), v->key_width, v->form == CutForm::tokens, &v->sharing));
    if (!h.overlap) PetscCall(TokensShareCutRowsEnd(t, &v->sharing)); // the same messages, waited for at once
    PetscCall(PetscLogEventEnd(MFT_EXCHANGE, 0, 0, 0, 0));
  }
  v->layer = l;
  v->grad_layer = -1;
  PetscFunctionReturn(0);
}

// The cut sequences' rows are in (the second pass of the kernels needs them).
PetscErrorCode RowsArrived(Velocity *v) {
  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MFT_EXCHANGE, 0, 0, 0, 0));
  PetscCall(TokensShareCutRowsEnd(*v->tokens, &v->sharing));
  PetscCall(PetscLogEventEnd(MFT_EXCHANGE, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

// The kernels in two passes: first the units whose sequences the group holds
// whole (`cut` false), while the cut sequences' rows travel, the main thread
// asking MPI to move them between units; then, the rows in, the others. A
// unit's sums are its own (velocity.hpp), so the order of the units changes
// no result. body(u) runs unit u; cut(u) says whether it needs the rows.
template <class Cut, class Body>
PetscErrorCode OverUnits(Velocity *v, PetscInt units, Cut cut, Body body) {
  PetscErrorCode progress = 0;
  PetscFunctionBeginUser;
  const int passes = v->tokens->cuts.empty() ? 1 : 2;
  for (int pass = 0; pass < passes; ++pass) {
    if (pass == 1) { // (the kernels' event is open around this: the wait is the exchange's)
      PetscCall(PetscLogEventEnd(MFT_KERNELS, 0, 0, 0, 0));
      PetscCall(RowsArrived(v));
      PetscCall(PetscLogEventBegin(MFT_KERNELS, 0, 0, 0, 0));
    }
#pragma omp parallel for num_threads(v->threads) schedule(dynamic, 1)
    for (PetscInt u = 0; u < units; ++u) {
      if (passes == 2 && cut(u) != (pass == 1)) continue;
      if (pass == 0 && passes == 2 && omp_get_thread_num() == 0 && !progress)
        progress = TokensShareCutRowsProgress(&v->sharing); // the main thread: MPI_THREAD_FUNNELED
      body(u, omp_get_thread_num());
    }
    PetscCall(progress);
  }
  PetscFunctionReturn(0);
}

// Threads over query chunks (Velocity::query_chunks): the units' places.
struct QueryUnits {
  Velocity &v;
  const double *xs;                // the group's gathered tokens
  PetscInt S, Hl, J, Qc, W;
  QueryUnits(Velocity &v_, const double *xs_)
      : v(v_), xs(xs_), S(v_.tokens->seqs.size()), Hl(v_.heads->group.size()), J(v_.head_chunks), Qc(v_.query_chunks),
        W(v_.heads->shape.k + v_.heads->shape.dv) {}
  // Unit u of S J Qc: local sequence ml (m = seqs.begin + ml), head chunk j, chunk i.
  PetscInt sequence(PetscInt u) const { return u / (J * Qc); }
  PetscInt head_chunk(PetscInt u) const { return u / Qc % J; }
  PetscInt chunk(PetscInt u) const { return u % Qc; }
  bool cut(PetscInt u) const { return v.tokens->cut(v.tokens->seqs.begin + sequence(u)) >= 0; }
  // The sequence's tokens (its keys; its queries at their rows): the group's, or the shared rows.
  const double *tokens(PetscInt m) const {
    const PetscInt c = v.tokens->cut(m);
    return c < 0 ? xs + at(*v.tokens, m, 0) : v.keys.data() + key_block(v, c, 0);
  }
  // Query chunk i of sequence m, and key chunk i of its keys.
  Range queries(PetscInt m, PetscInt i) const {
    const Range q = v.tokens->queries(m), r = split(q.size(), Qc, i);
    return Range{q.begin + r.begin, q.begin + r.end};
  }
  PetscInt reach(Range q) const { // the keys queries q reach
    return q.size() == 0 ? 0 : v.options.causal ? q.end : v.tokens->N;
  }
  PetscInt key_count(PetscInt m) const { return reach(v.tokens->queries(m)); }
  Range keys(PetscInt m, PetscInt i) const { return split(key_count(m), Qc, i); }
  double *store(PetscInt ml, PetscInt hl) const { // the keys of local sequence ml and head hl (attention.hpp)
    return v.projected.data() + ((std::ptrdiff_t)ml * Hl + hl) * attention_keys_size(v.heads->shape, v.tokens->N);
  }
  double *dkappa(PetscInt ml, PetscInt hl, PetscInt i) const { // chunk i's key gradients: dkappa, then dw
    return v.dprojected.data() + (((std::ptrdiff_t)ml * Hl + hl) * Qc + i) * v.tokens->N * W;
  }
  double *dw(PetscInt ml, PetscInt hl, PetscInt i) const {
    return dkappa(ml, hl, i) + (std::ptrdiff_t)v.tokens->N * v.heads->shape.k;
  }
  double *head_gradient(PetscInt ml, PetscInt i, PetscInt hl) const {
    return v.query_grad.data() + ((size_t)(ml * Qc + i) * (size_t)Hl + (size_t)hl) * (size_t)v.heads->shape.size;
  }
};

// Each sequence's keys projected once for every head of the rank, in key
// chunks, into Velocity::projected.
template <class Skip> PetscErrorCode ProjectKeys(const QueryUnits &qu, PetscInt l, bool reverse, Skip skip) {
  Velocity &v = qu.v;
  const TokenLayout &t = *v.tokens;
  const Heads &h = *v.heads;
  PetscFunctionBeginUser;
  auto cut = [&](PetscInt u) { return t.cut(t.seqs.begin + u / (qu.Hl * qu.Qc)) >= 0; };
  PetscCall(OverUnits(&v, t.seqs.size() * qu.Hl * qu.Qc, cut, [&](PetscInt u, int thread) {
    const PetscInt ml = u / (qu.Hl * qu.Qc), hl = u / qu.Qc % qu.Hl, m = t.seqs.begin + ml;
    if (skip(m)) return;
    attention_project_keys(h.shape, h.head(l, hl), qu.tokens(m), qu.keys(m, u % qu.Qc), qu.key_count(m),
                           reverse, qu.store(ml, hl), v.works[(size_t)thread]);
  }));
  PetscFunctionReturn(0);
}

// The reverse over (sequence, head chunk, query chunk) units: the keys
// projected once; each query chunk's reverse, its key gradients into its own
// copy and its head gradients into its own; then, in key chunks, the copies
// summed in chunk order and taken back through the keys' projection. Token
// gradients go where the other path puts them (ds, dkeys, or the head
// chunks' copies).
template <class Skip>
PetscErrorCode ReverseByQueries(Velocity *v, PetscInt l, const double *xs, const double *ls, double *ds, double scale,
                                Skip skip) {
  const TokenLayout &t = *v->tokens;
  const Heads &h = *v->heads;
  const QueryUnits qu(*v, xs);
  PetscFunctionBeginUser;
  PetscCall(ProjectKeys(qu, l, true, skip));
  std::fill(v->query_grad.begin(), v->query_grad.end(), 0.0);
  // Where unit (m, j)'s token gradients go: rows of sequence m from its first token.
  auto rows = [&](PetscInt m, PetscInt j) {
    const PetscInt c = t.cut(m);
    return c < 0 ? ChunkTokens(*v, ds, j) + at(t, m, 0) : ChunkKeys(*v, j) + key_block(*v, c, 0);
  };
  const PetscInt units = t.seqs.size() * qu.J * qu.Qc;
  auto cut = [&](PetscInt u) { return qu.cut(u); };
  PetscCall(OverUnits(v, units, cut, [&](PetscInt u, int thread) {
    const PetscInt ml = qu.sequence(u), j = qu.head_chunk(u), i = qu.chunk(u), m = t.seqs.begin + ml;
    const Range q = qu.queries(m, i), heads = split(h.group.size(), qu.J, j);
    if (skip(m)) return;
    AttentionWork &w = v->works[(size_t)thread];
    double *dx = rows(m, j);
    Weigh(*v, m, WeightPart(*v, j * qu.Qc + i, m), w);
    for (PetscInt hl = heads.begin; hl < heads.end && q.size() > 0; ++hl) {
      w.statistics = v->forwards ? statistics_at(*v, l, hl, m, q.begin) : nullptr; // the forward's
      attention_on_keys_reverse(h.shape, h.head(l, hl), v->options, qu.tokens(m) + q.begin * t.d, qu.store(ml, hl),
                                qu.key_count(m), t.N, q, scale, ls + at(t, m, q.begin), dx + q.begin * t.d,
                                qu.dkappa(ml, hl, i), qu.dw(ml, hl, i), qu.head_gradient(ml, i, hl), w);
    }
  }));
  PetscCall(OverUnits(v, units, cut, [&](PetscInt u, int) {
    const PetscInt ml = qu.sequence(u), j = qu.head_chunk(u), i = qu.chunk(u), m = t.seqs.begin + ml;
    const Range r = qu.keys(m, i), heads = split(h.group.size(), qu.J, j);
    if (skip(m) || r.size() == 0) return;
    double *dx = rows(m, j);
    const PetscInt k = h.shape.k, dv = h.shape.dv;
    for (PetscInt hl = heads.begin; hl < heads.end; ++hl) {
      // Chunk 0's rows become the sum: zero past the keys it reached, then
      // each other chunk's rows it reached added in chunk order.
      double *dk = qu.dkappa(ml, hl, 0), *dw = qu.dw(ml, hl, 0);
      const PetscInt z = std::max(r.begin, std::min(r.end, qu.reach(qu.queries(m, 0))));
      std::fill(dk + (std::ptrdiff_t)z * k, dk + (std::ptrdiff_t)r.end * k, 0.0);
      std::fill(dw + (std::ptrdiff_t)z * dv, dw + (std::ptrdiff_t)r.end * dv, 0.0);
      for (PetscInt c = 1; c < qu.Qc; ++c) {
        const PetscInt e = std::min(r.end, qu.reach(qu.queries(m, c))); // its rows past e stay unset
        const double *gk = qu.dkappa(ml, hl, c), *gw = qu.dw(ml, hl, c);
        for (std::ptrdiff_t x = (std::ptrdiff_t)r.begin * k; x < (std::ptrdiff_t)e * k; ++x) dk[x] += gk[x];
        for (std::ptrdiff_t x = (std::ptrdiff_t)r.begin * dv; x < (std::ptrdiff_t)e * dv; ++x) dw[x] += gw[x];
      }
      attention_project_keys_reverse(h.shape, h.head(l, hl), qu.tokens(m) + r.begin * t.d, r.size(), dk + r.begin * k,
                                     dw + r.begin * dv, dx + r.begin * t.d, qu.head_gradient(ml, i, hl));
    }
  }));
  PetscFunctionReturn(0);
}

// The reverse over (chunk of sequences, chunk of heads) units: a token's
// gradient comes from its own sequence only, each chunk of heads in order
// into its own sum (chunk 0 into ds and dkeys), the chunks' sums added in
// order (SumReverseChunks); a head's from every sequence, summed within each
// chunk of sequences in order, then over those chunks in order.
template <class Skip>
PetscErrorCode ReverseByChunks(Velocity *v, PetscInt l, const double *xs, const double *ls, double *ds, double scale,
                               Skip skip) {
  const TokenLayout &t = *v->tokens;
  const Heads &h = *v->heads;
  const size_t G = h.layer_grad.size();
  const PetscInt S = t.seqs.size(), J = v->head_chunks;
  PetscFunctionBeginUser;
  std::vector<char> cut_chunk((size_t)v->chunks, 0); // chunks holding a cut sequence
  for (PetscInt k = 0; k < v->chunks; ++k) {
    const Range part = split(S, v->chunks, k);
    for (PetscInt m = t.seqs.begin + part.begin; m < t.seqs.begin + part.end; ++m) cut_chunk[k] |= t.cut(m) >= 0;
  }
  auto cut = [&](PetscInt u) { return cut_chunk[u / J] != 0; };
  PetscCall(OverUnits(v, v->chunks * J, cut, [&](PetscInt u, int thread) {
    const PetscInt k = u / J, j = u % J;
    AttentionWork &w = v->works[(size_t)thread];
    const Range heads = split(h.group.size(), J, j);
    double *grad = v->chunk_grad.data() + (size_t)k * G;
    std::fill(grad + heads.begin * h.shape.size, grad + heads.end * h.shape.size, 0.0);
    double *dxs = ChunkTokens(*v, ds, j), *dks = ChunkKeys(*v, j);
    const Range part = split(S, v->chunks, k);
    for (PetscInt m = t.seqs.begin + part.begin; m < t.seqs.begin + part.end; ++m) {
      const Range q = t.queries(m);
      const PetscInt c = t.cut(m);
      if (q.size() == 0 || skip(m)) continue;
      Weigh(*v, m, WeightPart(*v, j, m), w);
      for (PetscInt hl = heads.begin; hl < heads.end; ++hl) {
        double *dtheta = grad + hl * h.shape.size;
        w.statistics = v->forwards ? statistics_at(*v, l, hl, m, q.begin) : nullptr; // the forward's
        if (c < 0)
          attention_reverse(h.shape, h.head(l, hl), v->options, xs + at(t, m, 0), t.N, q, scale,
                            ls + at(t, m, q.begin), dxs + at(t, m, 0), dtheta, w);
        else if (v->form == CutForm::tokens) // the shared tokens' gradients go back with the rows
          attention_reverse(h.shape, h.head(l, hl), v->options, v->keys.data() + key_block(*v, c, hl), t.N, q, scale,
                            ls + at(t, m, q.begin), dks + key_block(*v, c, hl), dtheta, w);
        else
          attention_projected_reverse(h.shape, h.head(l, hl), v->options, xs + at(t, m, q.begin),
                                      v->keys.data() + key_block(*v, c, hl), v->key_width, t.N, q, scale,
                                      ls + at(t, m, q.begin), dxs + at(t, m, q.begin),
                                      dks + key_block(*v, c, hl), dtheta, w);
      }
    }
  }));
  PetscFunctionReturn(0);
}

// The head chunks' token and key gradients added into chunk 0's, in chunk
// order; the (sequence or query) chunks' head gradients into the layer's.
void SumReverseChunks(Velocity *v, double *ds) {
  const TokenLayout &t = *v->tokens;
  Heads &h = *v->heads;
  if (t.weighted()) { // the weights' gradients, copy by copy
    const size_t n = v->layer_weight_grad.size();
    std::copy(v->weight_parts.begin(), v->weight_parts.begin() + (std::ptrdiff_t)n, v->layer_weight_grad.begin());
    for (size_t part = 1; part < v->weight_parts.size() / n; ++part)
      for (size_t e = 0; e < n; ++e) v->layer_weight_grad[e] += v->weight_parts[part * n + e];
  }
  const size_t G = h.layer_grad.size(), n = (size_t)t.group.size() * (size_t)t.d;
  for (PetscInt j = 1; j < v->head_chunks; ++j) {
    const double *dx_j = ChunkTokens(*v, ds, j);
    for (size_t e = 0; e < n; ++e) ds[e] += dx_j[e];
    if (v->dkeys_partial.empty()) continue;
    const double *dk_j = ChunkKeys(*v, j);
    for (size_t e = 0; e < v->dkeys.size(); ++e) v->dkeys[e] += dk_j[e];
  }
  if (v->query_chunks > 1)
    for (size_t k = 0; k < v->query_grad.size() / G; ++k)
      for (size_t e = 0; e < G; ++e) h.layer_grad[e] += v->query_grad[k * G + e];
  else
    for (PetscInt k = 0; k < v->chunks; ++k)
      for (size_t e = 0; e < G; ++e) h.layer_grad[e] += v->chunk_grad[(size_t)k * G + e];
}

// The cut sequences' rows: their gradients back to their group, then onto
// its tokens (shared as tokens), or through the keys' projection (shared as
// projections), which also adds to the heads' gradients.
template <class Skip> PetscErrorCode ReverseCutRows(Velocity *v, PetscInt l, const double *xs, double *ds, Skip skip) {
  const TokenLayout &t = *v->tokens;
  Heads &h = *v->heads;
  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MFT_EXCHANGE, 0, 0, 0, 0));
  PetscCall(TokensReturnCutRows(t, v->dkeys.data(), v->key_width, v->form == CutForm::tokens));
  PetscCall(PetscLogEventEnd(MFT_EXCHANGE, 0, 0, 0, 0));
  PetscCall(PetscLogEventBegin(MFT_KERNELS, 0, 0, 0, 0));
  for (PetscInt c = 0; c < (PetscInt)t.cuts.size(); ++c) {
    const CutSequence &cs = t.cuts[c];
    const PetscInt row = cs.mine.begin - cs.m * t.N;
    if (skip(cs.m)) continue;
    if (v->form == CutForm::tokens) {
      const double *g = v->dkeys.data() + key_block(*v, c, 0) + row * t.d;
      for (PetscInt e = 0; e < cs.mine.size() * t.d; ++e) ds[at(t, cs.m, row) + e] += g[e];
      continue;
    }
    for (PetscInt hl = 0; hl < h.group.size(); ++hl)
      attention_project_reverse(h.shape, h.head(l, hl), xs + at(t, cs.m, row), cs.mine.size(),
                                v->dkeys.data() + key_block(*v, c, hl) + (std::ptrdiff_t)row * v->key_width, v->key_width,
                                ds + at(t, cs.m, row), h.layer_grad.data() + hl * h.shape.size);
  }
  PetscCall(PetscLogEventEnd(MFT_KERNELS, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode VelocityPrepare(Velocity *v, PetscInt l, Vec x) {
  PetscFunctionBeginUser;
  PetscCall(Gather(v, l, x, true));
  PetscFunctionReturn(0);
}

PetscErrorCode VelocityEvaluate(Velocity *v, PetscInt l, Vec x, Vec f) {
  const TokenLayout &t = *v->tokens;
  const Heads &h = *v->heads;
  const double scale = 1.0 / (double)h.H;
  const PetscScalar *xs;
  PetscScalar *fa;
  PetscFunctionBeginUser;
  PetscCall(Gather(v, l, x, false));
  PetscCall(VecGetArrayRead(v->x_local, &xs));
  PetscCall(VecGetArray(f, &fa));
  // With one head group the group's queries are exactly the owned tokens.
  double *out = v->grid->Ph == 1 ? fa : v->partial.data();
  std::fill(out, out + t.group.size() * t.d, 0.0);
  PetscCall(PetscLogEventBegin(MFT_KERNELS, 0, 0, 0, 0));
  // Threads over (sequence, chunk of heads) pairs, each chunk's heads in
  // order into its own sum, the chunks' sums added in order: every token's
  // velocity is summed in the same order on any thread count.
  const PetscInt S = t.seqs.size(), J = v->head_chunks;
  auto inactive = [&](PetscInt m) { return v->active && !(*v->active)[m]; }; // not needed by the risk
  const bool keeps = l < (PetscInt)v->kept_layer.size();
  auto cut = [&](PetscInt u) { return t.cut(t.seqs.begin + u / J) >= 0; };
  if (v->query_chunks > 1) { // the keys projected once, then (sequence, head chunk, query chunk) units
    const QueryUnits qu(*v, xs);
    PetscCall(ProjectKeys(qu, l, false, inactive));
    PetscCall(OverUnits(v, S * J * qu.Qc, [&](PetscInt u) { return qu.cut(u); }, [&](PetscInt u, int thread) {
      const PetscInt ml = qu.sequence(u), j = qu.head_chunk(u), m = t.seqs.begin + ml;
      const Range q = qu.queries(m, qu.chunk(u)), heads = split(h.group.size(), J, j);
      if (inactive(m) || q.size() == 0) return;
      AttentionWork &w = v->works[(size_t)thread];
      double *sum = ChunkTokens(*v, out, j) + at(t, m, q.begin);
      if (j > 0) std::fill(sum, sum + q.size() * t.d, 0.0);
      Weigh(*v, m, nullptr, w);
      for (PetscInt hl = heads.begin; hl < heads.end; ++hl) {
        w.statistics = keeps ? statistics_at(*v, l, hl, m, q.begin) : nullptr;
        attention_on_keys(h.shape, h.head(l, hl), v->options, qu.tokens(m) + q.begin * t.d, qu.store(ml, hl),
                          qu.key_count(m), t.N, q, scale, sum, w);
      }
    }));
  } else {
    PetscCall(OverUnits(v, S * J, cut, [&](PetscInt u, int thread) {
      const PetscInt m = t.seqs.begin + u / J, j = u % J;
      if (inactive(m)) return;
      AttentionWork &w = v->works[(size_t)thread];
      const Range q = t.queries(m), heads = split(h.group.size(), J, j);
      const PetscInt c = t.cut(m);
      double *sum = ChunkTokens(*v, out, j) + at(t, m, q.begin);
      if (j > 0) std::fill(sum, sum + q.size() * t.d, 0.0);
      Weigh(*v, m, nullptr, w);
      for (PetscInt hl = heads.begin; hl < heads.end; ++hl) {
        w.statistics = keeps ? statistics_at(*v, l, hl, m, q.begin) : nullptr; // kept for the adjoint
        if (c < 0 || v->form == CutForm::tokens) // the sequence's tokens: held by the group or shared
          attention(h.shape, h.head(l, hl), v->options,
                    c < 0 ? xs + at(t, m, 0) : v->keys.data() + key_block(*v, c, hl), t.N, q, scale, sum, w);
        else
          attention_projected(h.shape, h.head(l, hl), v->options, xs + at(t, m, q.begin),
                              v->keys.data() + key_block(*v, c, hl), v->key_width, t.N, q, scale, sum, w);
      }
    }));
  }
  for (PetscInt j = 1; j < J; ++j)
    for (PetscInt m = t.seqs.begin; m < t.seqs.end; ++m) {
      if (inactive(m)) continue;
      const Range q = t.queries(m);
      const double *sum = ChunkTokens(*v, out, j) + at(t, m, q.begin);
      double *o = out + at(t, m, q.begin);
      for (PetscInt e = 0; e < q.size() * t.d; ++e) o[e] += sum[e];
    }
  if (keeps && !v->kept_keys.empty()) // the shared rows (in: the kernels' second pass waited for them)
    std::copy(v->keys.begin(), v->keys.end(), v->kept_keys.begin() + (std::ptrdiff_t)((size_t)l * v->keys.size()));
  PetscCall(PetscLogEventEnd(MFT_KERNELS, 0, 0, 0, 0));
  PetscCall(PetscLogEventBegin(MFT_EXCHANGE, 0, 0, 0, 0));
  if (v->grid->Ph > 1)
    PetscCall(ReduceScatterSum(v->grid->head_comm, v->partial.data(), t.counts, fa));
  PetscCall(PetscLogEventEnd(MFT_EXCHANGE, 0, 0, 0, 0));
  PetscCall(VecRestoreArray(f, &fa));
  PetscCall(VecRestoreArrayRead(v->x_local, &xs));
  PetscFunctionReturn(0);
}

PetscErrorCode VelocityReverse(Velocity *v, Vec lam, Vec dx) {
  const TokenLayout &t = *v->tokens;
  Heads &h = *v->heads;
  const PetscInt l = v->layer;
  const double scale = 1.0 / (double)h.H;
  const PetscScalar *xs, *ls;
  PetscScalar *ds;
  PetscFunctionBeginUser;
  PetscCheck(l >= 0, PETSC_COMM_SELF, PETSC_ERR_ORDER, "the velocity's reverse needs a prepared state");
  PetscCall(PetscLogEventBegin(MFT_EXCHANGE, 0, 0, 0, 0));
  PetscCall(TokensGather(t, lam, v->lam_local));
  PetscCall(PetscLogEventEnd(MFT_EXCHANGE, 0, 0, 0, 0));
  PetscCall(PetscLogEventBegin(MFT_KERNELS, 0, 0, 0, 0));
  PetscCall(VecSet(v->dx_local, 0.0));
  std::fill(h.layer_grad.begin(), h.layer_grad.end(), 0.0);
  std::fill(v->dkeys.begin(), v->dkeys.end(), 0.0);
  PetscCall(VecGetArrayRead(v->x_local, &xs));
  PetscCall(VecGetArrayRead(v->lam_local, &ls));
  PetscCall(VecGetArray(v->dx_local, &ds));
  auto skip = [&](PetscInt m) { return v->active && !(*v->active)[m]; }; // zero adjoint outside the batch
  std::fill(v->head_partial.begin(), v->head_partial.end(), 0.0);
  std::fill(v->dkeys_partial.begin(), v->dkeys_partial.end(), 0.0);
  if (t.weighted()) { // a copy for each chunk of heads and of queries (velocity.hpp)
    const size_t n = (size_t)t.seqs.size() * (size_t)t.N;
    v->layer_weight_grad.resize(n);
    v->weight_parts.assign(n * (size_t)(v->head_chunks * v->query_chunks), 0.0);
  }
  if (v->query_chunks > 1) PetscCall(ReverseByQueries(v, l, xs, ls, ds, scale, skip));
  else PetscCall(ReverseByChunks(v, l, xs, ls, ds, scale, skip));
  SumReverseChunks(v, ds);
  PetscCall(PetscLogEventEnd(MFT_KERNELS, 0, 0, 0, 0));
  if (!t.cuts.empty()) PetscCall(ReverseCutRows(v, l, xs, ds, skip));
  PetscCall(VecRestoreArray(v->dx_local, &ds));
  PetscCall(VecRestoreArrayRead(v->lam_local, &ls));
  PetscCall(VecRestoreArrayRead(v->x_local, &xs));
  PetscCall(PetscLogEventBegin(MFT_EXCHANGE, 0, 0, 0, 0));
  // Every rank of the group that saw token j as a key or query adds its part.
  PetscCall(TokensScatterAdd(t, v->dx_local, dx));
  PetscCall(PetscLogEventEnd(MFT_EXCHANGE, 0, 0, 0, 0));
  v->grad_layer = l;
  ++v->sweeps;
  PetscCall(PetscObjectGetId((PetscObject)lam, &v->grad_id));
  PetscCall(PetscObjectStateGet((PetscObject)lam, &v->grad_state));
  PetscFunctionReturn(0);
}

PetscErrorCode VelocityReverseParameters(Velocity *v, Vec lam, double weight) {
  Heads &h = *v->heads;
  PetscObjectId id;
  PetscObjectState state;
  PetscFunctionBeginUser;
  PetscCall(PetscObjectGetId((PetscObject)lam, &id));
  PetscCall(PetscObjectStateGet((PetscObject)lam, &state));
  if (v->grad_layer != v->layer || id != v->grad_id || state != v->grad_state)
    PetscCall(VelocityReverse(v, lam, v->scratch));
  // This rank's part, summed over the token groups in buckets of layers (heads.hpp).
  double *g = h.grad.data() + v->layer * h.group.size() * h.shape.size;
  for (size_t e = 0; e < h.layer_grad.size(); ++e) g[e] += weight * h.layer_grad[e];
  PetscFunctionReturn(0);
}

} // namespace mft
