// Aggregating a study: its case files read, the squared errors of every
// model against every reference handed to the statistics
// (study_statistics.hpp), and the tables, arrays and printed fits written.
#include "mft/studies/study.hpp"
#include "mft/studies/study_cases.hpp"
#include "mft/studies/study_statistics.hpp"
#include "mft/studies/study_tables.hpp"

#include "mft/settings/error.hpp"
#include "mft/files/runfile.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <list>
#include <filesystem>
#include <sstream>

namespace mft {

using namespace study;

namespace {

// Per probe sequence, over all probe sets in order: (1/N) sum_i |a_i - b_i|^2
// (b empty: |a_i|^2), a_i the rows of ds[f] numbers of set f; a weighted
// set's sum_i w_i |a_i - b_i|^2.
std::vector<double> sequence_errors(const std::vector<std::vector<double>> &a, const std::vector<std::vector<double>> &b,
                                    const std::vector<PetscInt> &Ns, const std::vector<PetscInt> &ds,
                                    const std::vector<std::vector<double>> &weights) {
  std::vector<double> out;
  for (size_t f = 0; f < a.size(); ++f) {
    const PetscInt N = Ns[f], d = ds[f];
    const size_t M = a[f].size() / (size_t)(N * d);
    const std::vector<double> &w = weights[f];
    for (size_t m = 0; m < M; ++m) {
      double e = 0;
      for (size_t k = m * N * d; k < (m + 1) * N * d; ++k) {
        const double diff = a[f][k] - (b.empty() ? 0.0 : b[f][k]);
        e += (w.empty() ? 1.0 : w[k / d]) * diff * diff;
      }
      out.push_back(w.empty() ? e / (double)N : e);
    }
  }
  return out;
}

// Per probe set, the N x N Gram matrices G_ij = a_i . a_j of its sequences
// of N tokens in R^d: what data.embed's study compares (rotation invariant,
// so models of any d compare).
std::vector<std::vector<double>> grams(const std::vector<std::vector<double>> &a, const std::vector<PetscInt> &Ns,
                                       PetscInt d) {
  std::vector<std::vector<double>> out;
  for (size_t f = 0; f < a.size(); ++f) {
    const size_t N = (size_t)Ns[f], M = a[f].size() / (N * (size_t)d);
    out.emplace_back(M * N * N);
    for (size_t m = 0; m < M; ++m)
      for (size_t i = 0; i < N; ++i)
        for (size_t j = 0; j < N; ++j) {
          const double *x = &a[f][(m * N + i) * d], *y = &a[f][(m * N + j) * d];
          double g = 0;
          for (PetscInt c = 0; c < d; ++c) g += x[c] * y[c];
          out.back()[(m * N + i) * N + j] = g;
        }
  }
  return out;
}

// The same probe sets (and, without data.embed, the same dimension).
bool same_shapes(const Settings &s, const CaseData &a, const CaseData &b) {
  if (a.N != b.N || a.tokens.size() != b.tokens.size()) return false;
  for (size_t f = 0; f < a.tokens.size(); ++f)
    if (a.tokens[f].size() / (size_t)a.d != b.tokens[f].size() / (size_t)b.d) return false;
  return s.data.embed > 0 || a.d == b.d;
}

// Reads them; a missing, failed or mismatched case is named (when `name`) and counted in *missing.
PetscErrorCode ReadVariant(const Settings &s, const std::string &dir, size_t v, const std::string &prefix, bool name,
                           VariantCases *out, PetscInt *missing) {
  const auto families = probe_names(s);
  PetscFunctionBeginUser;
  for (const StudyCase &c : StudyCases(s)) {
    if (!StudyCaseOf(s, c, (PetscInt)v)) continue;
    CaseData data;
    std::string problem;
    PetscCall(ReadCase(case_path(dir, c.index), families, prefix, &data, &problem));
    if (problem.empty() && !out->references.empty() && !same_shapes(s, data, out->references[0]))
      problem = c.reference ? "does not match reference 0's shapes" : "does not match its reference's shapes";
    if (!problem.empty()) {
      if (name) PetscCall(PetscPrintf(PETSC_COMM_SELF, "mft study: %s is missing or failed: %s\n", c.describe().c_str(),
                                      problem.c_str()));
      *missing += name;
      continue;
    }
    if (c.reference) out->references.push_back(std::move(data));
    else out->models.emplace_back(c, std::move(data)); // measured only with references; a learning-rate study's risks without
  }
  PetscFunctionReturn(0);
}

// Where a case file keeps the outputs of recorded time `time`.
std::string time_prefix(const Settings &s, PetscInt time) {
  return s.study.state == StudyState::trained ? "/times/" + std::to_string(time) : "";
}

// The squared errors of quantity q (0: tokens x(1), 1: adjoints p(0)) for the statistics.
StudyErrors ErrorsOf(const Settings &s, const VariantCases &vc, int q) {
  StudyErrors e;
  for (PetscInt L : integers(s.study.L)) e.L.push_back(L);
  for (PetscInt H : integers(s.study.H)) e.H.push_back(H);
  std::sort(e.L.begin(), e.L.end()), std::sort(e.H.begin(), e.H.end());
  const auto &refs = vc.references;
  const std::vector<PetscInt> &N = refs[0].N;
  // The rows compared: tokens in R^d, or with data.embed their Gram matrices' rows.
  const bool gram = s.data.embed > 0;
  const std::vector<PetscInt> ds = gram ? N : std::vector<PetscInt>(N.size(), refs[0].d);
  auto of = [q, gram, &N](const CaseData &c) {
    const std::vector<std::vector<double>> &x = q ? c.adjoint : c.tokens;
    return gram ? grams(x, N, c.d) : x;
  };
  std::vector<std::vector<std::vector<double>>> r;
  for (const CaseData &c : refs) r.push_back(of(c));
  e.references = refs.size();
  for (size_t a = 0; a < refs.size(); ++a) {
    e.square.push_back(sequence_errors(r[a], {}, N, ds, refs[0].weights));
    for (size_t b = a + 1; b < refs.size(); ++b) {
      e.pairs.push_back(sequence_errors(r[a], r[b], N, ds, refs[0].weights));
      for (double &x : e.pairs.back()) x *= 0.5;
    }
  }
  e.sequences = e.square[0].size();
  for (const auto &[c, data] : vc.models) {
    StudyErrors::Case k;
    const size_t i = std::find(e.L.begin(), e.L.end(), c.L) - e.L.begin(),
                 j = std::find(e.H.begin(), e.H.end(), c.H) - e.H.begin();
    k.cell = i * e.H.size() + j, k.seed = c.seed;
    const std::vector<std::vector<double>> x = of(data);
    for (size_t a = 0; a < refs.size(); ++a) k.e2.push_back(sequence_errors(x, r[a], N, ds, refs[0].weights));
    e.cases.push_back(std::move(k));
  }
  return e;
}

Training TrainingOf(const VariantCases &vc, const StudyErrors &e) {
  Training t;
  const size_t cells = e.L.size() * e.H.size();
  std::vector<double> n(cells, 0.0);
  t.change.assign(cells, 0.0), t.reduction.assign(cells, 0.0);
  for (size_t m = 0; m < vc.models.size(); ++m) {
    const size_t k = e.cases[m].cell;
    t.change[k] += vc.models[m].second.head_change, t.reduction[k] += std::log(vc.models[m].second.reduction), ++n[k];
  }
  for (size_t k = 0; k < cells; ++k) t.change[k] /= n[k], t.reduction[k] = std::exp(t.reduction[k] / n[k]);
  double c = 0, r = 0;
  for (const CaseData &ref : vc.references) c += ref.head_change, r += std::log(ref.reduction);
  t.reference_change = c / (double)vc.references.size();
  t.reference_reduction = std::exp(r / (double)vc.references.size());
  return t;
}

// How far each model's training curve sits from the references' mean curve
// over the steps before `time`, max_t |R(t) - R_ref(t)| / R_ref(t) (the
// loss-curve collapse of training dynamics); empty without curves or at step
// 0. The intervals take in the references' spread: every figure again with
// each reference left out of the mean curve.
std::vector<StudyValue> CurveDistances(const VariantCases &vc, const StudyErrors &e, size_t n, long long out) {
  std::vector<double> ref(n, 0.0);
  const double R = (double)vc.references.size() - (out >= 0 ? 1.0 : 0.0);
  for (size_t r = 0; r < vc.references.size(); ++r)
    if ((long long)r != out)
      for (size_t t = 0; t < n; ++t) ref[t] += vc.references[r].loss[t] / R;
  std::vector<StudyValue> values;
  for (size_t m = 0; m < vc.models.size(); ++m) {
    const std::vector<double> &Rm = vc.models[m].second.loss;
    double D = Rm.empty() ? NAN : 0.0;
    for (size_t t = 0; t < std::min(n, Rm.size()); ++t) D = std::fmax(D, std::fabs(Rm[t] - ref[t]) / ref[t]);
    values.push_back({e.cases[m].cell, e.cases[m].seed, D});
  }
  return values;
}

StudyScalar CurvesOf(const VariantCases &vc, const StudyErrors &e, PetscInt time) {
  size_t n = (size_t)time;
  for (const CaseData &r : vc.references) n = std::min(n, r.loss.size());
  if (n == 0) return StudyScalar();
  std::vector<std::vector<StudyValue>> reference_out;
  if (vc.references.size() >= 3) // a left-out mean of one reference would be that reference alone
    for (size_t r = 0; r < vc.references.size(); ++r) reference_out.push_back(CurveDistances(vc, e, n, (long long)r));
  return StudyScalarCompute(e.L, e.H, CurveDistances(vc, e, n, -1), 0.95, reference_out);
}

StudyOptions OptionsOf(const Settings &s) {
  StudyOptions o;
  o.resolution = s.study.resolution, o.keep_unresolved = s.study.keep_unresolved;
  if (s.study.state == StudyState::trained) o.reference_L = (double)s.study.reference_L, o.reference_H = (double)s.study.reference_H;
  return o;
}


// Per probe set (family and N): the corrected err over its sequences alone,
// and how often (over seeds) it attains the max over all sets.
void WriteProbeSets(Outputs &out, const Settings &s, const std::string &v, const std::string &variant, PetscInt time,
                    const VariantCases &vc, const StudyErrors &ex, const StudyErrors &ep) {
  const auto families = probe_names(s);
  const size_t M = (size_t)s.study.probe_M, nH = ex.H.size(), sets = families.size();
  std::vector<std::vector<double>> e2[2]; // per cell: per seed, per set
  std::vector<std::vector<PetscInt>> attains(ex.L.size() * nH, std::vector<PetscInt>(sets, 0));
  std::vector<std::vector<std::vector<double>>> sum[2];
  for (int q = 0; q < 2; ++q) sum[q].assign(ex.L.size() * nH, std::vector<std::vector<double>>());
  for (size_t m = 0; m < ex.cases.size(); ++m)
    for (int q = 0; q < 2; ++q) {
      const StudyErrors &e = q ? ep : ex;
      const std::vector<double> c = StudyCorrected(e, e.cases[m]);
      std::vector<double> per(sets, 0.0);
      for (size_t k = 0; k < c.size(); ++k) per[std::min(k / M, sets - 1)] = std::fmax(per[std::min(k / M, sets - 1)], c[k]);
      sum[q][e.cases[m].cell].push_back(per);
      if (q == 0)
        for (size_t f = 0; f < sets; ++f) attains[e.cases[m].cell][f] += per[f] >= *std::max_element(per.begin(), per.end());
    }
  for (size_t k = 0; k < ex.L.size() * nH; ++k)
    for (size_t f = 0; f < sets; ++f) {
      if (sum[0][k].empty()) continue;
      double e[2] = {0, 0};
      for (int q = 0; q < 2; ++q) {
        for (const auto &per : sum[q][k]) e[q] += per[f];
        e[q] = std::sqrt(e[q] / (double)sum[q][k].size());
      }
      out.sets << csv({v, quoted(variant), std::to_string(ex.L[k / nH]), std::to_string(ex.H[k % nH]),
                       std::to_string(time), families[f], std::to_string(vc.references[0].N[f]), num(e[0]), num(e[1]),
                       num((double)attains[k][f] / (double)sum[0][k].size())});
    }
}

void WriteCells(Outputs &out, const std::string &v, const std::string &variant, PetscInt time, const StudyErrors &e,
                const StudyStatistics st[2], PetscInt d, const Training &t, const StudyScalar &curves,
                const WorstFigure *worst, const FluctuationPrediction &law) {
  const size_t nH = e.H.size();
  const double rd = std::sqrt((double)d);
  for (size_t k = 0; k < st[0].cells.size(); ++k) {
    const StudyCell &x = st[0].cells[k], &p = st[1].cells[k];
    auto predicted = [&](const std::vector<double> &v) { return num(v.empty() ? NAN : v[k]); };
    out.table << csv({v, quoted(variant), std::to_string(e.L[k / nH]), std::to_string(e.H[k % nH]),
                      std::to_string(x.seeds), num(x.err[0]), num(x.ci[0].lo), num(x.ci[0].hi), num(p.err[0]),
                      num(p.ci[0].lo), num(p.ci[0].hi), std::to_string(time), num(st[0].floor), num(x.err[1]),
                      num(x.ci[1].lo), num(x.ci[1].hi), num(st[1].floor), num(p.err[1]), num(p.ci[1].lo),
                      num(p.ci[1].hi), num(x.clipped), num(p.clipped), num(x.err[1] / rd), num(x.relative),
                      std::to_string(e.references), num(x.ci[1].lo / rd), num(x.ci[1].hi / rd), num(x.relative_ci.lo),
                      num(x.relative_ci.hi), num(x.floor_ratio), num(p.floor_ratio), std::to_string(x.resolved),
                      std::to_string(p.resolved), num(t.change[k]), num(t.reduction[k]),
                      num(curves.mean.empty() ? NAN : curves.mean[k]), num(curves.mean.empty() ? NAN : curves.ci[k].lo),
                      num(curves.mean.empty() ? NAN : curves.ci[k].hi), num(worst ? worst->err.mean[k] : NAN),
                      num(worst ? worst->err.ci[k].lo : NAN), num(worst ? worst->err.ci[k].hi : NAN),
                      num(worst ? worst->search.mean[k] : NAN), num(worst ? worst->err.mean[k] / x.err[1] : NAN),
                      predicted(law.err), predicted(law.lo), predicted(law.hi), predicted(law.held)});
  }
}

// One quantity (0: tokens x(1), 1: adjoints p(0)) of one variant at one time:
// its fits (fits.csv, attributes), its err arrays, and the printed corrected fit.
PetscErrorCode WriteQuantity(Outputs &out, size_t v, const std::string &variant, PetscInt time, int q,
                             const StudyStatistics &st, const Training &training, size_t nL, size_t nH,
                             const FluctuationPrediction &law) {
  const std::string vs = std::to_string(v);
  const char *quantity = q ? "adjoint" : "tokens";
  const std::string name = "/v" + vs + "/" + quantity;
  PetscFunctionBeginUser;
  for (int c = 0; c < 2; ++c) {
    WriteFit(out, vs, variant, quantity, time, c, st.fit[c], training, c && !q && !law.err.empty() ? &law : nullptr);
    std::vector<double> err, lo, hi;
    for (const StudyCell &cell : st.cells) err.push_back(cell.err[c]), lo.push_back(cell.ci[c].lo), hi.push_back(cell.ci[c].hi);
    const std::string tag = c ? "_corrected" : "";
    out.store(name + "/err" + tag, {nL, nH}, err);
    out.store(name + "/err" + tag + "_lo", {nL, nH}, lo);
    out.store(name + "/err" + tag + "_hi", {nL, nH}, hi);
  }
  std::vector<double> resolved;
  for (const StudyCell &cell : st.cells) resolved.push_back(cell.resolved);
  out.store(name + "/resolved", {nL, nH}, resolved);
  out.store(name + "/err_floor", {1}, {st.floor});
  out.attribute("v" + vs + "." + quantity + ".floor", num(st.floor));
  const StudyFit &f = st.fit[1];
  char bias[192] = "";
  if (std::isfinite(f.reference_bias))
    std::snprintf(bias, sizeof bias, "; the reference's bias C1/L_ref ~%.2g (%.0f%% of the smallest err), "
                  "its spread from the fit %.2g (floor %.2g)", f.reference_bias,
                  100 * f.reference_bias / f.smallest, f.reference_spread, st.floor);
  std::string figures;
  for (const FitFigure &g : kFitFigures)
    figures += (figures.empty() ? "" : ", ") + std::string(g.name) + " " + with_interval(f.*g.value, f.*g.ci, f.flags, g.undecided);
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "mft study: v%zu %s t=%" PetscInt_FMT ": %s%s%s%s\n", v, quantity, time,
                        figures.c_str(), bias, f.flags.empty() ? "" : "; flags: ", f.flags.c_str()));
  PetscFunctionReturn(0);
}

