// An ensemble's velocity and its reverse (velocity.hpp, `seeds`): units of
// kLanes models and one sequence, each model's heads in order, on the lanes
// kernels; the models' tokens and heads put into lanes and back per unit.
#include "mft/flow/velocity.hpp"
#include "mft/flow/velocity_units.hpp"

#include <algorithm>

namespace mft::units {

namespace {

// The models of group g: their count, and per lane where their sequence m's
// rows start in a rank array of n numbers a token (null for a lane without a
// model, or whose sequence is outside the batch).
struct SeedsGroup {
  const Velocity &v;
  PetscInt g, M, H, models;
  SeedsGroup(const Velocity &v_, PetscInt g_)
      : v(v_), g(g_), M(v_.tokens->M / v_.seeds), H(v_.heads->group.size() / v_.seeds),
        models(std::min(kLanes, v_.seeds - g_ * kLanes)) {}
  PetscInt model(PetscInt w) const { return g * kLanes + w; }
  bool active(PetscInt w, PetscInt m) const {
    return w < models && (!v.active || (*v.active)[model(w) * M + m]);
  }
  bool any(PetscInt m) const {
    for (PetscInt w = 0; w < models; ++w)
      if (active(w, m)) return true;
    return false;
  }
  template <class T> void rows(T *a, PetscInt m, PetscInt n, T **at) const {
    for (PetscInt w = 0; w < kLanes; ++w)
      at[w] = active(w, m) ? a + ((model(w) * M + m) * v.tokens->N) * n : nullptr;
  }
  // Head h of every model of the group into lanes (the heads' row of layer l).
  void heads(PetscInt l, PetscInt h, double *lanes) const {
    const double *src[kLanes];
    for (PetscInt w = 0; w < kLanes; ++w) src[w] = w < models ? v.heads->head(l, model(w) * H + h) : nullptr;
    lanes_gather(src, v.heads->shape.size, lanes);
  }
  const double *weights(PetscInt m) const { return v.tokens->sequence_weights(model(0) * M + m); }
};

// Runs body(group, buffers) for every group of models, threads over them.
template <class Body> PetscErrorCode OverGroups(Velocity *v, Body body) {
  PetscFunctionBeginUser;
  const PetscInt groups = (v->seeds + kLanes - 1) / kLanes;
  units::ForThreads(v->threads, groups, [&](PetscInt g, int thread) { body(SeedsGroup(*v, g), v->seeds_buffers[(size_t)thread]); });
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode SeedsForward(Velocity *v, PetscInt l, const double *xs, double *out) {
  const HeadShape &sh = v->heads->shape;
  const PetscInt N = v->tokens->N, d = v->tokens->d, n = N * d;
  PetscFunctionBeginUser;
  PetscCall(OverGroups(v, [&](const SeedsGroup &G, Velocity::SeedsBuffers &b) {
    for (PetscInt h = 0; h < G.H; ++h) G.heads(l, h, b.heads.data() + h * sh.size * kLanes);
    const double *src[kLanes];
    double *dst[kLanes];
    for (PetscInt m = 0; m < G.M; ++m) {
      if (!G.any(m)) continue;
      G.rows(xs, m, d, src);
      G.rows(out, m, d, dst);
      lanes_gather(src, n, b.x.data());
      std::fill(b.out.begin(), b.out.begin() + n * kLanes, 0.0);
      for (PetscInt h = 0; h < G.H; ++h)
        attention_seeds(sh, b.heads.data() + h * sh.size * kLanes, v->options, b.x.data(), N, v->scale, G.weights(m),
                        b.out.data(), b.work);
      lanes_scatter(b.out.data(), n, dst, false);
    }
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode SeedsReverse(Velocity *v, PetscInt l, const double *xs, const double *ls, double *ds) {
  const TokenLayout &t = *v->tokens;
  Heads &hd = *v->heads;
  const HeadShape &sh = hd.shape;
  const PetscInt N = t.N, d = t.d, n = N * d;
  PetscFunctionBeginUser;
  if (t.weighted()) v->layer_weight_grad.assign((size_t)t.seqs.size() * (size_t)N, 0.0);
  PetscCall(OverGroups(v, [&](const SeedsGroup &G, Velocity::SeedsBuffers &b) {
    for (PetscInt h = 0; h < G.H; ++h) G.heads(l, h, b.heads.data() + h * sh.size * kLanes);
    std::fill(b.dheads.begin(), b.dheads.end(), 0.0);
    const double *src[kLanes];
    double *dst[kLanes];
    for (PetscInt m = 0; m < G.M; ++m) {
      if (!G.any(m)) continue;
      G.rows(xs, m, d, src);
      lanes_gather(src, n, b.x.data());
      G.rows(ls, m, d, src);
      lanes_gather(src, n, b.lam.data());
      std::fill(b.out.begin(), b.out.begin() + n * kLanes, 0.0);
      const double *weights = G.weights(m);
      if (weights) std::fill(b.weight_grad.begin(), b.weight_grad.begin() + N * kLanes, 0.0);
      for (PetscInt h = 0; h < G.H; ++h)
        attention_seeds_reverse(sh, b.heads.data() + h * sh.size * kLanes, v->options, b.x.data(), N, v->scale,
                                weights, b.lam.data(), b.out.data(), b.dheads.data() + h * sh.size * kLanes,
                                weights ? b.weight_grad.data() : nullptr, b.work);
      G.rows(ds, m, d, dst);
      lanes_scatter(b.out.data(), n, dst, false);
      if (!weights) continue;
      G.rows(v->layer_weight_grad.data(), m, 1, dst);
      lanes_scatter(b.weight_grad.data(), N, dst, false);
    }
    for (PetscInt h = 0; h < G.H; ++h) { // each model's heads' gradients, summed over its sequences in order
      for (PetscInt w = 0; w < kLanes; ++w)
        dst[w] = w < G.models ? hd.layer_grad.data() + (G.model(w) * G.H + h) * sh.size : nullptr;
      lanes_scatter(b.dheads.data() + h * sh.size * kLanes, sh.size, dst, false);
    }
  }));
  PetscFunctionReturn(0);
}

} // namespace mft::units
