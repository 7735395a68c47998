// Sampling of the five token families and their closed-form log-sum-exp
// (docs/model.md, 'The NTK').
#include "mft/flow/families.hpp"

#include "mft/layout/random.hpp"
#include "mft/settings/options.hpp"

#include <cmath>
#include <filesystem>
#include <limits>

namespace mft {

// The law's parameters come first in the sequence's stream, its tokens after.
static SequenceLaw draw_law(const DataSettings &s, PetscInt d, PetscInt m, Stream &r) {
  SequenceLaw law;
  Stream rp(s.seed, kSequenceParam, (std::uint64_t)m);
  law.p = s.param_min + (s.param_max - s.param_min) * rp.uniform();
  if (s.family == "gaussian") {
    law.mean.resize((size_t)d);
    for (auto &c : law.mean) c = s.mean_spread * r.normal();
    law.u.resize((size_t)d);
    for (auto &c : law.u) c = 0.5 + r.uniform();
  }
  return law;
}

SequenceLaw family_law(const DataSettings &s, PetscInt d, PetscInt m) {
  Stream r(s.seed, kTokens, (std::uint64_t)m);
  return draw_law(s, d, m, r);
}

void family_sample(const DataSettings &s, PetscInt d, PetscInt m, PetscInt N, double *out) {
  if (s.embed > 0 && s.embed < d) { // drawn in R^embed, padded with zeros
    std::vector<double> small((size_t)(N * s.embed));
    family_sample(s, s.embed, m, N, small.data());
    for (PetscInt i = 0; i < N; ++i)
      for (PetscInt c = 0; c < d; ++c) out[i * d + c] = c < s.embed ? small[(size_t)(i * s.embed + c)] : 0.0;
    return;
  }
  Stream r(s.seed, kTokens, (std::uint64_t)m);
  const SequenceLaw law = draw_law(s, d, m, r);
  const double p = law.p;
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
      for (PetscInt c = 0; c < d; ++c) x[c] = law.mean[c] + p * std::sqrt(law.u[c]) * r.normal();
    }
  }
}

bool family_has_closed_form(const std::string &family) { return family != "discrete"; }

double family_closed_form_radius(const DataSettings &s) {
  if (s.family == "laplace") return std::sqrt(2.0) / s.param_max;
  return std::numeric_limits<double>::infinity();
}

// log(sinh(x)/x), even, with its series near 0 where the quotient loses digits.
static double log_sinhc(double x) {
  x = std::fabs(x);
  if (x < 1e-3) return x * x / 6.0 - x * x * x * x / 180.0;
  if (x > 20) return x - std::log(2.0 * x); // sinh(x) = e^x / 2 to double precision
  return std::log(std::sinh(x) / x);
}

// log cosh(x) without overflow.
static double log_cosh(double x) {
  x = std::fabs(x);
  return x + std::log1p(std::exp(-2.0 * x)) - std::log(2.0);
}

double family_lse(const DataSettings &s, const SequenceLaw &law, const double *a, PetscInt d) {
  double a2 = 0;
  for (PetscInt c = 0; c < d; ++c) a2 += a[c] * a[c];
  const double p = law.p;
  if (s.family == "uniform_cube") {
    double sum = 0;
    for (PetscInt c = 0; c < d; ++c) sum += log_sinhc(p * a[c]);
    return sum;
  }
  if (s.family == "laplace") return -std::log(1.0 - p * p * a2 / 2.0);
  if (s.family == "gauss_mix2") return s.mix_std * s.mix_std * a2 / 2.0 + log_cosh(p * a[0]);
  if (s.family == "gaussian") {
    double am = 0, aSa = 0;
    for (PetscInt c = 0; c < d; ++c) {
      am += a[c] * law.mean[c];
      aSa += p * p * law.u[c] * a[c] * a[c];
    }
    return am + aSa / 2.0;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::vector<ProbeSet> probe_sets(const Settings &s) {
  const auto families = words(s.study.probes);
  std::vector<PetscInt> Ns = integers(s.study.probe_N);
  const bool named = !Ns.empty();
  if (Ns.empty()) Ns.push_back(s.data.N);
  std::vector<ProbeSet> sets;
  for (size_t f = 0; f < families.size(); ++f)
    for (PetscInt N : Ns)
      sets.push_back({families[f], named ? families[f] + "_N" + std::to_string(N) : families[f], N,
                      s.data.seed + 7919 * (f + 1) + (named ? 104729 * (std::uint64_t)N : 0), ""});
  if (!s.study.probe_file.empty())
    sets.push_back({"file", std::filesystem::path(s.study.probe_file).stem().string(), 0, 0, s.study.probe_file});
  return sets;
}

std::vector<std::string> probe_names(const Settings &s) {
  std::vector<std::string> names;
  for (const ProbeSet &p : probe_sets(s)) names.push_back(p.name);
  return names;
}

std::vector<std::string> probe_overrides(const Settings &s, const ProbeSet &p) {
  if (!p.file.empty()) return {"--data.file", p.file, "--data.M", std::to_string(s.study.probe_M)};
  return {"--data.family", p.family, "--data.M", std::to_string(s.study.probe_M), "--data.N", std::to_string(p.N),
          "--data.seed", std::to_string(p.seed), "--data.file", ""};
}

} // namespace mft
