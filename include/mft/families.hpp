// The token distribution families of MODEL.md (seed 1), sampled per sequence.
//
// Sequence m draws its parameter p uniformly in [param_min, param_max] and its
// N tokens from the family's law, from its own random stream (seed, m): the
// same tokens on any number of ranks.
//   discrete      N atoms i.i.d. N(0, p^2 I)
//   uniform_cube  uniform on [-p, p]^d
//   laplace       symmetric multivariate Laplace, covariance S = p^2 I: x = sqrt(E) G, E ~ Exp(1), G ~ N(0, S)
//   gauss_mix2    1/2 N(+m, s^2 I) + 1/2 N(-m, s^2 I), m = p e_1, s = mix_std
//   gaussian      N(mu, p^2 I), mu ~ N(0, mean_spread^2 I) per sequence
#pragma once

#include "mft/settings.hpp"

namespace mft {

// The per-sequence parameter p of sequence m.
double family_parameter(const DataSettings &s, PetscInt m);

// Writes the N x d tokens of sequence m (row-major) to out.
void family_sample(const DataSettings &s, PetscInt d, PetscInt m, PetscInt N, double *out);

} // namespace mft
