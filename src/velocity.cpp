// Mean-field velocity: head-group partial sums, reductions, one-sweep reverse.
#include "mft/velocity.hpp"

#include "mft/exchange.hpp"

// PetscObjectStateGet is public API, but 3.18 declares it in this header only.
#include <petsc/private/petscimpl.h>

#include <algorithm>

namespace mft {

PetscErrorCode VelocityCreate(const Grid &g, const TokenLayout &t, Heads *h, const ModelSettings &m, Velocity *v) {
  PetscFunctionBeginUser;
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
  v->work.reserve(h->shape, t.N);
  PetscFunctionReturn(0);
}

PetscErrorCode VelocityDestroy(Velocity *v) {
  PetscFunctionBeginUser;
  PetscCall(VecDestroy(&v->x_local));
  PetscCall(VecDestroy(&v->lam_local));
  PetscCall(VecDestroy(&v->dx_local));
  PetscCall(VecDestroy(&v->scratch));
  PetscFunctionReturn(0);
}

PetscErrorCode VelocityPrepare(Velocity *v, PetscInt l, Vec x) {
  PetscFunctionBeginUser;
  const double t0 = MPI_Wtime();
  PetscCall(TokensGather(*v->tokens, x, v->x_local));
  v->seconds_comm += MPI_Wtime() - t0;
  v->layer = l;
  v->grad_layer = -1;
  PetscFunctionReturn(0);
}

PetscErrorCode VelocityEvaluate(Velocity *v, PetscInt l, Vec x, Vec f) {
  const TokenLayout &t = *v->tokens;
  const Heads &h = *v->heads;
  const PetscInt seq = t.N * t.d;
  const double scale = 1.0 / (double)h.H;
  const PetscScalar *xs;
  PetscScalar *fa;
  PetscFunctionBeginUser;
  PetscCall(VelocityPrepare(v, l, x));
  PetscCall(VecGetArrayRead(v->x_local, &xs));
  PetscCall(VecGetArray(f, &fa));
  // With one head group the group's queries are exactly the owned tokens.
  double *out = v->grid->Ph == 1 ? fa : v->partial.data();
  std::fill(out, out + t.group.size() * t.d, 0.0);
  double t0 = MPI_Wtime();
  for (PetscInt hl = 0; hl < h.group.size(); ++hl)
    for (PetscInt m = t.seqs.begin; m < t.seqs.end; ++m) {
      if (v->active && !(*v->active)[m]) continue; // outside the batch: not needed by the risk
      const Range q = t.queries(m);
      attention_forward(h.shape, h.head(l, hl), v->options, xs + (m - t.seqs.begin) * seq, t.N, q, scale,
                        out + (m * t.N + q.begin - t.group.begin) * t.d, v->work);
    }
  v->seconds_kernel += MPI_Wtime() - t0;
  t0 = MPI_Wtime();
  if (v->grid->Ph > 1)
    PetscCall(ReduceScatterSum(v->grid->head_comm, v->partial.data(), t.counts, fa));
  v->seconds_comm += MPI_Wtime() - t0;
  PetscCall(VecRestoreArray(f, &fa));
  PetscCall(VecRestoreArrayRead(v->x_local, &xs));
  PetscFunctionReturn(0);
}

PetscErrorCode VelocityReverse(Velocity *v, Vec lam, Vec dx) {
  const TokenLayout &t = *v->tokens;
  Heads &h = *v->heads;
  const PetscInt seq = t.N * t.d, l = v->layer;
  const double scale = 1.0 / (double)h.H;
  const PetscScalar *xs, *ls;
  PetscScalar *ds;
  PetscFunctionBeginUser;
  PetscCheck(l >= 0, PETSC_COMM_SELF, PETSC_ERR_ORDER, "the velocity's reverse needs a prepared state");
  double t0 = MPI_Wtime();
  PetscCall(TokensGather(t, lam, v->lam_local));
  v->seconds_comm += MPI_Wtime() - t0;
  t0 = MPI_Wtime();
  PetscCall(VecSet(v->dx_local, 0.0));
  std::fill(h.layer_grad.begin(), h.layer_grad.end(), 0.0);
  PetscCall(VecGetArrayRead(v->x_local, &xs));
  PetscCall(VecGetArrayRead(v->lam_local, &ls));
  PetscCall(VecGetArray(v->dx_local, &ds));
  for (PetscInt hl = 0; hl < h.group.size(); ++hl)
    for (PetscInt m = t.seqs.begin; m < t.seqs.end; ++m) {
      const Range q = t.queries(m);
      if (q.size() == 0 || (v->active && !(*v->active)[m])) continue; // zero adjoint outside the batch
      const PetscInt base = (m - t.seqs.begin) * seq;
      attention_reverse(h.shape, h.head(l, hl), v->options, xs + base, t.N, q, scale, ls + base + q.begin * t.d,
                        ds + base, h.layer_grad.data() + hl * h.shape.size, v->work);
    }
  PetscCall(VecRestoreArray(v->dx_local, &ds));
  PetscCall(VecRestoreArrayRead(v->lam_local, &ls));
  PetscCall(VecRestoreArrayRead(v->x_local, &xs));
  v->seconds_kernel += MPI_Wtime() - t0;
  t0 = MPI_Wtime();
  // Every rank that saw token j as a key or query adds its part.
  PetscCall(TokensScatterAdd(t, v->dx_local, dx));
  v->seconds_comm += MPI_Wtime() - t0;
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
  // This rank's part, kept until the end of the sweep (HeadsReduceGradient).
  double *g = h.grad.data() + v->layer * h.group.size() * h.shape.size;
  for (size_t e = 0; e < h.layer_grad.size(); ++e) g[e] += weight * h.layer_grad[e];
  PetscFunctionReturn(0);
}

} // namespace mft
