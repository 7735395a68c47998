// gd, AdamW and blockwise AdamW on the owned heads of theta.
#include "mft/flow/optimizer.hpp"

#include <algorithm>
#include <cmath>

namespace mft {

namespace {

// The moments of theta for o->kind: m, and v per entry or per block of `units` units (`total` over the ranks).
PetscErrorCode Moments(Optimizer *o, Vec theta, PetscInt total) {
  PetscFunctionBeginUser;
  if (o->kind == OptimizerKind::gd) PetscFunctionReturn(0);
  PetscCall(VecDuplicate(theta, &o->m));
  PetscCall(VecSet(o->m, 0.0));
  if (o->kind == OptimizerKind::adamw) PetscCall(VecDuplicate(theta, &o->v));
  else
    PetscCall(VecCreateMPI(PetscObjectComm((PetscObject)theta), o->heads * (PetscInt)o->blocks.size(),
                           total * (PetscInt)o->blocks.size(), &o->v));
  PetscCall(VecSet(o->v, 0.0));
  PetscFunctionReturn(0);
}

// The neurons' optimizer: blocks u, b, w at lr L^-x' m^-y'.
PetscErrorCode NeuronOptimizer(const Settings &all, const Neurons &n, Optimizer *o) {
  const TrainSettings &s = all.train;
  PetscInt owned;
  PetscFunctionBeginUser;
  o->settings = s;
  o->kind = s.optimizer;
  o->rate_scale = std::pow((double)n.L, -s.mlp_lr_depth_exponent) *
                  std::pow((double)n.per_model(), -s.mlp_lr_width_exponent);
  const double m = (double)n.per_model();
  const std::array<double, 3> &e = s.mlp_block_lr_exponents;
  auto factor = [&](size_t b) { return e[b] == 0 ? 1.0 : std::pow(m, -e[b]); };
  o->blocks = {{0, n.d, factor(0)}, {n.d, 1, factor(1)}, {n.d + 1, n.d, factor(2)}};
  o->unit = n.size();
  PetscCall(VecGetLocalSize(n.theta, &owned));
  o->heads = owned / o->unit;
  o->step = 0;
  PetscCall(Moments(o, n.theta, n.L * n.m));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode OptimizerCreate(const Settings &all, const Heads &h, Optimizer *o, const Neurons *n) {
  const TrainSettings &s = all.train;
  PetscFunctionBeginUser;
  if (n && n->theta) {
    o->mlp = new Optimizer;
    PetscCall(NeuronOptimizer(all, *n, o->mlp));
  }
  o->settings = s;
  o->kind = s.optimizer;
  o->block_scale = {1, 1, 1, 1};
  if (h.infinite) { // gradient descent's limit: W = K at (q_gain^2 + k_gain^2) / d, at g = 1/2; Q = I stays
    const double q = all.init.q_gain, k = all.init.k_gain;
    o->block_scale = {0, h.logit_exponent == 0.5 ? (q * q + k * k) / (double)h.shape.d : 0, 1, 1};
  }
  o->rate_scale = 1;
  if (s.lr_depth_exponent != 0) o->rate_scale *= std::pow((double)all.model.L, -s.lr_depth_exponent);
  if (s.lr_head_exponent != 0) o->rate_scale *= std::pow((double)all.model.H, -s.lr_head_exponent);
  o->blocks.clear();
  for (PetscInt b = 0; b < h.shape.blocks(); ++b) {
    const double e = s.block_lr_exponents[(size_t)b];
    o->blocks.push_back({h.shape.block_offset(b), h.shape.block_rows(b) * h.shape.block_cols(b),
                         (e == 0 ? 1.0 : std::pow((double)h.shape.k, -e)) * o->block_scale[(size_t)b]});
  }
  o->unit = h.shape.size;
  o->heads = h.owned.size();
  o->step = 0;
  PetscCall(Moments(o, h.theta, h.L * h.H));
  PetscFunctionReturn(0);
}

PetscErrorCode OptimizerDestroy(Optimizer *o) {
  PetscFunctionBeginUser;
  if (o->mlp) {
    PetscCall(OptimizerDestroy(o->mlp));
    delete o->mlp;
    o->mlp = nullptr;
  }
  PetscCall(VecDestroy(&o->m));
  PetscCall(VecDestroy(&o->v));
  PetscFunctionReturn(0);
}

double learning_rate(const TrainSettings &s, PetscInt step) {
  if (step < s.warmup) return s.lr * (double)(step + 1) / (double)s.warmup;
  if (s.schedule == Schedule::constant) return s.lr;
  const PetscInt span = s.steps - s.warmup;
  const double progress = span > 1 ? (double)(step - s.warmup) / (double)(span - 1) : 1.0;
  return s.lr_min + 0.5 * (s.lr - s.lr_min) * (1.0 + std::cos(M_PI * std::fmin(progress, 1.0)));
}

double OptimizerRate(const Optimizer &o, PetscInt step) { return learning_rate(o.settings, step) * o.rate_scale; }

PetscErrorCode OptimizerStep(Optimizer *o, Vec theta, Vec g) {
  const TrainSettings &s = o->settings;
  const double lr = OptimizerRate(*o, o->step);
  PetscFunctionBeginUser;
  const PetscInt nb = (PetscInt)o->blocks.size();
  std::vector<double> rate((size_t)nb); // per block: lr times its factor
  bool scaled = false;
  for (PetscInt b = 0; b < nb; ++b) {
    const double factor = o->blocks[(size_t)b].factor;
    rate[(size_t)b] = factor == 1 ? lr : lr * factor;
    scaled = scaled || factor != 1;
  }
  const bool frozen = std::find(o->frozen.begin(), o->frozen.end(), 1) != o->frozen.end();
  if (o->kind == OptimizerKind::gd && !scaled && !frozen) {
    PetscCall(VecAXPY(theta, -lr, g));
    ++o->step;
    PetscFunctionReturn(0);
  }
  const double t = (double)(o->step + 1);
  const double c1 = 1.0 - std::pow(s.beta1, t), c2 = 1.0 - std::pow(s.beta2, t);
  PetscScalar *th, *m, *v;
  const PetscScalar *ga;
  PetscCall(VecGetArray(theta, &th));
  PetscCall(VecGetArrayRead(g, &ga));
  if (o->kind == OptimizerKind::gd) m = v = nullptr;
  else {
    PetscCall(VecGetArray(o->m, &m));
    PetscCall(VecGetArray(o->v, &v));
  }
  for (PetscInt h = 0; h < o->heads; ++h)
    for (PetscInt b = 0; b < nb && !(frozen && o->frozen[(size_t)h]); ++b) {
      const PetscInt n = o->blocks[(size_t)b].size, off = h * o->unit + o->blocks[(size_t)b].offset;
      if (!m) { // gd with per-block rates
        for (PetscInt e = off; e < off + n; ++e) th[e] -= rate[b] * ga[e];
        continue;
      }
      double *vb = nullptr;
      if (o->kind == OptimizerKind::adamw_block) {
        double g2 = 0;
        for (PetscInt e = off; e < off + n; ++e) g2 += ga[e] * ga[e];
        vb = &v[h * nb + b];
        *vb = s.beta2 * *vb + (1.0 - s.beta2) * g2 / (double)n;
      }
      for (PetscInt e = off; e < off + n; ++e) {
        m[e] = s.beta1 * m[e] + (1.0 - s.beta1) * ga[e];
        double ve;
        if (vb) ve = *vb;
        else ve = v[e] = s.beta2 * v[e] + (1.0 - s.beta2) * ga[e] * ga[e];
        th[e] -= rate[b] * ((m[e] / c1) / (std::sqrt(ve / c2) + s.eps) + s.weight_decay * th[e]);
      }
    }
  if (m) {
    PetscCall(VecRestoreArray(o->v, &v));
    PetscCall(VecRestoreArray(o->m, &m));
  }
  PetscCall(VecRestoreArrayRead(g, &ga));
  PetscCall(VecRestoreArray(theta, &th));
  ++o->step;
  PetscFunctionReturn(0);
}

PetscErrorCode OptimizerStepAll(Optimizer *o, Heads *h, Vec g, Neurons *n, Vec g_m) {
  PetscFunctionBeginUser;
  PetscCall(OptimizerStep(o, h->theta, g));
  if (o->mlp) PetscCall(OptimizerStep(o->mlp, n->theta, g_m));
  PetscFunctionReturn(0);
}

} // namespace mft
