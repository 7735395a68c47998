// The MLP sublayer: blocks of owned tokens through a layer's neurons, forward and reverse.
#include "mft/flow/mlp.hpp"

#include "mft/kernels/activation.hpp"
#include "mft/kernels/linalg.hpp"
#include "mft/layout/events.hpp"

#include <algorithm>

namespace mft {

void MlpCreate(Neurons *n, Mlp *mlp) {
  EventsRegister();
  mlp->neurons = n;
  mlp->d = n->d;
  const size_t block = (size_t)(kMlpRows * n->per_model());
  mlp->z.assign(block, 0.0), mlp->s.assign(block, 0.0), mlp->g.assign(block, 0.0);
  mlp->ut.assign((size_t)(n->d * n->per_model()), 0.0), mlp->wt.assign(mlp->ut.size(), 0.0);
  mlp->bias.assign((size_t)n->per_model(), 0.0);
  mlp->layer_grad.assign((size_t)(n->m * n->size()), 0.0);
}

void MlpCreateExpected(const ModelSettings &m, const InitSettings &s, Mlp *mlp) {
  mlp->neurons = nullptr;
  mlp->activation = m.mlp_activation;
  mlp->d = m.d;
  mlp->u2 = s.mlp_u_gain * s.mlp_u_gain / (double)m.d, mlp->b2 = s.mlp_b_gain * s.mlp_b_gain;
  mlp->w_mean = s.mlp_w_mean;
}

namespace {

// The expected drift (MlpCreateExpected) on the owned tokens of y: f += it, or
// with lam, out = its transpose applied to lam.
PetscErrorCode Expected(const Mlp &mlp, Vec y, Vec f, Vec lam, Vec out) {
  const PetscScalar *ys, *ls = nullptr;
  PetscScalar *fs;
  PetscInt size;
  const PetscInt d = mlp.d;
  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(y, &size));
  PetscCall(VecGetArrayRead(y, &ys));
  if (lam) PetscCall(VecGetArrayRead(lam, &ls));
  PetscCall(VecGetArray(lam ? out : f, &fs));
  for (PetscInt o = 0; o < size; o += d) {
    double r = 0, sum = 0;
    for (PetscInt c = 0; c < d; ++c) r += ys[o + c] * ys[o + c], sum += lam ? ls[o + c] : 0.0;
    const double pp = mlp.u2 * r + mlp.b2;
    if (!lam) {
      const double drift = mlp.w_mean * ActivationMean(mlp.activation, pp);
      for (PetscInt c = 0; c < d; ++c) fs[o + c] += drift;
      continue;
    }
    const double slope = pp > 0 ? mlp.w_mean * sum * ActivationMeanSlope(mlp.activation, pp) * 2 * mlp.u2 : 0.0;
    for (PetscInt c = 0; c < d; ++c) fs[o + c] = slope * ys[o + c];
  }
  PetscCall(VecRestoreArray(lam ? out : f, &fs));
  if (lam) PetscCall(VecRestoreArrayRead(lam, &ls));
  PetscCall(VecRestoreArrayRead(y, &ys));
  PetscFunctionReturn(0);
}

// The layer's neurons j0 .. j0 + w - 1 of layer l as the products want
// them: U^T and W^T (d x w, contiguous) and the biases, so that every
// product is a plain one (the small-product path takes no transposed right
// factor).
void Transposes(Mlp *mlp, PetscInt l, PetscInt j0, PetscInt w) {
  const Neurons &n = *mlp->neurons;
  const PetscInt d = n.d;
  for (PetscInt j = 0; j < w; ++j) {
    const double *u = n.neuron(l, j0 + j);
    for (PetscInt c = 0; c < d; ++c) mlp->ut[(size_t)(c * w + j)] = u[c], mlp->wt[(size_t)(c * w + j)] = u[d + 1 + c];
    mlp->bias[(size_t)j] = u[d];
  }
}

// Z = Y U^T + b for the R tokens Y (R x d) through the w neurons Transposes
// made, then S' = scale sigma(Z) and, with `slopes`, scale sigma'(Z) in Z's
// place. relu and the identity in one pass over Z; the others through
// ActivateAll (whose slope formulas read Z: the slopes go to g first).
void PreActivations(Mlp *mlp, PetscInt w, const double *Y, PetscInt R, bool slopes) {
  const PetscInt d = mlp->d, n = R * w;
  const double scale = mlp->neurons->scale;
  const Activation a = mlp->neurons->activation;
  double *z = mlp->z.data(), *s = mlp->s.data();
  gemm(false, false, R, w, d, 1.0, Y, d, mlp->ut.data(), w, 0.0, z, w);
  if (a == Activation::relu || a == Activation::identity) {
    const bool relu = a == Activation::relu;
    for (PetscInt i = 0; i < R; ++i)
      for (PetscInt j = 0; j < w; ++j) {
        const double v = z[i * w + j] + mlp->bias[(size_t)j], open = !relu || v > 0 ? 1.0 : 0.0;
        s[i * w + j] = scale * (open * v);
        if (slopes) z[i * w + j] = scale * open;
      }
    return;
  }
  for (PetscInt i = 0; i < R; ++i)
    for (PetscInt j = 0; j < w; ++j) z[i * w + j] += mlp->bias[(size_t)j];
  ActivateAll(a, z, n, s, slopes ? mlp->g.data() : nullptr);
  for (PetscInt e = 0; e < n; ++e) s[e] *= scale;
  if (slopes)
    for (PetscInt e = 0; e < n; ++e) z[e] = scale * mlp->g[(size_t)e];
}

// The blocks of the owned tokens: for each model, `model(s)` then its blocks
// (model, first token, tokens) in order, each within that model's tokens (an
// ensemble's model s holds the s-th part of them and its own neurons).
template <class Model, class Visit> void ForBlocks(const Neurons &n, PetscInt tokens, Model model, Visit visit) {
  const PetscInt each = tokens / n.models;
  for (PetscInt s = 0; s < n.models; ++s) {
    model(s);
    for (PetscInt i0 = 0; i0 < each; i0 += kMlpRows) visit(s, s * each + i0, std::min(kMlpRows, each - i0));
  }
}

} // namespace

