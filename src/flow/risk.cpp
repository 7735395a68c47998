// Token and pooled risks, reduced over all ranks.
#include "mft/flow/risk.hpp"

#include <algorithm>
#include <climits>

namespace mft {

PetscErrorCode TargetsDestroy(Targets *t) {
  PetscFunctionBeginUser;
  PetscCall(VecDestroy(&t->y));
  PetscFunctionReturn(0);
}

PetscErrorCode SequenceMeans(const TokenLayout &t, Vec x, std::vector<double> &xbar) {
  const PetscScalar *xa;
  std::vector<double> part((size_t)(t.M * t.d), 0.0);
  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(x, &xa));
  for (PetscInt tok = t.owned.begin; tok < t.owned.end; ++tok) {
    double *s = &part[(tok / t.N) * t.d];
    const PetscScalar *xi = xa + (tok - t.owned.begin) * t.d;
    const double w = t.weighted() ? t.weights[tok] : 1.0; // (uniform: the sum, then / N)
    for (PetscInt c = 0; c < t.d; ++c) s[c] += w * xi[c];
  }
  PetscCall(VecRestoreArrayRead(x, &xa));
  xbar.assign(part.size(), 0.0);
  PetscCallMPI(MPI_Allreduce(part.data(), xbar.data(), (int)part.size(), MPI_DOUBLE, MPI_SUM,
                             PetscObjectComm((PetscObject)x)));
  if (!t.weighted())
    for (auto &v : xbar) v /= (double)t.N;
  PetscFunctionReturn(0);
}

PetscErrorCode PooledOutputs(const TokenLayout &t, const std::vector<double> &W, PetscInt c, Vec x,
                             std::vector<double> &out) {
  std::vector<double> xbar;
  PetscFunctionBeginUser;
  PetscCall(SequenceMeans(t, x, xbar));
  out.assign((size_t)(t.M * c), 0.0);
  for (PetscInt m = 0; m < t.M; ++m)
    for (PetscInt r = 0; r < c; ++r)
      for (PetscInt j = 0; j < t.d; ++j) out[m * c + r] += W[r * t.d + j] * xbar[m * t.d + j];
  PetscFunctionReturn(0);
}

namespace {

// dRdw's owned entries summed onto every rank.
PetscErrorCode SumOwned(MPI_Comm comm, std::vector<double> *dRdw) {
  PetscFunctionBeginUser;
  PetscCheck(dRdw->size() <= (size_t)INT_MAX, comm, PETSC_ERR_SUP,
             "the weights' gradient of %zu tokens is more than one message can carry", dRdw->size());
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, dRdw->data(), (int)dRdw->size(), MPI_DOUBLE, MPI_SUM, comm));
  PetscFunctionReturn(0);
}

// The token loss: 1/2 |x - y|^2 a token, each token's share its weight
// (1/N), per model (sequences m of model m / (M / models)) over its batch.
PetscErrorCode TokenRisk(const TokenLayout &t, const Targets &y, const std::vector<PetscInt> &batch,
                         const std::vector<char> *active, Vec x1, Vec dRdx, std::vector<double> *R,
                         std::vector<double> *dRdw) {
  MPI_Comm comm = PetscObjectComm((PetscObject)x1);
  const PetscScalar *xa, *ya;
  PetscScalar *ga = nullptr;
  const PetscInt per = t.M / (PetscInt)batch.size(); // sequences a model
  auto in = [&](PetscInt tok) { return !active || (*active)[tok / t.N]; };
  std::vector<double> part(batch.size(), 0.0);
  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(x1, &xa));
  PetscCall(VecGetArrayRead(y.y, &ya));
  if (dRdx) PetscCall(VecGetArray(dRdx, &ga));
  std::vector<double> sizes(batch.size()), shares(batch.size()); // a model's |batch|, and 1 / (|batch| N)
  for (size_t k = 0; k < batch.size(); ++k)
    sizes[k] = (double)std::max<PetscInt>(1, batch[k]), shares[k] = 1.0 / (sizes[k] * t.N);
  for (PetscInt tok = t.owned.begin; tok < t.owned.end; ++tok) {
    const PetscInt model = tok / t.N / per;
    const double b = sizes[(size_t)model], w = shares[(size_t)model], f = t.weighted() ? t.weights[tok] : 1.0;
    const bool counted = in(tok);
    for (PetscInt e = (tok - t.owned.begin) * t.d; e < (tok - t.owned.begin + 1) * t.d; ++e) {
      const double r = counted ? xa[e] - ya[e] : 0.0;
      part[model] += f * 0.5 * r * r;
      if (ga) ga[e] = (t.weighted() ? t.weights[tok] / b : w) * r;
      if (dRdw) (*dRdw)[tok] += 0.5 * r * r / b;
    }
  }
  if (dRdx) PetscCall(VecRestoreArray(dRdx, &ga));
  PetscCall(VecRestoreArrayRead(y.y, &ya));
  PetscCall(VecRestoreArrayRead(x1, &xa));
  R->assign(batch.size(), 0.0);
  PetscCallMPI(MPI_Allreduce(part.data(), R->data(), (int)part.size(), MPI_DOUBLE, MPI_SUM, comm));
  for (size_t k = 0; k < batch.size(); ++k) {
    const double b = (double)std::max<PetscInt>(1, batch[k]);
    (*R)[k] *= t.weighted() ? 1.0 / b : 1.0 / (b * t.N);
  }
  PetscFunctionReturn(0);
}

