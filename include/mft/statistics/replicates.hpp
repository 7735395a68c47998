// Replicates of one study (the same config run again with other seeds): how
// often one replicate's figure lies inside another's interval, and the
// figure pooled over them. Not collective.
//
// With calibrated intervals of one width, replicate i's point lies in j's
// interval with probability P(|Z| < z / sqrt 2) (0.834 at 95%): both
// points carry the noise. The pool is the fixed-effect combination: the
// inverse-variance weighted mean, each replicate's standard error its
// interval's half-width over z (replicates share data and teacher, not seeds).
#pragma once

#include <cmath>
#include <vector>

namespace mft {

struct ReplicateFigure {
  double value = NAN, lo = NAN, hi = NAN;
  bool determined = false; // the replicate's data decide it (no flag of its own)
};

struct ReplicateAgreement {
  long agree = 0, pairs = 0, undetermined = 0; // undetermined: pairs with either figure not determined
  double fraction() const { return pairs ? (double)agree / pairs : NAN; }
  ReplicateAgreement &operator+=(const ReplicateAgreement &o) {
    agree += o.agree, pairs += o.pairs, undetermined += o.undetermined;
    return *this;
  }
};

// Over the ordered pairs (i, j), i != j: whether i's value lies in j's interval.
// Not collective.
ReplicateAgreement AgreementOf(const std::vector<ReplicateFigure> &figures);

// The fraction calibrated intervals at `level` give: P(|Z| < z / sqrt 2).
// Not collective.
double AgreementExpected(double level = 0.95);

struct PooledFigure {
  double value = NAN, lo = NAN, hi = NAN;
  int used = 0; // replicates determined with an interval of positive width
};

// The fixed-effect pool of the determined figures, with its interval at `level`.
// Not collective.
PooledFigure PoolOf(const std::vector<ReplicateFigure> &figures, double level = 0.95);

} // namespace mft
