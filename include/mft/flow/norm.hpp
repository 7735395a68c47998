// Normalized tokens (model.norm; docs/model.md, 'Normalized tokens'): the
// maps a layer applies around the bare model's velocity v = f_l(x), and
// their transposes, token by token on a rank's owned tokens (O(N d) a layer,
// no communication: the state's owned entries are whole tokens).
//
//   pre:    the attention reads n(x)_i = sqrt(d) x_i / |x_i|; the step is
//           x + h v(n(x)), and (dF/dx)^T lam = (dn/dx)^T (dv/dy)^T lam.
//   sphere: the step is the retraction R(x_i + h P_i v_i), P_i = I - x_i x_i^T,
//           R(y) = y / |y|, written as the Euler step x + h F with
//           F = (R(x + h P v) - x) / h, so that TSRK1FE takes it as it is.
//           The limit integrates its h -> 0 form, F = P v, adaptively.
#pragma once

#include "mft/settings/settings.hpp"

#include <petscvec.h>

namespace mft {

// y = n(x): each token scaled to norm sqrt(d) (pre).
// Not collective: each rank works on the tokens it owns (whole tokens of d
// entries).
PetscErrorCode NormRead(Vec x, PetscInt d, Vec y);

// out = (dn/dx)^T g at x: (sqrt(d) / |x_i|) (g_i - xh_i (xh_i . g_i)), xh = x / |x|.
// Not collective.
PetscErrorCode NormReadTranspose(Vec x, PetscInt d, Vec g, Vec out);

// F of the sphere's step from x and v = f_l(x): the retracted step's for
// h > 0, the flow's own P v for h = 0 (the limit).
// Not collective.
PetscErrorCode SphereStep(Vec x, Vec v, PetscInt d, double h, Vec F);

// The transpose of SphereStep's Jacobian, split at the velocity: for lam,
//   mu = (dR/dy)^T lam at y = x + h P v (h = 0: mu = lam),
//   into_velocity = P mu, what (dv/dx)^T and (dv/dtheta)^T then take,
//   out = (mu - lam) / h - (x . v) mu - v (x . mu)   (h = 0: without the first term),
// so that (dF/dx)^T lam = out + (dv/dx)^T into_velocity.
// Not collective.
PetscErrorCode SphereStepTranspose(Vec x, Vec v, PetscInt d, double h, Vec lam, Vec into_velocity, Vec out);

// g_i <- g_i - x_i (x_i . g_i) / |x_i|^2: the part of g tangent to the
// sphere at x (sphere: the gradient with respect to the tokens as given,
// through their normalization, at tokens of norm 1).
// Not collective.
PetscErrorCode SphereTangent(Vec x, PetscInt d, Vec g);

// The input tokens as the model takes them: a zero token is refused, naming
// its sequence and token (sphere, pre), and every token is put on the unit
// sphere (sphere). N: tokens a sequence.
// Collective on x's comm (every rank learns of a zero token).
PetscErrorCode NormInputs(TokenNorm norm, PetscInt N, PetscInt d, Vec x);

} // namespace mft
