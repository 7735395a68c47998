// Token and pooled risks, reduced over all ranks.
#include "mft/risk.hpp"

#include <algorithm>

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
    for (PetscInt c = 0; c < t.d; ++c) s[c] += xi[c];
  }
  PetscCall(VecRestoreArrayRead(x, &xa));
  xbar.assign(part.size(), 0.0);
  PetscCallMPI(MPI_Allreduce(part.data(), xbar.data(), (int)part.size(), MPI_DOUBLE, MPI_SUM,
                             PetscObjectComm((PetscObject)x)));
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

PetscErrorCode RiskEvaluate(const TokenLayout &t, const Targets &y, const std::vector<char> *active, Vec x1, Vec dRdx,
                            double *R) {
  MPI_Comm comm = PetscObjectComm((PetscObject)x1);
  const PetscScalar *xa;
  PetscScalar *ga = nullptr;
  PetscInt batch = t.M;
  if (active) batch = (PetscInt)std::count(active->begin(), active->end(), 1);
  auto in = [&](PetscInt m) { return !active || (*active)[m]; };
  PetscFunctionBeginUser;
  if (y.kind == LossKind::token) {
    const PetscScalar *ya;
    double part = 0;
    const double w = 1.0 / ((double)batch * t.N);
    PetscCall(VecGetArrayRead(x1, &xa));
    PetscCall(VecGetArrayRead(y.y, &ya));
    if (dRdx) PetscCall(VecGetArray(dRdx, &ga));
    for (PetscInt e = 0; e < t.owned.size() * t.d; ++e) {
      const double r = in((t.owned.begin + e / t.d) / t.N) ? xa[e] - ya[e] : 0.0;
      part += 0.5 * r * r;
      if (ga) ga[e] = w * r;
    }
    if (dRdx) PetscCall(VecRestoreArray(dRdx, &ga));
    PetscCall(VecRestoreArrayRead(y.y, &ya));
    PetscCall(VecRestoreArrayRead(x1, &xa));
    PetscCallMPI(MPI_Allreduce(&part, R, 1, MPI_DOUBLE, MPI_SUM, comm));
    *R *= w;
    PetscFunctionReturn(0);
  }
  // Pooled: the residual r_m = W xbar_m - z_m is known on every rank.
  std::vector<double> out;
  PetscCall(PooledOutputs(t, y.W, y.c, x1, out));
  double sum = 0;
  for (size_t e = 0; e < out.size(); ++e) {
    out[e] = in((PetscInt)e / y.c) ? out[e] - y.z[e] : 0.0;
    sum += 0.5 * out[e] * out[e];
  }
  *R = sum / (double)batch;
  if (dRdx) {
    // dR/dx[m,i] = 1/(|batch| N) W^T r_m
    const double w = 1.0 / ((double)batch * t.N);
    PetscCall(VecGetArray(dRdx, &ga));
    for (PetscInt tok = t.owned.begin; tok < t.owned.end; ++tok) {
      const double *r = &out[(tok / t.N) * y.c];
      PetscScalar *gi = ga + (tok - t.owned.begin) * t.d;
      for (PetscInt j = 0; j < t.d; ++j) {
        double sum = 0;
        for (PetscInt q = 0; q < y.c; ++q) sum += y.W[q * t.d + j] * r[q];
        gi[j] = w * sum;
      }
    }
    PetscCall(VecRestoreArray(dRdx, &ga));
  }
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
