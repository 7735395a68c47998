// A learning-rate study's tables (study.learning_rates): the risk per rate
// and cell with its interval (lr.csv), the best rate per cell and its drift
// in L and H (best_lr.csv, fits.csv).
#include "mft/studies/study_tables.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace mft {

using namespace study;

// The rates and grid of a learning-rate study (its risks come from the
// models AddRateRisks is given).
RateStudy RateStudyOf(const Settings &s) {
  RateStudy r;
  r.words = words(s.study.learning_rates);
  for (const std::string &w : r.words) r.rates.push_back(std::stod(w));
  for (size_t j = 0; j < r.words.size(); ++j) r.order.push_back(j);
  std::sort(r.order.begin(), r.order.end(), [&](size_t a, size_t b) { return r.rates[a] < r.rates[b]; });
  for (PetscInt x : integers(s.study.L)) r.L.push_back(x);
  for (PetscInt x : integers(s.study.H)) r.H.push_back(x);
  std::sort(r.L.begin(), r.L.end()), std::sort(r.H.begin(), r.H.end());
  r.bases = words(s.study.variants, ';');
  if (r.bases.empty()) r.bases.push_back("");
  r.last = StudyTimes(s).back();
  return r;
}

// The risks of variant v's models at the last step.
void AddRateRisks(RateStudy *r, size_t v, const VariantCases &vc) {
  const size_t nr = r->words.size();
  for (const auto &[c, data] : vc.models) {
    const size_t i = std::find(r->L.begin(), r->L.end(), c.L) - r->L.begin(),
                 k = std::find(r->H.begin(), r->H.end(), c.H) - r->H.begin();
    r->all.push_back({v / nr, v % nr, i * r->H.size() + k, c.seed, data.risk, data.heldout_risk});
  }
}

