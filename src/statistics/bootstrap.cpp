// Resamples as weights, and the intervals made from them (bootstrap.hpp).
#include "mft/statistics/bootstrap.hpp"

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include <algorithm>

namespace mft {

std::vector<double> BootstrapCounts(size_t n, Stream &st) {
  std::vector<double> counts(n, 0.0);
  for (size_t i = 0; i < n; ++i) counts[std::min(n - 1, (size_t)(st.uniform() * (double)n))] += 1;
  return counts;
}

std::array<double, 2> BootstrapInterval(double theta, const std::vector<std::vector<double>> &by_source,
                                        const std::vector<double> &units, double level) {
  double V = 0, denominator = 0;
  bool any = false;
  for (size_t s = 0; s < by_source.size(); ++s) {
    double n = 0, mean = 0, m2 = 0;
    for (double x : by_source[s])
      if (std::isfinite(x)) { // Welford
        n += 1;
        const double d = x - mean;
        mean += d / n, m2 += d * (x - mean);
      }
    if (n < 2) continue;
    const double u = units[s], Vs = m2 / (n - 1) * (std::isfinite(u) ? u / (u - 1) : 1.0);
    V += Vs, any = true;
    if (std::isfinite(u)) denominator += Vs * Vs / (u - 1);
  }
  if (!any || !std::isfinite(theta)) return {NAN, NAN};
  const double p = 0.5 + level / 2;
  const double nu = denominator > 0 ? V * V / denominator : INFINITY;
  const double t = std::isfinite(nu) && nu < 1e6 ? boost::math::quantile(boost::math::students_t(nu), p)
                                                 : boost::math::quantile(boost::math::normal(), p);
  return {theta - t * std::sqrt(V), theta + t * std::sqrt(V)};
}

std::array<double, 2> Percentiles95(std::vector<double> v) {
  if (v.empty()) return {NAN, NAN};
  std::sort(v.begin(), v.end());
  const auto at = [&](double t) { return v[(size_t)std::min<double>((double)v.size() - 1, std::floor(t * (double)v.size()))]; };
  return {at(0.025), at(0.975)};
}

} // namespace mft
