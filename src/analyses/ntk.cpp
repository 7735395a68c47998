// NTK: per-output adjoint rows, a reduced Gram matrix, its spectrum.
#include "mft/analyses/ntk.hpp"

#include "mft/flow/data.hpp"
#include "mft/statistics/fit.hpp"
#include "mft/kernels/linalg.hpp"
#include "mft/flow/optimizer.hpp"

#include <petscblaslapack.h>

#include <cmath>

namespace mft {

PetscInt NtkOutputs(const Problem &p) {
  const TokenLayout &t = p.tokens;
  return p.targets.kind == LossKind::pooled ? t.M * p.targets.c : t.M * t.N * t.d;
}

// dF_o/dx(1) into lam: e_(m,i,c) (token), or (1/N) W[r, :] (w_i W[r, :] with
// weighted tokens) on every token of m (pooled).
static PetscErrorCode SeedOutput(const Problem &p, PetscInt o, PetscInt *sequence, Vec lam) {
  const TokenLayout &t = p.tokens;
  const bool pooled = p.targets.kind == LossKind::pooled;
  const PetscInt m = pooled ? o / p.targets.c : o / (t.N * t.d);
  PetscScalar *a;
  PetscFunctionBeginUser;
  *sequence = m;
  PetscCall(VecSet(lam, 0.0));
  PetscCall(VecGetArray(lam, &a));
  for (PetscInt tok = std::max(t.owned.begin, m * t.N); tok < std::min(t.owned.end, (m + 1) * t.N); ++tok)
    for (PetscInt c = 0; c < t.d; ++c) {
      PetscScalar &e = a[(tok - t.owned.begin) * t.d + c];
      if (pooled && t.weighted()) e = p.targets.W[(o % p.targets.c) * t.d + c] * t.weights[tok];
      else if (pooled) e = p.targets.W[(o % p.targets.c) * t.d + c] / (double)t.N;
      else e = (tok * t.d + c == o) ? 1.0 : 0.0;
    }
  PetscCall(VecRestoreArray(lam, &a));
  PetscFunctionReturn(0);
}

// The entries of one unit (a head, or a neuron) that `part` counts: every
// one, or those the outputs are linear in (the value map A of a head, w of a neuron).
static std::vector<char> Counted(NtkPart part, PetscInt size, PetscInt from) {
  std::vector<char> c((size_t)size, part == NtkPart::full);
  for (PetscInt e = from; e < size; ++e) c[(size_t)e] = 1;
  return c;
}

// The Gram part of one kind of unit: alpha J^T J of its rows (n x P,
// row-major) added into `gram`.
static PetscErrorCode AddGram(const std::vector<double> &rows, PetscInt n, PetscInt P, double alpha,
                              std::vector<double> *gram) {
  PetscBLASInt bn, bp;
  const double beta = 1.0;
  PetscFunctionBeginUser;
  if (P == 0 || n == 0) PetscFunctionReturn(0);
  PetscCall(PetscBLASIntCast(n, &bn));
  PetscCall(PetscBLASIntCast(P, &bp));
  BLASgemm_("T", "N", &bn, &bn, &bp, &alpha, rows.data(), &bp, rows.data(), &bp, &beta, gram->data(), &bn);
  PetscFunctionReturn(0);
}

// Row o's entries of one gradient into rows[o * P ..], counted entries only.
static PetscErrorCode KeepRow(Vec grad, const std::vector<char> &counted, PetscInt o, PetscInt P,
                              std::vector<double> *rows) {
  const PetscScalar *g;
  PetscFunctionBeginUser;
  if (!grad || P == 0) PetscFunctionReturn(0);
  PetscCall(VecGetArrayRead(grad, &g));
  for (PetscInt e = 0; e < P; ++e) (*rows)[(size_t)(o * P + e)] = counted[(size_t)(e % (PetscInt)counted.size())] ? g[e] : 0.0;
  PetscCall(VecRestoreArrayRead(grad, &g));
  PetscFunctionReturn(0);
}

PetscErrorCode NtkCompute(Problem *p, NtkPart part, Ntk *k) {
  MPI_Comm comm = p->grid.comm;
  const Heads &h = p->heads;
  const HeadShape &shape = h.shape;
  const Neurons &nn = p->neurons;
  const PetscInt n = NtkOutputs(*p), P = h.owned.size() * shape.size;
  PetscInt Pn = 0;
  PetscFunctionBeginUser;
  if (p->neuron_grad) PetscCall(VecGetLocalSize(p->neuron_grad, &Pn));
  // Memory: the Jacobian rows of this rank's heads and neurons, and the matrix.
  const double gib = ((double)n * (double)(P + Pn) + 2.0 * (double)n * n) * 8.0 / (1024.0 * 1024.0 * 1024.0);
  PetscCheck(gib <= p->settings.ntk.max_gb, comm, PETSC_ERR_USER_INPUT,
             "the NTK of %" PetscInt_FMT " outputs needs %.3g GiB per rank, above ntk.max_gb = %g (use fewer "
             "sequences or tokens, the pooled loss, more ranks, or raise ntk.max_gb)",
             n, gib, p->settings.ntk.max_gb);
  const std::vector<char> counted = Counted(part, shape.size, shape.block_offset(2)),
                          counted_neurons = Counted(part, nn.size(), nn.d + 1);
  std::vector<double> rows((size_t)n * (size_t)P), neuron_rows((size_t)n * (size_t)Pn);
  const std::vector<char> all = p->active;
  for (PetscInt o = 0; o < n; ++o) {
    PetscInt m;
    p->active.assign(all.size(), 0);
    PetscCall(SeedOutput(*p, o, &m, p->adjoint));
    p->active[m] = 1;
    PetscCall(VecCopy(p->x0, p->x1));
    PetscCall(FlowForward(&p->flow, p->x1));
    PetscCall(FlowAdjoint(&p->flow, p->adjoint, p->grad));
    PetscCall(KeepRow(p->grad, counted, o, P, &rows));
    PetscCall(KeepRow(p->neuron_grad, counted_neurons, o, Pn, &neuron_rows));
  }
  p->active = all;

  // NTK = (1/(L H)) sum (g J)(g J)^T with g = L^a H^c (L H J J^T at a = c = 1),
  // plus the neurons' (1/(L m)) sum (g' J)(g' J)^T with g' = L^a' m^c': the
  // local parts are products, rows row-major = J^T column-major.
  std::vector<double> local((size_t)(n * n), 0.0);
  const double g = GradientScale(p->settings.model, h.L, h.H);
  PetscCall(AddGram(rows, n, P, p->settings.model.mean_field() ? (double)(h.L * h.H) : g * g / ((double)h.L * (double)h.H),
                    &local));
  if (p->neuron_grad) {
    const double gn = NeuronGradientScale(p->settings.model, nn.L);
    PetscCall(AddGram(neuron_rows, n, Pn, gn * gn / ((double)nn.L * (double)nn.m), &local));
  }
  k->n = n;
  k->matrix.assign(local.size(), 0.0);
  PetscCallMPI(MPI_Allreduce(local.data(), k->matrix.data(), (int)local.size(), MPI_DOUBLE, MPI_SUM, comm));
  PetscCall(SymmetricEigenvalues(k->matrix, n, &k->eigenvalues));
  PetscFunctionReturn(0);
}

PetscErrorCode NtkRatePredict(Problem *p, const TrainSettings &t, NtkRate *r) {
  Ntk k;
  PetscFunctionBeginUser;
  PetscCheck(!p->tokens.weighted() || UniformWeights(p->tokens), p->grid.comm, PETSC_ERR_USER_INPUT,
             "train.ntk predicts the rate of the unweighted risk (every token 1/N); the data's /data/weights are "
             "not uniform");
  PetscCall(NtkCompute(p, t.ntk, &k));
  r->lambda_min = k.eigenvalues.front(), r->lambda_max = k.eigenvalues.back();
  const double n = p->targets.kind == LossKind::pooled ? (double)p->tokens.M : (double)(p->tokens.M * p->tokens.N);
  r->predicted = 2.0 * r->lambda_min / n;
  r->discrete = -2.0 * std::log(std::fabs(1.0 - t.lr * r->lambda_min / n)) / t.lr;
  PetscCall(PetscPrintf(p->grid.comm,
                        "NTK (%s part) at the start: lambda_min %.6e, lambda_max %.6e; predicted rate of log R in "
                        "training time %.6e (for gd steps of lr %g: %.6e)\n",
                        to_string(t.ntk), r->lambda_min, r->lambda_max, r->predicted, t.lr, r->discrete));
  PetscFunctionReturn(0);
}

bool NtkRateFit(const std::vector<double> &loss, const TrainSettings &t, NtkRate *r) {
  if (loss.size() < 4) return false;
  std::vector<double> tau, logR;
  double now = 0;
  size_t above = 0;
  while (above < loss.size() && loss[above] > 1e-24 * loss.front()) ++above;
  for (size_t k = 0; k < above; ++k) {
    if (k >= above / 2) tau.push_back(now), logR.push_back(std::log(loss[k]));
    now += learning_rate(t, (PetscInt)k);
  }
  const LineFit f = fit_line(tau, logR);
  r->fitted = -f.slope, r->fit_rms = f.rms, r->from = above / 2, r->to = above;
  return true;
}

} // namespace mft
