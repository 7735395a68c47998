// The token distribution families of docs/model.md (seed 1), sampled per sequence,
// and their log-sum-exp functions lse_mu(a) = log E_mu exp(<a, x>) where a
// closed form exists.
//
// Sequence m draws its parameter p uniformly in [param_min, param_max] and its
// N tokens from the family's law, from its own random stream (seed, m): the
// same tokens on any number of ranks.
//   family        law                                            closed-form lse_mu(a)
//   discrete      N atoms i.i.d. N(0, p^2 I)                     (the atoms are the law: none)
//   uniform_cube  uniform on [-p, p]^d                           sum_j log(sinh(p a_j) / (p a_j))
//   laplace       symmetric Laplace, covariance S = p^2 I:       -log(1 - p^2 |a|^2 / 2),  p^2 |a|^2 < 2
//                 x = sqrt(E) G, E ~ Exp(1), G ~ N(0, S)
//   gauss_mix2    1/2 N(+m, s^2 I) + 1/2 N(-m, s^2 I),           s^2 |a|^2 / 2 + log cosh(<a, m>)
//                 m = p e_1, s = mix_std
//   gaussian      N(mu, S), S = p^2 diag(u), u_c ~ U[0.5, 1.5],  <a, mu> + a^T S a / 2
//                 mu ~ N(0, mean_spread^2 I)
// Every routine here is not collective: a rank samples the sequences it is given.
#pragma once

#include "mft/settings/settings.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace mft {

// The law of sequence m: its parameter p, and for gaussian its mean and the
// diagonal u of its covariance p^2 diag(u) (else empty).
struct SequenceLaw {
  double p = 1.0;
  std::vector<double> mean, u;
};
SequenceLaw family_law(const DataSettings &s, PetscInt d, PetscInt m);

// Writes the N x d tokens of sequence m (row-major) to out; with s.embed < d,
// the sequence drawn in R^embed, its tokens padded with zeros.
void family_sample(const DataSettings &s, PetscInt d, PetscInt m, PetscInt N, double *out);

// Whether the family has a closed-form lse, and the largest |a| where it holds.
bool family_has_closed_form(const std::string &family);
double family_closed_form_radius(const DataSettings &s);

// The closed-form lse of a law at a (inside its domain).
double family_lse(const DataSettings &s, const SequenceLaw &law, const double *a, PetscInt d);

// The probe sets: each family of study.probes, with study.probe_M sequences
// of its own seed, at each N of study.probe_N (default data.N); named by the
// family, and "<family>_N<n>" when study.probe_N is given; then, with
// study.probe_file, the first study.probe_M sequences of that data file
// (their tokens; N and d are the file's), named after the file.
// Not collective.
struct ProbeSet {
  std::string family, name;
  PetscInt N;         // 0 for a file: its own
  std::uint64_t seed; // data.seed + 7919 (f + 1) for family f, + 104729 N when study.probe_N is given
  std::string file;
};
std::vector<ProbeSet> probe_sets(const Settings &s);
std::vector<std::string> probe_names(const Settings &s);
std::vector<std::string> probe_overrides(const Settings &s, const ProbeSet &p);

} // namespace mft
