// Normalized tokens: the per-token maps of pre and sphere, and their transposes.
#include "mft/flow/norm.hpp"

#include <climits>
#include <cmath>

namespace mft {

namespace {

double dot(const double *a, const double *b, PetscInt d) {
  double s = 0;
  for (PetscInt c = 0; c < d; ++c) s += a[c] * b[c];
  return s;
}

// out = scale (g - x (x . g) / |x|^2): g without its part along x, scaled.
// out may be g.
void without_radial(const double *x, const double *g, PetscInt d, double scale, double *out) {
  const double radial = dot(x, g, d) / dot(x, x, d);
  for (PetscInt c = 0; c < d; ++c) out[c] = scale * (g[c] - radial * x[c]);
}

// Calls token(o) for the offset o of each owned token of the state layout.
template <class Token> PetscErrorCode OverTokens(Vec x, PetscInt d, Token token) {
  PetscInt n;
  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(x, &n));
  for (PetscInt i = 0; i < n / d; ++i) token(i * d);
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode NormRead(Vec x, PetscInt d, Vec y) {
  const PetscScalar *xa;
  PetscScalar *ya;
  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(VecGetArrayWrite(y, &ya));
  const double root = std::sqrt((double)d);
  PetscCall(OverTokens(x, d, [&](PetscInt o) {
    const double scale = root / std::sqrt(dot(xa + o, xa + o, d));
    for (PetscInt c = 0; c < d; ++c) ya[o + c] = scale * xa[o + c];
  }));
  PetscCall(VecRestoreArrayWrite(y, &ya));
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscFunctionReturn(0);
}

PetscErrorCode NormReadTranspose(Vec x, PetscInt d, Vec g, Vec out) {
  const PetscScalar *xa, *ga;
  PetscScalar *oa;
  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(VecGetArrayRead(g, &ga));
  PetscCall(VecGetArrayWrite(out, &oa));
  const double root = std::sqrt((double)d);
  PetscCall(OverTokens(x, d, [&](PetscInt o) {
    without_radial(xa + o, ga + o, d, root / std::sqrt(dot(xa + o, xa + o, d)), oa + o);
  }));
  PetscCall(VecRestoreArrayWrite(out, &oa));
  PetscCall(VecRestoreArrayRead(g, &ga));
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscFunctionReturn(0);
}

PetscErrorCode SphereStep(Vec x, Vec v, PetscInt d, double h, Vec F) {
  const PetscScalar *xa, *va;
  PetscScalar *fa;
  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(VecGetArrayRead(v, &va));
  PetscCall(VecGetArrayWrite(F, &fa));
  PetscCall(OverTokens(x, d, [&](PetscInt o) {
    const double *xi = xa + o, *vi = va + o;
    double *fi = fa + o;
    const double xv = dot(xi, vi, d);
    for (PetscInt c = 0; c < d; ++c) fi[c] = vi[c] - xi[c] * xv; // P v
    if (h == 0) return;
    for (PetscInt c = 0; c < d; ++c) fi[c] = xi[c] + h * fi[c]; // y
    const double inv = 1.0 / std::sqrt(dot(fi, fi, d));
    for (PetscInt c = 0; c < d; ++c) fi[c] = (fi[c] * inv - xi[c]) / h;
  }));
  PetscCall(VecRestoreArrayWrite(F, &fa));
  PetscCall(VecRestoreArrayRead(v, &va));
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscFunctionReturn(0);
}

PetscErrorCode SphereStepTranspose(Vec x, Vec v, PetscInt d, double h, Vec lam, Vec into_velocity, Vec out) {
  const PetscScalar *xa, *va, *la;
  PetscScalar *ia, *oa;
  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(VecGetArrayRead(v, &va));
  PetscCall(VecGetArrayRead(lam, &la));
  PetscCall(VecGetArrayWrite(into_velocity, &ia));
  PetscCall(VecGetArrayWrite(out, &oa));
  PetscCall(OverTokens(x, d, [&](PetscInt o) {
    const double *xi = xa + o, *vi = va + o, *li = la + o;
    double *mu = ia + o, *oi = oa + o; // mu is built in into_velocity, then projected there
    const double xv = dot(xi, vi, d);
    if (h == 0) {
      for (PetscInt c = 0; c < d; ++c) mu[c] = li[c];
    } else {
      double *y = oi; // y = x + h P v, in out until out is written
      for (PetscInt c = 0; c < d; ++c) y[c] = xi[c] + h * (vi[c] - xi[c] * xv);
      const double r = std::sqrt(dot(y, y, d)), yl = dot(y, li, d) / (r * r);
      for (PetscInt c = 0; c < d; ++c) mu[c] = (li[c] - yl * y[c]) / r;
    }
    const double xmu = dot(xi, mu, d);
    for (PetscInt c = 0; c < d; ++c) oi[c] = (h == 0 ? 0.0 : (mu[c] - li[c]) / h) - xv * mu[c] - vi[c] * xmu;
    for (PetscInt c = 0; c < d; ++c) mu[c] -= xi[c] * xmu; // P mu
  }));
  PetscCall(VecRestoreArrayWrite(out, &oa));
  PetscCall(VecRestoreArrayWrite(into_velocity, &ia));
  PetscCall(VecRestoreArrayRead(lam, &la));
  PetscCall(VecRestoreArrayRead(v, &va));
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscFunctionReturn(0);
}

PetscErrorCode SphereTangent(Vec x, PetscInt d, Vec g) {
  const PetscScalar *xa;
  PetscScalar *ga;
  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(VecGetArray(g, &ga));
  PetscCall(OverTokens(x, d, [&](PetscInt o) { without_radial(xa + o, ga + o, d, 1.0, ga + o); }));
  PetscCall(VecRestoreArray(g, &ga));
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscFunctionReturn(0);
}

PetscErrorCode NormInputs(TokenNorm norm, PetscInt N, PetscInt d, Vec x) {
  PetscScalar *xa;
  PetscInt lo, hi;
  long long zero = LLONG_MAX; // the first zero token's index, if any
  PetscFunctionBeginUser;
  if (norm == TokenNorm::none) PetscFunctionReturn(0);
  PetscCall(VecGetOwnershipRange(x, &lo, &hi));
  PetscCall(VecGetArray(x, &xa));
  PetscCall(OverTokens(x, d, [&](PetscInt o) {
    const double r = std::sqrt(dot(xa + o, xa + o, d));
    if (r == 0 && zero == LLONG_MAX) zero = (lo + o) / d;
    if (norm == TokenNorm::sphere && r > 0)
      for (PetscInt c = 0; c < d; ++c) xa[o + c] /= r;
  }));
  PetscCall(VecRestoreArray(x, &xa));
  // The first zero token of any rank, named on every rank.
  long long any;
  PetscCallMPI(MPI_Allreduce(&zero, &any, 1, MPI_LONG_LONG, MPI_MIN, PetscObjectComm((PetscObject)x)));
  PetscCheck(any == LLONG_MAX, PetscObjectComm((PetscObject)x), PETSC_ERR_USER_INPUT,
             "model.norm = %s: token %lld of sequence %lld is zero and has no direction", to_string(norm),
             any % (long long)N, any / (long long)N);
  PetscFunctionReturn(0);
}

} // namespace mft