// The tables' files and their header lines (and worst.csv, worst_N.csv with study.worst).
void OpenTables(Outputs &out, WorstTables &tables, const Settings &s, const std::string &dir) {
  out.table.open(dir + "/study.csv"), out.fits.open(dir + "/fits.csv"), out.sets.open(dir + "/probes.csv");
  out.sets << "variant,overrides,L,H,time,probe_set,N,err_corrected_x,err_corrected_p,attains_max_x\n";
  out.table << "variant,overrides,L,H,seeds,err_x,err_x_lo,err_x_hi,err_p,err_p_lo,err_p_hi,time,err_floor_x,"
               "err_corrected_x,err_corrected_x_lo,err_corrected_x_hi,err_floor_p,err_corrected_p,err_corrected_p_lo,"
               "err_corrected_p_hi,clipped_x,clipped_p,err_coord_x,err_rel_x,references,err_coord_x_lo,"
               "err_coord_x_hi,err_rel_x_lo,err_rel_x_hi,floor_ratio_x,floor_ratio_p,resolved_x,resolved_p,head_change,"
               "risk_reduction,curve_distance,curve_distance_lo,curve_distance_hi,err_worst_x,err_worst_x_lo,"
               "err_worst_x_hi,err_worst_search_x,worst_ratio_x,err_predicted_x,err_predicted_x_lo,"
               "err_predicted_x_hi,fluctuation_holds_x\n";
  out.expansions.open(dir + "/expansions.csv");
  out.expansions << "time,quantity," << kExpansionColumns << "\n";
  if (s.study.worst) OpenWorstTables(tables, dir);
  out.fits << "variant,overrides,quantity,slope_L,slope_L_lo,slope_L_hi,slope_H,slope_H_lo,slope_H_hi,a,b,C1,C2,"
              "joint_rms,time,corrected,a_lo,a_hi,b_lo,b_hi,flags,cells,reference_bias,reference_head_change,"
              "reference_risk_reduction,reference_spread,fluctuation_holds,fluctuation_cells,fluctuation_C1,fluctuation_C2\n";
}