// The pooled loss: the residual r_m = W xbar_m - z_m is known on every rank;
// dR/dx[m,i] = w[m,i] / |batch| W^T r_m, dR/dw[m,i] = r_m . W x[m,i] / |batch|.
PetscErrorCode PooledRisk(const TokenLayout &t, const Targets &y, const std::vector<PetscInt> &batch,
                          const std::vector<char> *active, Vec x1, Vec dRdx, std::vector<double> *R,
                          std::vector<double> *dRdw) {
  std::vector<double> out;
  const PetscScalar *xa;
  PetscScalar *ga;
  const PetscInt per = t.M / (PetscInt)batch.size();
  auto in = [&](PetscInt m) { return !active || (*active)[m]; };
  auto size = [&](PetscInt m) { return (double)std::max<PetscInt>(1, batch[m / per]); };
  PetscFunctionBeginUser;
  PetscCall(PooledOutputs(t, y.W, y.c, x1, out));
  R->assign(batch.size(), 0.0);
  for (size_t e = 0; e < out.size(); ++e) {
    const PetscInt m = (PetscInt)e / y.c;
    out[e] = in(m) ? out[e] - y.z[e] : 0.0;
    (*R)[m / per] += 0.5 * out[e] * out[e];
  }
  for (size_t k = 0; k < batch.size(); ++k) (*R)[k] /= (double)std::max<PetscInt>(1, batch[k]);
  if (!dRdx && !dRdw) PetscFunctionReturn(0);
  if (dRdx) PetscCall(VecGetArray(dRdx, &ga));
  PetscCall(VecGetArrayRead(x1, &xa));
  for (PetscInt tok = t.owned.begin; tok < t.owned.end; ++tok) {
    const PetscInt m = tok / t.N;
    const double *r = &out[m * y.c], b = size(m), w = 1.0 / (b * t.N);
    const PetscScalar *xi = xa + (tok - t.owned.begin) * t.d;
    PetscScalar *gi = dRdx ? ga + (tok - t.owned.begin) * t.d : nullptr;
    for (PetscInt j = 0; j < t.d; ++j) {
      double sum = 0;
      for (PetscInt q = 0; q < y.c; ++q) sum += y.W[q * t.d + j] * r[q];
      if (gi) gi[j] = (t.weighted() ? t.weights[tok] / b : w) * sum;
      if (dRdw) (*dRdw)[tok] += sum * xi[j] / b;
    }
  }
  PetscCall(VecRestoreArrayRead(x1, &xa));
  if (dRdx) PetscCall(VecRestoreArray(dRdx, &ga));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode RiskEvaluate(const TokenLayout &t, const Targets &y, const std::vector<char> *active, Vec x1, Vec dRdx,
                            double *R, std::vector<double> *dRdw, std::vector<double> *per_model) {
  const PetscInt models = per_model ? std::max<PetscInt>(1, (PetscInt)per_model->size()) : 1, per = t.M / models;
  std::vector<PetscInt> batch((size_t)models, per);
  for (PetscInt m = 0; active && m < t.M; ++m) batch[m / per] -= !(*active)[m];
  std::vector<double> risks;
  PetscFunctionBeginUser;
  if (dRdw) dRdw->assign((size_t)(t.M * t.N), 0.0);
  if (y.kind == LossKind::token) PetscCall(TokenRisk(t, y, batch, active, x1, dRdx, &risks, dRdw));
  else PetscCall(PooledRisk(t, y, batch, active, x1, dRdx, &risks, dRdw));
  if (dRdw) PetscCall(SumOwned(PetscObjectComm((PetscObject)x1), dRdw));
  *R = risks[0];
  if (per_model) *per_model = risks;
  PetscFunctionReturn(0);
}

double ClassAccuracy(const std::vector<double> &outputs, const std::vector<double> &targets, PetscInt c) {
  const size_t M = targets.size() / (size_t)c;
  size_t right = 0;
  for (size_t m = 0; m < M; ++m) {
    const auto o = outputs.begin() + (std::ptrdiff_t)(m * c), t = targets.begin() + (std::ptrdiff_t)(m * c);
    right += std::max_element(o, o + c) - o == std::max_element(t, t + c) - t;
  }
  return M ? (double)right / (double)M : NAN;
}

} // namespace mft
