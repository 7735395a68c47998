// The units a rank's kernels run over, shared by the velocity's forward
// (velocity.cpp) and its reverse (velocity_reverse.cpp): where a unit's
// tokens, keys, statistics and copies are (velocity.hpp says which copies
// and why), the two passes over the units while the cut sequences' rows
// travel, and the threads over a sequence's queries. Not an interface of the
// velocity: the names live in mft::units.
#pragma once

#include "mft/flow/velocity.hpp"

#include <omp.h>

namespace mft::units {

// The first entry of flat token j in the group's gathered tokens.
// Not collective, as are the other inline places below.
inline PetscInt at(const TokenLayout &t, PetscInt m, PetscInt i) { return (m * t.N + i - t.group.begin) * t.d; }

// Where the statistics of layer l, local head hl, from query i of sequence m
// go (null when none are kept).
// Not collective.
inline double *statistics_at(Velocity &v, PetscInt l, PetscInt hl, PetscInt m, PetscInt i) {
  if (v.statistics.empty()) return nullptr;
  const TokenLayout &t = *v.tokens;
  const std::ptrdiff_t row = ((std::ptrdiff_t)l * v.heads->group.size() + hl) * t.group.size() + m * t.N + i -
                             t.group.begin;
  return v.statistics.data() + row * attention_statistics_width(v.heads->shape);
}

// The rows of cut c: its whole sequence's tokens, or local head hl's projections.
// (64-bit: the rows of a long cut sequence can pass 2^31 numbers).
// Not collective.
inline std::ptrdiff_t key_block(const Velocity &v, PetscInt c, PetscInt hl) {
  const std::ptrdiff_t first = (std::ptrdiff_t)c * v.tokens->N * v.key_width;
  return v.form == CutForm::tokens ? first : first + hl * (v.heads->shape.k + v.heads->shape.dv);
}

// Where head chunk j (velocity.hpp) sums its heads' contributions to the
// group's tokens: `first` (the result) for chunk 0, else its own copy; and
// to the cut rows' gradients: dkeys, or in the tokens form its own copy.
// Not collective.
inline double *ChunkTokens(Velocity &v, double *first, PetscInt j) {
  return j == 0 ? first
                : v.head_partial.data() + (size_t)(j - 1) * (size_t)v.tokens->group.size() * (size_t)v.tokens->d;
}
inline double *ChunkKeys(Velocity &v, PetscInt j) {
  return j == 0 || v.form != CutForm::tokens ? v.dkeys.data() : v.dkeys_partial.data() + (size_t)(j - 1) * v.dkeys.size();
}

// A kernel's weighted keys for sequence m (AttentionWork::weights), and in
// the reverse where its weights' gradient goes: copy `part` of the local
// sequence's N tokens (null: unweighted, or the forward).
// Not collective.
inline void Weigh(const Velocity &v, PetscInt m, double *grad, AttentionWork &w) {
  w.weights = v.tokens->sequence_weights(m);
  w.weight_grad = grad;
}
inline double *WeightPart(Velocity &v, PetscInt part, PetscInt m) {
  const TokenLayout &t = *v.tokens;
  if (!t.weighted()) return nullptr;
  return v.weight_parts.data() + ((size_t)part * (size_t)t.seqs.size() + (size_t)(m - t.seqs.begin)) * (size_t)t.N;
}

// Runs f(i, thread) for i in [0, n): over `threads` OpenMP threads (dynamic,
// one at a time), or in the calling thread alone when threads is 1 (a region
// of one thread still costs libgomp a futex wake per call: a fifth of the
// limit's paths' time, one velocity a step). Not collective.
template <class F> inline void ForThreads(PetscInt threads, PetscInt n, F f) {
  if (threads <= 1) {
    for (PetscInt i = 0; i < n; ++i) f(i, 0);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (PetscInt i = 0; i < n; ++i) f(i, omp_get_thread_num());
}

// The cut sequences' rows are in (the second pass of the kernels needs them).
// Collective on the grid's comm (TokensShareCutRowsEnd).
PetscErrorCode RowsArrived(Velocity *v);

// The kernels in two passes: first the units whose sequences the group holds
// whole (`cut` false), while the cut sequences' rows travel, the main thread
// asking MPI to move them between units; then, the rows in, the others. A
// unit's sums are its own (velocity.hpp), so the order of the units changes
// no result. body(u) runs unit u; cut(u) says whether it needs the rows.
// Collective on the grid's comm, as RowsArrived, when a unit is cut.
template <class Cut, class Body>
inline PetscErrorCode OverUnits(Velocity *v, PetscInt units, Cut cut, Body body) {
  PetscErrorCode progress = 0;
  PetscFunctionBeginUser;
  const int passes = v->tokens->cuts.empty() ? 1 : 2;
  for (int pass = 0; pass < passes; ++pass) {
    if (pass == 1) { // (the kernels' event is open around this: the wait is the exchange's)
      PetscCall(PetscLogEventEnd(MFT_KERNELS, 0, 0, 0, 0));
      PetscCall(RowsArrived(v));
      PetscCall(PetscLogEventBegin(MFT_KERNELS, 0, 0, 0, 0));
    }
    ForThreads(v->threads, units, [&](PetscInt u, int thread) {
      if (passes == 2 && cut(u) != (pass == 1)) return;
      if (pass == 0 && passes == 2 && thread == 0 && !progress)
        progress = TokensShareCutRowsProgress(&v->sharing); // the main thread: MPI_THREAD_FUNNELED
      body(u, thread);
    });
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
// Not collective.
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

// An ensemble's forward (out: the velocity of the rank's tokens, zero where
// inactive) and reverse (ds: (df/dx)^T lam; the heads' layer_grad; with
// weighted tokens layer_weight_grad), over its (group, sequence) units
// (velocity_seeds.cpp). Not collective: an ensemble's problem is one rank's.
PetscErrorCode SeedsForward(Velocity *v, PetscInt l, const double *xs, double *out);
PetscErrorCode SeedsReverse(Velocity *v, PetscInt l, const double *xs, const double *ls, double *ds);

} // namespace mft::units