// A grid along one size (one L, or one H): each quantity's corrected err
// fitted by expansions in that size (statistics/expansion.hpp), with their
// misfits, into expansions.csv and printed; a free order's interval the
// profile's (the joint bootstrap undercovers it with few seeds:
// tests/calibration --design expansion).
PetscErrorCode WriteExpansions(Outputs &out, size_t v, PetscInt time, const StudyErrors e[2],
                               const StudyStatistics st[2], bool keep_unresolved) {
  const bool along_H = e[0].L.size() == 1 && e[0].H.size() > 1, along_L = e[0].H.size() == 1 && e[0].L.size() > 1;
  PetscFunctionBeginUser;
  if (!along_H && !along_L) PetscFunctionReturn(0);
  for (int q = 0; q < 2; ++q) {
    std::vector<double> size, err, se;
    std::vector<char> use;
    for (size_t i = 0; i < st[q].cells.size(); ++i) {
      const StudyCell &c = st[q].cells[i];
      size.push_back((double)(along_H ? e[q].H[i] : e[q].L[i])), err.push_back(c.err[1]);
      se.push_back((c.ci[1].hi - c.ci[1].lo) / 3.92), use.push_back((c.resolved || keep_unresolved) && se.back() > 0);
    }
    std::vector<std::string> lines;
    const char *quantity = q ? "p" : "x";
    for (const std::string &r : ExpansionRows(v, along_H ? "H" : "L", size, err, se, use, &lines))
      out.expansions << std::to_string(time) << "," << quantity << "," << r << "\n";
    for (const std::string &l : lines)
      PetscCall(PetscPrintf(PETSC_COMM_SELF, "mft study: v%zu %s t=%" PetscInt_FMT ": err = %s\n", v, quantity, time,
                            l.c_str()));
  }
  PetscFunctionReturn(0);
}

