// Replicates' agreement and their fixed-effect pool (replicates.hpp).
#include "mft/statistics/replicates.hpp"

#include <boost/math/distributions/normal.hpp>

namespace mft {

static double z_of(double level) { return boost::math::quantile(boost::math::normal(), 0.5 + level / 2); }

ReplicateAgreement AgreementOf(const std::vector<ReplicateFigure> &figures) {
  ReplicateAgreement r;
  for (size_t i = 0; i < figures.size(); ++i)
    for (size_t j = 0; j < figures.size(); ++j) {
      if (i == j) continue;
      const ReplicateFigure &x = figures[i], &y = figures[j];
      if (!x.determined || !y.determined) {
        ++r.undetermined;
        continue;
      }
      ++r.pairs;
      r.agree += y.lo <= x.value && x.value <= y.hi;
    }
  return r;
}

double AgreementExpected(double level) { return std::erf(z_of(level) / 2); } // P(|Z| < z/sqrt 2) = erf(z/2)

PooledFigure PoolOf(const std::vector<ReplicateFigure> &figures, double level) {
  const double z = z_of(level);
  double w = 0, wx = 0;
  PooledFigure p;
  for (const ReplicateFigure &f : figures) {
    if (!f.determined || !(f.hi > f.lo) || !std::isfinite(f.value)) continue;
    const double weight = std::pow(2 * z / (f.hi - f.lo), 2);
    w += weight, wx += weight * f.value, ++p.used;
  }
  if (!p.used) return p;
  const double se = 1 / std::sqrt(w);
  p.value = wx / w, p.lo = p.value - z * se, p.hi = p.value + z * se;
  return p;
}

} // namespace mft
