// The velocity's reverse: one sweep per layer gives (df/dx)^T lam with its
// mean-field term, the layer's head gradients (df/dtheta)^T lam, and with
// weighted tokens (df/dw)^T lam (velocity.hpp).
#include "mft/flow/velocity.hpp"
#include "mft/flow/velocity_units.hpp"

// PetscObjectStateGet is public API, but 3.18 declares it in this header only.
#include <petsc/private/petscimpl.h>

#include <algorithm>

namespace mft {

using namespace units;

namespace {

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

PetscErrorCode VelocityReverse(Velocity *v, Vec lam, Vec dx) {
  const TokenLayout &t = *v->tokens;
  Heads &h = *v->heads;
  const PetscInt l = v->layer;
  const double scale = v->scale;
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
  if (t.weighted() && v->seeds == 0) { // a copy for each chunk of heads and of queries (velocity.hpp)
    const size_t n = (size_t)t.seqs.size() * (size_t)t.N;
    v->layer_weight_grad.resize(n);
    v->weight_parts.assign(n * (size_t)(v->head_chunks * v->query_chunks), 0.0);
  }
  if (v->seeds > 0) PetscCall(SeedsReverse(v, l, xs, ls, ds));
  else if (v->query_chunks > 1) PetscCall(ReverseByQueries(v, l, xs, ls, ds, scale, skip));
  else PetscCall(ReverseByChunks(v, l, xs, ls, ds, scale, skip));
  if (v->seeds == 0) SumReverseChunks(v, ds);
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
