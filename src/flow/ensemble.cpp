// An ensemble's models on the ranks: its blocks, their price, their
// evaluation and divergence.
#include "mft/flow/ensemble.hpp"

#include "mft/layout/grid.hpp"

#include <algorithm>
#include <cmath>

namespace mft {

double EnsembleBytes(const Settings &s, PetscInt models) {
  const ModelSettings &m = s.model;
  const double n = (double)s.data.M * (double)s.data.N * (double)m.d; // a model's state
  const HeadShape sh = head_shape(m.head_kind, m.d, m.infinite_head ? m.d : m.k);
  const double P = (double)m.L * ((double)m.H * (double)sh.size + (double)m.mlp_width * (2.0 * (double)m.d + 1.0)); // its heads and neurons
  // State: x0, x1, the adjoint, the targets, the layout's and the velocity's
  // copies, TS's work; the forward's states kept for the adjoint and the
  // trajectory's (L + 1). Heads: theta, the gradient, the replica and its
  // gradient, the chunk, the moments, a study's initial heads (and the
  // neurons' theta, replica, gradients and moments). MLP sublayers keep a
  // state more a layer (attention's half step y; on the sphere also the
  // MLP's velocity) and eight for the block's transpose.
  const double sphere = m.norm == TokenNorm::sphere ? 1.0 : 0.0,
               states = m.mlp() ? (3.0 + sphere) * (double)m.L + 24.0 : 2.0 * (double)m.L + 16.0;
  return 8.0 * (double)models * (states * n + 8.0 * P + 2.0 * (double)s.train.steps);
}

PetscErrorCode EnsembleCreate(MPI_Comm comm, const Settings &s, PetscInt S, std::uint64_t first, Ensemble *e) {
  PetscMPIInt size, rank, sharing;
  double available;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCheck(S >= size, comm, PETSC_ERR_USER_INPUT,
             "%" PetscInt_FMT " models on %d ranks: a rank holds whole models of an ensemble, give at least as many "
             "seeds as ranks", S, size);
  PetscCall(NodeMemory(comm, &available, &sharing));
  double share = available / (double)sharing;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &share, 1, MPI_DOUBLE, MPI_MIN, comm));
  const PetscInt most = (S + size - 1) / size;
  const double bytes = EnsembleBytes(s, most);
  PetscCheck(bytes <= share, comm, PETSC_ERR_USER_INPUT,
             "%" PetscInt_FMT " models of %" PetscInt_FMT " x %" PetscInt_FMT " heads on %" PetscInt_FMT
             " sequences of %" PetscInt_FMT " tokens need %.3g GiB a rank (%" PetscInt_FMT " models a rank), more than "
             "the %.3g GiB a rank has: use more ranks or fewer seeds", S, s.model.L, s.model.H, s.data.M, s.data.N,
             bytes / 1073741824.0, most, share / 1073741824.0);
  e->comm = comm, e->S = S, e->first = first;
  e->block = split(S, size, rank);
  std::vector<std::uint64_t> seeds;
  for (PetscInt i = e->block.begin; i < e->block.end; ++i) seeds.push_back(first + (std::uint64_t)i);
  PetscCall(ProblemCreateModels(s, seeds, &e->p));
  e->diverged.assign((size_t)e->models(), -1);
  e->gnorm.assign((size_t)e->models(), 0.0), e->hnorm.assign((size_t)e->models(), 0.0);
  PetscFunctionReturn(0);
}

PetscErrorCode EnsembleDestroy(Ensemble *e) {
  PetscFunctionBeginUser;
  PetscCall(ProblemDestroy(&e->p));
  PetscFunctionReturn(0);
}

void EnsembleSetBatch(Ensemble *e, PetscInt step) {
  ProblemSetBatch(&e->p, step);
  const PetscInt M = e->p.tokens.M / e->models();
  for (PetscInt s = 0; s < e->models(); ++s)
    if (e->diverged[(size_t)s] >= 0) std::fill(e->p.active.begin() + s * M, e->p.active.begin() + (s + 1) * M, 0);
}

PetscInt EnsembleHead(const Ensemble &e, PetscInt s, PetscInt l, PetscInt h) {
  const Heads &hd = e.p.heads;
  return (l * hd.seeds + s) * (hd.H / hd.seeds) + h;
}

PetscInt EnsembleNeuron(const Ensemble &e, PetscInt s, PetscInt l, PetscInt j) {
  const Neurons &n = e.p.neurons;
  return l * n.m + s * n.per_model() + j;
}

PetscInt EnsembleNeuronModel(const Ensemble &e, PetscInt flat) {
  const Neurons &n = e.p.neurons;
  return flat % n.m / n.per_model();
}

