// Mean-field velocity: the forward's head-group partial sums and reductions,
// the state the adjoint keeps (the reverse: velocity_reverse.cpp).
#include "mft/flow/velocity.hpp"

#include "mft/flow/velocity_units.hpp"
#include "mft/layout/exchange.hpp"

// PetscObjectStateGet is public API, but 3.18 declares it in this header only.
#include <petsc/private/petscimpl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <omp.h>
#include <cstring>

namespace mft {

using namespace units;

PetscErrorCode VelocityCreate(const Grid &g, const TokenLayout &t, Heads *h, const ModelSettings &m, CutForm form,
                              PetscInt threads, Velocity *v, PetscInt seeds) {
  PetscFunctionBeginUser;
  PetscCall(EventsRegister());
  v->grid = &g;
  v->tokens = &t;
  v->heads = h;
  v->options.beta = LogitScale(m);
  v->options.causal = m.causal;
  v->scale = HeadSumScale(m, m.L, m.H);
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
  v->seeds = seeds;
  if (seeds > 0) { // an ensemble: its own units and buffers, none of the rest
    PetscCheck(g.size == 1, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "an ensemble's problem is one rank's");
    v->seeds_buffers.resize((size_t)v->threads);
    const size_t lanes = (size_t)kLanes, n = (size_t)(t.N * t.d) * lanes, heads = (size_t)(h->group.size() / seeds);
    for (Velocity::SeedsBuffers &b : v->seeds_buffers) {
      b.work.reserve(h->shape, t.N);
      b.x.assign(n, 0.0), b.lam.assign(n, 0.0), b.out.assign(n, 0.0), b.weight_grad.assign((size_t)t.N * lanes, 0.0);
      b.heads.assign(heads * (size_t)h->shape.size * lanes, 0.0), b.dheads.assign(b.heads.size(), 0.0);
    }
    PetscFunctionReturn(0);
  }
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
    v->projected.assign((size_t)(t.seqs.size() * h->group.size()) * (size_t)attention_keys_size(h->shape, t.N),
                        0.0); // kappa, w and their transposes
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

PetscErrorCode VelocityKeep(Velocity *v, PetscInt L) {
  const TokenLayout &t = *v->tokens;
  const Heads &h = *v->heads;
  PetscFunctionBeginUser;
  if (v->seeds > 0) { // the lanes kernels keep no statistics, and the gather is a copy: nothing is kept
    v->forwards = false;
    PetscFunctionReturn(0);
  }
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

// x_local <- the group's tokens of x (from the forward's copy when `reuse` and
// one is kept for layer l; the forward keeps its own), then the cut
// sequences' rows: made and their share started, or, for the adjoint of a
// forward that kept them, the forward's.
PetscErrorCode Gather(Velocity *v, PetscInt l, Vec x, bool reuse) {
  const TokenLayout &t = *v->tokens;
  const Heads &h = *v->heads;
  const PetscInt n = t.group.size() * t.d;
  // (An ensemble's state is its rank's own: gathered by a copy, nothing kept.)
  const bool keeping = v->seeds == 0 && l < (PetscInt)v->kept_layer.size();
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

} // namespace

PetscErrorCode VelocityPrepare(Velocity *v, PetscInt l, Vec x) {
  PetscFunctionBeginUser;
  PetscCall(Gather(v, l, x, true));
  PetscFunctionReturn(0);
}

namespace {

// The kernels of layer l over the group's units, into out (the group's
// queries): threads over (sequence, chunk of heads) pairs, or (sequence,
// chunk of heads, chunk of queries) with the keys projected once; each
// chunk's heads in order into its own sum, the chunks' sums added in order:
// every token's velocity is summed in the same order on any thread count.
PetscErrorCode ForwardUnits(Velocity *v, PetscInt l, const double *xs, double *out) {
  const TokenLayout &t = *v->tokens;
  const Heads &h = *v->heads;
  const double scale = v->scale;
  const PetscInt S = t.seqs.size(), J = v->head_chunks;
  auto inactive = [&](PetscInt m) { return v->active && !(*v->active)[m]; }; // not needed by the risk
  const bool keeps = l < (PetscInt)v->kept_layer.size();
  auto cut = [&](PetscInt u) { return t.cut(t.seqs.begin + u / J) >= 0; };
  PetscFunctionBeginUser;
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
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode VelocityEvaluate(Velocity *v, PetscInt l, Vec x, Vec f) {
  const TokenLayout &t = *v->tokens;
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
  if (v->seeds > 0) PetscCall(SeedsForward(v, l, xs, out)); // an ensemble's units
  else PetscCall(ForwardUnits(v, l, xs, out));
  PetscCall(PetscLogEventEnd(MFT_KERNELS, 0, 0, 0, 0));
  PetscCall(PetscLogEventBegin(MFT_EXCHANGE, 0, 0, 0, 0));
  if (v->grid->Ph > 1)
    PetscCall(ReduceScatterSum(v->grid->head_comm, v->partial.data(), t.counts, fa));
  PetscCall(PetscLogEventEnd(MFT_EXCHANGE, 0, 0, 0, 0));
  PetscCall(VecRestoreArray(f, &fa));
  PetscCall(VecRestoreArrayRead(v->x_local, &xs));
  PetscFunctionReturn(0);
}

} // namespace mft