PetscErrorCode MlpEvaluate(Mlp *mlp, PetscInt l, Vec y, Vec f) {
  if (!mlp->neurons) return Expected(*mlp, y, f, nullptr, nullptr);
  const Neurons &n = *mlp->neurons;
  const PetscInt w = n.per_model(), d = n.d, E = n.size();
  const PetscScalar *ys;
  PetscScalar *fs;
  PetscInt size;
  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MFT_MLP, 0, 0, 0, 0));
  PetscCall(VecGetLocalSize(y, &size));
  PetscCall(VecGetArrayRead(y, &ys));
  PetscCall(VecGetArray(f, &fs));
  ForBlocks(
      n, size / d, [&](PetscInt s) { Transposes(mlp, l, s * w, w); },
      [&](PetscInt s, PetscInt i0, PetscInt R) {
        PreActivations(mlp, w, ys + i0 * d, R, false);
        gemm(false, false, R, d, w, 1.0, mlp->s.data(), w, n.neuron(l, s * w) + d + 1, E, 1.0, fs + i0 * d, d);
      });
  PetscCall(VecRestoreArray(f, &fs));
  PetscCall(VecRestoreArrayRead(y, &ys));
  PetscCall(PetscLogEventEnd(MFT_MLP, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

PetscErrorCode MlpReverse(Mlp *mlp, PetscInt l, Vec y, Vec lam, Vec dy) {
  if (!mlp->neurons) return Expected(*mlp, y, nullptr, lam, dy);
  const Neurons &n = *mlp->neurons;
  const PetscInt w = n.per_model(), d = n.d, E = n.size();
  const PetscScalar *ys, *ls;
  PetscScalar *out;
  PetscInt size;
  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MFT_MLP, 0, 0, 0, 0));
  std::fill(mlp->layer_grad.begin(), mlp->layer_grad.end(), 0.0);
  PetscCall(VecGetLocalSize(y, &size));
  PetscCall(VecGetArrayRead(y, &ys));
  PetscCall(VecGetArrayRead(lam, &ls));
  PetscCall(VecGetArray(dy, &out));
  ForBlocks(
      n, size / d, [&](PetscInt s) { Transposes(mlp, l, s * w, w); },
      [&](PetscInt s, PetscInt i0, PetscInt R) {
        const double *Y = ys + i0 * d, *Lam = ls + i0 * d, *U = n.neuron(l, s * w);
        double *gU = mlp->layer_grad.data() + s * w * E, *gW = gU + d + 1, *G = mlp->g.data();
        const double *slope = mlp->z.data(); // scale sigma'(Z), in Z's place
        PreActivations(mlp, w, Y, R, true);
        // With S' = scale S: dW += S'^T Lam; G = (Lam W^T) . scale sigma'(Z); db += G^T 1; dY = G U; dU += G^T Y.
        gemm(true, false, w, d, R, 1.0, mlp->s.data(), w, Lam, d, 1.0, gW, E);
        gemm(false, false, R, w, d, 1.0, Lam, d, mlp->wt.data(), w, 0.0, G, w);
        for (PetscInt i = 0; i < R; ++i)
          for (PetscInt j = 0; j < w; ++j) gU[j * E + d] += (G[i * w + j] *= slope[i * w + j]);
        gemm(false, false, R, d, w, 1.0, G, w, U, E, 0.0, out + i0 * d, d);
        gemm(true, false, w, d, R, 1.0, G, w, Y, d, 1.0, gU, E);
      });
  PetscCall(VecRestoreArray(dy, &out));
  PetscCall(VecRestoreArrayRead(lam, &ls));
  PetscCall(VecRestoreArrayRead(y, &ys));
  mlp->layer = l;
  PetscCall(PetscLogEventEnd(MFT_MLP, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

void MlpReverseParameters(Mlp *mlp, double weight) {
  if (!mlp->neurons) return; // the expected drift has no parameters
  Neurons &n = *mlp->neurons;
  double *g = n.grad.data() + (size_t)(mlp->layer * n.m * n.size());
  for (size_t e = 0; e < mlp->layer_grad.size(); ++e) g[e] += weight * mlp->layer_grad[e];
}

} // namespace mft