namespace {

// lr.csv: per base variant, cell and rate, the mean risk over seeds (training,
// held-out) with its interval.
void WriteRateTable(std::ofstream &table, const RateStudy &r, size_t b) {
  const size_t nH = r.H.size();
  std::vector<StudyScalar> per[2];
  for (int q = 0; q < 2; ++q)
    for (size_t j = 0; j < r.rates.size(); ++j) {
      std::vector<StudyValue> v;
      for (const RateRisk &x : r.all)
        if (x.base == b && x.rate == j) v.push_back({x.cell, x.seed, q ? x.heldout : x.risk});
      per[q].push_back(StudyScalarCompute(r.L, r.H, v));
    }
  for (size_t k = 0; k < r.cells(); ++k)
    for (size_t j : r.order) {
      size_t seeds = 0;
      for (const RateRisk &x : r.all) seeds += x.base == b && x.rate == j && x.cell == k;
      table << csv({std::to_string(b), quoted(r.bases[b]), std::to_string(r.L[k / nH]), std::to_string(r.H[k % nH]),
                    r.words[j], std::to_string(seeds), num(per[0][j].mean[k]), num(per[0][j].ci[k].lo),
                    num(per[0][j].ci[k].hi), num(per[1][j].mean[k]), num(per[1][j].ci[k].lo), num(per[1][j].ci[k].hi)});
    }
}

// best_lr.csv: per cell the mean best rate over seeds (q = 0: by the training
// risk, 1: by the held-out risk) with its interval, and how often it sat at
// an end of the grid; its drift in L and H in fits.csv and printed.
PetscErrorCode WriteBestRates(Outputs &out, std::ofstream &best, const RateStudy &r, size_t b, int q) {
  const size_t nH = r.H.size(), nr = r.rates.size();
  std::map<std::pair<size_t, long long>, std::vector<double>> curves; // (cell, seed): risk at the sorted rates
  for (const RateRisk &x : r.all) {
    if (x.base != b) continue;
    auto &c = curves[{x.cell, x.seed}];
    c.resize(nr, NAN);
    c[std::find(r.order.begin(), r.order.end(), x.rate) - r.order.begin()] = q ? x.heldout : x.risk;
  }
  std::vector<double> sorted;
  for (size_t j : r.order) sorted.push_back(r.rates[j]);
  std::vector<StudyValue> values;
  std::vector<double> edges(r.cells(), 0.0), n(r.cells(), 0.0);
  double edge_total = 0, infinite = 0;
  for (auto &[key, risk] : curves) {
    // A case that diverged (or is missing) counts as an infinite risk at its rate.
    if (std::none_of(risk.begin(), risk.end(), [](double x) { return x > 0 && std::isfinite(x); })) continue;
    for (double &x : risk)
      if (!(x > 0) || !std::isfinite(x)) x = INFINITY, ++infinite;
    bool edge;
    values.push_back({key.first, key.second, StudyBestRate(sorted, risk, &edge)});
    edges[key.first] += edge, edge_total += edge, ++n[key.first];
  }
  PetscFunctionBeginUser;
  if (values.empty()) PetscFunctionReturn(0); // no held-out risk recorded
  const StudyScalar lr = StudyScalarCompute(r.L, r.H, values);
  const char *quantity = q ? "best_lr_heldout" : "best_lr";
  for (size_t k = 0; k < r.cells(); ++k)
    best << csv({std::to_string(b), quoted(r.bases[b]), std::to_string(r.L[k / nH]), std::to_string(r.H[k % nH]),
                 quantity, num(lr.mean[k]), num(lr.ci[k].lo), num(lr.ci[k].hi), num(n[k] ? edges[k] / n[k] : NAN)});
  WriteFit(out, std::to_string(b), r.bases[b], quantity, r.last, 0, lr.fit, Training());
  // A slope whose best rates sit at an end of the grid (more than a quarter
  // of them) only bounds the drift: not determined.
  const bool edges_decide = edge_total > 0.25 * (double)values.size();
  auto verdict = [&](const StudyInterval &ci) {
    if (!std::isfinite(ci.lo) || edges_decide) return "is not determined";
    return ci.lo <= 0 && ci.hi >= 0 ? "transfers (the interval holds 0)" : "drifts";
  };
  std::string edge_note =
      edge_total > 0 ? "; " + num(edge_total) + " best rates at an end of the grid (widen study.learning_rates)" : "";
  if (infinite > 0) edge_note += "; " + num(infinite) + " diverged or missing cases taken as infinite risk";
  PetscCall(PetscPrintf(PETSC_COMM_SELF,
                        "mft study: learning rates v%zu (%s risk at step %" PetscInt_FMT "): best lr ~ L^%s H^%s; in "
                        "depth it %s, in width it %s%s\n",
                        b, q ? "held-out" : "training", r.last,
                        with_interval(lr.fit.slope_L, lr.fit.slope_L_ci, "", "").c_str(),
                        with_interval(lr.fit.slope_H, lr.fit.slope_H_ci, "", "").c_str(), verdict(lr.fit.slope_L_ci),
                        verdict(lr.fit.slope_H_ci), edge_note.c_str()));
  PetscFunctionReturn(0);
}

} // namespace

// A learning-rate study's tables: lr.csv, best_lr.csv and the drift fits.
PetscErrorCode WriteLearningRates(Outputs &out, const RateStudy &r, const std::string &dir) {
  PetscFunctionBeginUser;
  std::ofstream table(dir + "/lr.csv"), best(dir + "/best_lr.csv");
  table << "variant,overrides,L,H,lr,seeds,risk,risk_lo,risk_hi,heldout_risk,heldout_risk_lo,heldout_risk_hi\n";
  best << "variant,overrides,L,H,quantity,best_lr,best_lr_lo,best_lr_hi,edge_fraction\n";
  for (size_t b = 0; b < r.bases.size(); ++b) {
    WriteRateTable(table, r, b);
    for (int q = 0; q < 2; ++q) PetscCall(WriteBestRates(out, best, r, b, q));
  }
  PetscFunctionReturn(0);
}

} // namespace mft