// One variant at one recorded time: its errors, statistics, fits, cells,
// probe sets, law and worst inputs into the tables and study.h5.
PetscErrorCode AggregateVariant(Outputs &out, WorstTables &tables, const Settings &s, const std::string &dir, size_t v,
                                const std::string &variant, PetscInt time, const VariantCases &vc, HeadDimCells *kcells) {
  const std::string vs = std::to_string(v);
  PetscFunctionBeginUser;
  const StudyErrors e[2] = {ErrorsOf(s, vc, 0), ErrorsOf(s, vc, 1)};
  const StudyStatistics st[2] = {StudyStatisticsCompute(e[0], OptionsOf(s)), StudyStatisticsCompute(e[1], OptionsOf(s))};
  const size_t nL = e[0].L.size(), nH = e[0].H.size();
  const Training training = TrainingOf(vc, e[0]);
  if (kcells) AddHeadDimCells(kcells, time, VariantK(variant), StudyReferenceVariant(s, (PetscInt)v), e, st,
                              s.study.keep_unresolved);
  FluctuationPrediction law; // at initialisation (a trained study's time 0), from the fluctuation files
  if (time == 0) PetscCall(StudyFluctuationPredict(dir, v, e[0], st[0], &law));
  if (!law.err.empty()) out.store("/v" + vs + "/tokens/err_predicted", {nL, nH}, law.err);
  for (int q = 0; q < 2; ++q)
    PetscCall(WriteQuantity(out, v, variant, time, q, st[q], training, nL, nH, law));
  PetscCall(WriteExpansions(out, v, time, e, st, s.study.keep_unresolved));
  WriteProbeSets(out, s, vs, variant, time, vc, e[0], e[1]);
  const StudyScalar curves = CurvesOf(vc, e[0], time);
  if (!curves.mean.empty()) WriteFit(out, vs, variant, "curve", time, 0, curves.fit, training);
  std::vector<WorstFigure> worst;
  PetscCall(WorstOf(s, dir, v, time, out.last, vc, e[0], &worst));
  WriteCells(out, vs, variant, time, e[0], st, vc.references[0].d, training, curves,
             worst.empty() ? nullptr : &worst.back(), law); // the largest N's worst input, or the measure's
  PetscCall(WriteWorst(out, tables.worst, tables.slopes, vs, variant, time, e[0], st[0], training, worst));
  if (s.study.state == StudyState::trained)
    PetscCall(PetscPrintf(PETSC_COMM_SELF,
                          "mft study: v%zu t=%" PetscInt_FMT ": references' heads moved %.1f%%, risk reduced %.3gx\n",
                          v, time, 100 * training.reference_change, training.reference_reduction));
  out.store("/v" + vs + "/L", {nL}, std::vector<double>(e[0].L.begin(), e[0].L.end()));
  out.store("/v" + vs + "/H", {nH}, std::vector<double>(e[0].H.begin(), e[0].H.end()));
  out.attribute("v" + vs + ".overrides", variant.empty() ? "(none)" : variant);
  out.attribute("v" + vs + ".references", std::to_string(e[0].references));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode StudyFitsOf(const Settings &s, const std::string &dir, std::vector<QuantityFit> *fits, PetscInt *read) {
  const auto variants = StudyVariants(s);
  const std::vector<PetscInt> times = StudyTimes(s);
  PetscFunctionBeginUser;
  for (const PetscInt time : times)
    for (size_t v = 0; v < variants.size(); ++v) {
      VariantCases vc;
      PetscInt missing = 0;
      PetscCall(ReadVariant(s, dir, v, time_prefix(s, time), false, &vc, &missing));
      if (time == times.back()) *read += (PetscInt)(vc.references.size() + vc.models.size());
      if (vc.references.empty()) continue;
      for (int q = 0; q < 2; ++q)
        fits->push_back({v, q, time, StudyStatisticsCompute(ErrorsOf(s, vc, q), OptionsOf(s)).fit[1]});
    }
  PetscFunctionReturn(0);
}

// Whether dir holds any case of the study: a folder that is missing, or
// holds none of its cases, is one line, not a line for each case.
static PetscErrorCode AnyCase(MPI_Comm comm, const Settings &s, const std::string &dir) {
  PetscMPIInt rank;
  int found = 0;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  std::error_code ec;
  const std::vector<StudyCase> cases = StudyCases(s);
  for (size_t i = 0; rank == 0 && !found && i < cases.size(); ++i)
    found = std::filesystem::exists(case_path(dir, cases[i].index), ec);
  PetscCallMPI(MPI_Bcast(&found, 1, MPI_INT, 0, comm));
  PetscCheck(found, comm, PETSC_ERR_FILE_OPEN,
             "'%s' %s none of the study's %zu cases (case-<i>.h5): run the study first, or aggregate its study.dir",
             dir.c_str(), std::filesystem::is_directory(dir, ec) ? "holds" : "is no folder, so it holds",
             cases.size());
  PetscFunctionReturn(0);
}

PetscErrorCode StudyAggregate(MPI_Comm comm, const Settings &s, const std::string &dir, PetscInt *missing) {
  PetscMPIInt rank;
  PetscFunctionBeginUser;
  PetscCall(AnyCase(comm, s, dir));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  *missing = 0;
  if (rank == 0) {
    const auto variants = StudyVariants(s);
    const std::vector<PetscInt> times = StudyTimes(s);
    const bool rates = !s.study.learning_rates.empty();
    RateStudy rate_study = rates ? RateStudyOf(s) : RateStudy();
    Outputs out;
    WorstTables tables;
    OpenTables(out, tables, s, dir);
    // A study over the head dimension (every variant sets model.k alone, one L): its (k, H) fit.
    bool k_design = variants.size() > 1 && words(s.study.L).size() == 1 && !rates;
    for (const std::string &variant : variants) k_design = k_design && std::isfinite(VariantK(variant));
    HeadDimCells kcells;
    std::ofstream movement, diversity, spread;
    if (s.study.state == StudyState::trained) {
      movement.open(dir + "/movement.csv");
      movement << "variant,overrides,L,H,time,block,seeds,change,change_lo,change_hi,change_top\n";
      diversity.open(dir + "/diversity.csv");
      diversity << "variant,overrides,L,H,time,seeds,diversity,diversity_lo,diversity_hi\n";
      spread.open(dir + "/spread.csv");
      spread << "variant,overrides,L,H,time,seeds,spread,spread_lo,spread_hi\n";
    }
    // Every recorded time under /t<step> and t<step>.*; the last one also
    // without the prefix (the state at the end of training, or at initialisation).
    for (const PetscInt time : times) {
      out.last = time == times.back();
      out.at = "/t" + std::to_string(time), out.at_key = "t" + std::to_string(time) + ".";
      const std::string prefix = time_prefix(s, time);
      for (size_t v = 0; v < variants.size(); ++v) {
        const std::string vs = std::to_string(v);
        VariantCases vc;
        PetscCall(ReadVariant(s, dir, v, prefix, out.last, &vc, missing));
        if (out.last && rates) AddRateRisks(&rate_study, v, vc);
        if (movement.is_open()) WriteMovement(out, movement, vs, variants[v], time, vc);
        if (diversity.is_open()) WriteDiversity(out, diversity, vs, variants[v], time, vc);
        if (spread.is_open()) WriteSpread(spread, vs, variants[v], time, vc);
        if (vc.references.empty()) { // nothing of this variant can be measured
          if (out.last && s.study.references > 0) PetscCall(PetscPrintf(PETSC_COMM_SELF, "mft study: variant %zu (%s) has no reference: not measured\n",
                                              v, variants[v].c_str()));
          continue;
        }
        PetscCall(AggregateVariant(out, tables, s, dir, v, variants[v], time, vc, k_design ? &kcells : nullptr));
      }
    }
    if (rates) PetscCall(WriteLearningRates(out, rate_study, dir));
    if (k_design) PetscCall(WriteHeadDim(dir, kcells));
    std::string listed;
    for (PetscInt t : times) listed += (listed.empty() ? "" : " ") + std::to_string(t);
    out.attributes.emplace_back("study.recorded_times", listed);
    out.attributes.emplace_back("study.variants_count", std::to_string(variants.size()));
    out.attributes.emplace_back("study.missing", std::to_string(*missing));
    PetscCall(ResultFileWrite(PETSC_COMM_SELF, s, out.arrays, out.attributes, dir + "/study.h5"));
  }
  PetscCallMPI(MPI_Bcast(missing, 1, MPIU_INT, 0, comm));
  PetscFunctionReturn(0);
}

} // namespace mft
