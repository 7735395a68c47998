// Sampling of the five token families (MODEL.md, 'Token distribution families').
#include "mft/families.hpp"

#include "mft/random.hpp"

#include <cmath>
#include <vector>

namespace mft {

double family_parameter(const DataSettings &s, PetscInt m) {
  Stream r(s.seed, kSequenceParam, (std::uint64_t)m);
  return s.param_min + (s.param_max - s.param_min) * r.uniform();
}

void family_sample(const DataSettings &s, PetscInt d, PetscInt m, PetscInt N, double *out) {
  const double p = family_parameter(s, m);
  Stream r(s.seed, kTokens, (std::uint64_t)m);
  std::vector<double> mean(d, 0.0);
  if (s.family == "gaussian")
    for (auto &c : mean) c = s.mean_spread * r.normal();
  for (PetscInt i = 0; i < N; ++i) {
    double *x = out + i * d;
    if (s.family == "discrete") {
      for (PetscInt c = 0; c < d; ++c) x[c] = p * r.normal();
    } else if (s.family == "uniform_cube") {
      for (PetscInt c = 0; c < d; ++c) x[c] = p * (2.0 * r.uniform() - 1.0);
    } else if (s.family == "laplace") {
      const double e = std::sqrt(r.exponential());
      for (PetscInt c = 0; c < d; ++c) x[c] = e * p * r.normal();
    } else if (s.family == "gauss_mix2") {
      const double sign = r.uniform() < 0.5 ? -1.0 : 1.0;
      for (PetscInt c = 0; c < d; ++c) x[c] = s.mix_std * r.normal() + (c == 0 ? sign * p : 0.0);
    } else { // gaussian
      for (PetscInt c = 0; c < d; ++c) x[c] = mean[c] + p * r.normal();
    }
  }
}

} // namespace mft