PetscErrorCode EnsembleProbe(const Ensemble &e, const Settings &probe, std::vector<double> *x1,
                             std::vector<double> *inputs) {
  Problem q;
  std::vector<std::uint64_t> seeds((size_t)e.models(), e.first);
  PetscFunctionBeginUser;
  PetscCall(ProblemCreateModels(probe, seeds, &q));
  PetscCall(VecCopy(e.p.heads.theta, q.heads.theta));
  if (q.neurons.theta) PetscCall(VecCopy(e.p.neurons.theta, q.neurons.theta));
  PetscCall(ProblemSetHeads(&q));
  PetscCall(VecCopy(q.x0, q.x1));
  PetscCall(FlowForward(&q.flow, q.x1));
  const PetscScalar *a;
  PetscInt n;
  if (inputs) {
    PetscCall(VecGetArrayRead(q.x0, &a));
    inputs->assign(a, a + q.tokens.M / q.heads.seeds * q.tokens.N * q.tokens.d); // model 0's: the same for all
    PetscCall(VecRestoreArrayRead(q.x0, &a));
  }
  PetscCall(VecGetLocalSize(q.x1, &n));
  PetscCall(VecGetArrayRead(q.x1, &a));
  x1->assign(a, a + n);
  PetscCall(VecRestoreArrayRead(q.x1, &a));
  const size_t per = (size_t)n / (size_t)e.models();
  for (size_t s = 0; s < e.diverged.size(); ++s)
    if (e.diverged[s] >= 0) std::fill(x1->begin() + (std::ptrdiff_t)(s * per), x1->begin() + (std::ptrdiff_t)((s + 1) * per), NAN);
  PetscCall(ProblemDestroy(&q));
  PetscFunctionReturn(0);
}

PetscErrorCode EnsembleModelHeads(const Ensemble &e, PetscInt i, std::vector<double> *heads) {
  const Heads &hd = e.p.heads;
  const PetscInt H = hd.H / hd.seeds, n = hd.shape.size;
  PetscMPIInt size, owner = 0;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(e.comm, &size));
  while (owner + 1 < size && split(e.S, size, owner + 1).begin <= i) ++owner;
  heads->assign((size_t)(hd.L * H * n), 0.0);
  if (e.block.begin <= i && i < e.block.end) {
    const PetscScalar *t;
    PetscCall(VecGetArrayRead(hd.theta, &t));
    for (PetscInt l = 0; l < hd.L; ++l)
      for (PetscInt h = 0; h < H; ++h) {
        const PetscScalar *from = t + EnsembleHead(e, i - e.block.begin, l, h) * n;
        std::copy(from, from + n, heads->begin() + (l * H + h) * n);
      }
    PetscCall(VecRestoreArrayRead(hd.theta, &t));
  }
  PetscCallMPI(MPI_Bcast(heads->data(), (int)heads->size(), MPI_DOUBLE, owner, e.comm));
  PetscFunctionReturn(0);
}

PetscErrorCode EnsembleEvaluate(Ensemble *e, PetscInt step, bool gradient, PetscInt *live) {
  Problem &p = e->p;
  const Heads &hd = p.heads;
  const PetscInt H = hd.H / hd.seeds, n = hd.shape.size;
  PetscFunctionBeginUser;
  PetscCall(ProblemEvaluate(&p, gradient ? PETSC_TRUE : PETSC_FALSE));
  const PetscScalar *theta;
  PetscScalar *g = nullptr, *gm = nullptr;
  const PetscInt E = p.neurons.size(), per = p.neurons.per_model();
  PetscCall(VecGetArrayRead(hd.theta, &theta));
  if (gradient) PetscCall(VecGetArray(p.grad, &g));
  if (gradient && p.neuron_grad) PetscCall(VecGetArray(p.neuron_grad, &gm));
  PetscInt mine = 0;
  for (PetscInt s = 0; s < e->models(); ++s) {
    double &risk = p.risks[(size_t)s], &gn = e->gnorm[(size_t)s], &hn = e->hnorm[(size_t)s];
    if (e->diverged[(size_t)s] >= 0) {
      risk = gn = hn = NAN;
      continue;
    }
    double g2 = 0;
    hn = 0;
    for (PetscInt l = 0; l < hd.L; ++l)
      for (PetscInt h = 0; h < H; ++h) {
        const PetscInt at = EnsembleHead(*e, s, l, h) * n;
        double t2 = 0;
        for (PetscInt k = at; k < at + n; ++k) t2 += theta[k] * theta[k], g2 += g ? g[k] * g[k] : 0.0;
        hn = std::fmax(hn, std::sqrt(t2));
      }
    for (PetscInt l = 0; gm && l < hd.L; ++l) // its neurons' gradient, a layer's consecutive
      for (PetscInt k = EnsembleNeuron(*e, s, l, 0) * E; k < EnsembleNeuron(*e, s, l, per) * E; ++k) g2 += gm[k] * gm[k];
    gn = std::sqrt(g2);
    if (!std::isfinite(risk) || !std::isfinite(gn)) e->diverged[(size_t)s] = step;
    for (PetscInt l = 0; g && e->diverged[(size_t)s] >= 0 && l < hd.L; ++l) { // a diverged model does not move
      for (PetscInt h = 0; h < H; ++h) std::fill(g + EnsembleHead(*e, s, l, h) * n, g + (EnsembleHead(*e, s, l, h) + 1) * n, 0.0);
      if (gm) std::fill(gm + EnsembleNeuron(*e, s, l, 0) * E, gm + EnsembleNeuron(*e, s, l, per) * E, 0.0);
    }
    mine += e->diverged[(size_t)s] < 0;
  }
  if (gm) PetscCall(VecRestoreArray(p.neuron_grad, &gm));
  if (gradient) PetscCall(VecRestoreArray(p.grad, &g));
  PetscCall(VecRestoreArrayRead(hd.theta, &theta));
  PetscCallMPI(MPI_Allreduce(&mine, live, 1, MPIU_INT, MPI_SUM, e->comm));
  PetscFunctionReturn(0);
}

} // namespace mft
