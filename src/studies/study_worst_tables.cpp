// A study's worst-input tables (study_tables.hpp): the figures of the
// searches' files against a variant's cases, worst.csv, worst_N.csv and
// their fits.
#include "mft/studies/study_tables.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

namespace mft {

using namespace study;

namespace {

// Per model case of e found in w, its worst-input figure (squared): the
// corrected squared error on the held-out references at its input found,
// clipped at 0 (with one held out, that one's raw squared error; with none,
// the raw one against the search references); held-out reference `out` left
// out when out >= 0. raw: instead, one of the raw figures against the
// search references (w.raw, what was maximised; w.collapsed; w.check).
std::vector<StudyValue> WorstValues(const WorstCases &w, const VariantCases &vc, const StudyErrors &e, long long out,
                                    const std::vector<double> *raw = nullptr) {
  std::map<PetscInt, size_t> at;
  for (size_t m = 0; m < vc.models.size(); ++m) at[vc.models[m].first.index] = m;
  std::vector<StudyValue> values;
  for (size_t i = 0; i < w.index.size(); ++i) {
    const auto it = at.find(w.index[i]);
    if (it == at.end() || (raw && raw->size() != w.index.size())) continue;
    double v = raw ? (*raw)[i] * (*raw)[i] : w.raw[i] * w.raw[i];
    if (!raw && w.heldout > 0) {
      double e2 = 0, pairs = 0;
      size_t kept = 0, kept_pairs = 0, k = 0;
      for (size_t b = 0; b < w.heldout; ++b)
        if ((long long)b != out) e2 += w.e2[i * w.heldout + b], ++kept;
      for (size_t a = 0; a < w.heldout; ++a)
        for (size_t b = a + 1; b < w.heldout; ++b, ++k)
          if ((long long)a != out && (long long)b != out) pairs += w.pair_terms[i * w.pairs + k], ++kept_pairs;
      v = e2 / (double)kept - (kept_pairs ? pairs / (double)kept_pairs : 0.0);
      v = std::fmax(v, 0.0);
    }
    values.push_back({e.cases[it->second].cell, e.cases[it->second].seed, v});
  }
  return values;
}

// The N searched (the files there: study.worst_N, or each variant's data.N),
// or with `measure` the K of the measures searched.
std::vector<PetscInt> WorstSearched(const std::string &dir, size_t v, PetscInt time, bool measure) {
  const std::string lead = std::filesystem::path(worst_path(dir, v, time, 0, measure)).filename().string();
  const std::string stem = lead.substr(0, lead.size() - 4); // "worst-v<v>-t<t>-N" (-K)
  std::vector<PetscInt> Ns;
  std::error_code ec;
  for (const auto &f : std::filesystem::directory_iterator(dir, ec)) {
    const std::string n = f.path().filename().string();
    if (n.rfind(stem, 0) == 0 && n.size() > stem.size() + 3 && n.substr(n.size() - 3) == ".h5")
      try {
        Ns.push_back((PetscInt)std::stoll(n.substr(stem.size(), n.size() - 3 - stem.size())));
      } catch (const std::exception &) {
      }
  }
  std::sort(Ns.begin(), Ns.end());
  return Ns;
}

// The flags of a fit that concern its slope in H (the others are the joint fit's).
std::string slope_flags(const std::string &flags) {
  std::string kept;
  for (const std::string &f : words(flags))
    if (f.rfind("slope_H", 0) == 0 || f.rfind("dropped", 0) == 0) kept += (kept.empty() ? "" : " ") + f;
  return kept;
}

} // namespace

PetscErrorCode WorstOf(const Settings &s, const std::string &dir, size_t v, PetscInt time, bool name,
                       const VariantCases &vc, const StudyErrors &e, std::vector<WorstFigure> *out) {
  PetscFunctionBeginUser;
  out->clear();
  if (!s.study.worst) PetscFunctionReturn(0);
  std::vector<std::pair<PetscInt, bool>> searched;
  for (bool measure : {false, true})
    for (PetscInt N : WorstSearched(dir, v, time, measure)) searched.emplace_back(N, measure);
  if (searched.empty() && name)
    PetscCall(PetscPrintf(PETSC_COMM_SELF, "mft study: variant %zu t=%" PetscInt_FMT " has no worst inputs in %s\n", v,
                          time, dir.c_str()));
  for (auto [N, measure] : searched) {
    WorstCases w;
    std::string problem;
    PetscCall(ReadWorst(worst_path(dir, v, time, N, measure), &w, &problem));
    if (!problem.empty()) {
      if (name) PetscCall(PetscPrintf(PETSC_COMM_SELF, "mft study: no worst inputs: %s\n", problem.c_str()));
      continue;
    }
    std::vector<std::vector<StudyValue>> reference_out;
    if (w.heldout >= 3)
      for (size_t b = 0; b < w.heldout; ++b) reference_out.push_back(WorstValues(w, vc, e, (long long)b));
    WorstFigure f;
    f.N = N, f.measure = measure, f.seconds = w.seconds;
    f.values = WorstValues(w, vc, e, -1);
    f.err = StudyScalarCompute(e.L, e.H, f.values, 0.95, reference_out, true);
    f.search = StudyScalarCompute(e.L, e.H, WorstValues(w, vc, e, -1, &w.raw), 0.95, {}, true);
    f.collapsed = StudyScalarCompute(e.L, e.H, WorstValues(w, vc, e, -1, &w.collapsed), 0.95, {}, true);
    if (!w.check.empty()) f.check = StudyScalarCompute(e.L, e.H, WorstValues(w, vc, e, -1, &w.check), 0.95, {}, true);
    out->push_back(std::move(f));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode WriteWorst(Outputs &out, std::ofstream &table, std::ofstream &slopes, const std::string &v,
                          const std::string &variant, PetscInt time, const StudyErrors &e, const StudyStatistics &st,
                          const Training &training, const std::vector<WorstFigure> &figures) {
  const size_t nH = e.H.size();
  PetscFunctionBeginUser;
  std::vector<const WorstFigure *> sequences;
  for (const WorstFigure &f : figures) {
    const std::string quantity = "tokens_worst" + (figures.size() > 1 ? (f.measure ? "_K" : "_N") + std::to_string(f.N) : "");
    WriteFit(out, v, variant, quantity.c_str(), time, 1, f.err.fit, training);
    if (!f.measure) sequences.push_back(&f);
    for (size_t k = 0; k < st.cells.size(); ++k)
      table << csv({v, quoted(variant), std::to_string(e.L[k / nH]), std::to_string(e.H[k % nH]), std::to_string(time),
                    f.measure ? "inf" : std::to_string(f.N), f.measure ? std::to_string(f.N) : "",
                    std::to_string(st.cells[k].seeds), num(f.err.mean[k]), num(f.err.ci[k].lo), num(f.err.ci[k].hi),
                    num(f.search.mean[k]), num(st.cells[k].err[1]), num(f.err.mean[k] / st.cells[k].err[1]),
                    num(f.seconds), num(f.collapsed.mean.empty() ? NAN : f.collapsed.mean[k]),
                    num(f.check.mean.empty() ? NAN : f.check.mean[k] / f.search.mean[k] - 1)});
    const StudyFit &x = f.err.fit;
    PetscCall(PetscPrintf(PETSC_COMM_SELF,
                          "mft study: v%s %s t=%" PetscInt_FMT " (lower bounds on the supremum): slope_L %s, slope_H "
                          "%s, a %s, b %s%s%s\n",
                          v.c_str(), quantity.c_str(), time, with_interval(x.slope_L, x.slope_L_ci, x.flags, "slope_L:").c_str(),
                          with_interval(x.slope_H, x.slope_H_ci, x.flags, "slope_H:").c_str(),
                          with_interval(x.a, x.a_ci, x.flags, "a: ab: joint:").c_str(),
                          with_interval(x.b, x.b_ci, x.flags, "b: ab: joint:").c_str(), x.flags.empty() ? "" : "; flags: ",
                          x.flags.c_str()));
  }
  if (sequences.size() < 2) PetscFunctionReturn(0);
  // Per cell, N as the grid's second axis: StudyScalar's slope in H is the slope in N.
  std::vector<long long> Ns;
  for (const WorstFigure *f : sequences) Ns.push_back(f->N);
  for (size_t k = 0; k < st.cells.size(); ++k) {
    std::vector<StudyValue> values;
    for (size_t n = 0; n < sequences.size(); ++n)
      for (const StudyValue &x : sequences[n]->values)
        if (x.cell == k) values.push_back({n, x.seed, x.value});
    const StudyScalar byN = StudyScalarCompute({1}, Ns, values, 0.95, {}, true);
    slopes << csv({v, quoted(variant), std::to_string(e.L[k / nH]), std::to_string(e.H[k % nH]), std::to_string(time),
                   num(byN.fit.slope_H), num(byN.fit.slope_H_ci.lo), num(byN.fit.slope_H_ci.hi), quoted(slope_flags(byN.fit.flags))});
  }
  PetscFunctionReturn(0);
}

void OpenWorstTables(WorstTables &tables, const std::string &dir) {
  tables.worst.open(dir + "/worst.csv"), tables.slopes.open(dir + "/worst_N.csv");
  tables.worst << "variant,overrides,L,H,time,N,atoms,seeds,err_worst_x,err_worst_x_lo,err_worst_x_hi,err_worst_search_x,"
                  "err_corrected_x,worst_ratio_x,search_seconds,err_collapsed_search_x,check_gain\n";
  tables.slopes << "variant,overrides,L,H,time,worst_slope_N,worst_slope_N_lo,worst_slope_N_hi,flags\n";
}

} // namespace mft
