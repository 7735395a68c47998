// A study's tables: CSV rows and files, the printed figures with their
// intervals, a fit's row and attributes (study_tables.hpp).
#include "mft/studies/study_tables.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace mft {

using namespace study;

PetscErrorCode WriteTable(MPI_Comm comm, const std::string &path, const std::string &header,
                          const std::vector<std::string> &rows) {
  PetscMPIInt rank;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    std::ofstream out(path);
    out << header << "\n";
    for (const std::string &r : rows) out << r; // csv() ends each row
    PetscCheck(out.good(), PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "cannot write '%s'", path.c_str());
  }
  PetscFunctionReturn(0);
}

std::string csv(const std::vector<std::string> &fields) {
  std::string row;
  for (const std::string &f : fields) row += (row.empty() ? "" : ",") + f;
  return row + "\n";
}

std::string quoted(const std::string &s) { return "\"" + s + "\""; }

// Whether none of the flags `undecided` (space-separated) is raised.
bool determined(const std::string &flags, const std::string &undecided) {
  std::istringstream in(undecided);
  for (std::string f; in >> f;)
    if (flags.find(f) != std::string::npos) return false;
  return true;
}

const FitFigure kFitFigures[4] = {{"slope_L", &StudyFit::slope_L, &StudyFit::slope_L_ci, "slope_L:"},
                                  {"slope_H", &StudyFit::slope_H, &StudyFit::slope_H_ci, "slope_H:"},
                                  {"a", &StudyFit::a, &StudyFit::a_ci, "a: ab: joint:"},
                                  {"b", &StudyFit::b, &StudyFit::b_ci, "b: ab: joint:"}};

// A figure of the printed summary with its interval; "(not determined)" when
// one of the flags `undecided` is raised.
std::string with_interval(double x, StudyInterval ci, const std::string &flags, const std::string &undecided) {
  char b[96];
  if (!determined(flags, undecided)) {
    std::snprintf(b, sizeof b, "%.3f (not determined)", x);
    return b;
  }
  if (!std::isfinite(x)) return "-";
  if (!std::isfinite(ci.lo)) std::snprintf(b, sizeof b, "%.3f [no interval]", x);
  else std::snprintf(b, sizeof b, "%.3f [%.3f, %.3f]", x, ci.lo, ci.hi);
  return b;
}

void WriteFit(Outputs &out, const std::string &v, const std::string &variant, const char *quantity, PetscInt time,
              int corrected, const StudyFit &f, const Training &t, const FluctuationPrediction *law) {
  out.fits << csv({v, quoted(variant), quantity, num(f.slope_L), num(f.slope_L_ci.lo), num(f.slope_L_ci.hi),
                   num(f.slope_H), num(f.slope_H_ci.lo), num(f.slope_H_ci.hi), num(f.a), num(f.b), num(f.C1), num(f.C2),
                   num(f.rms), std::to_string(time), std::to_string(corrected), num(f.a_ci.lo), num(f.a_ci.hi),
                   num(f.b_ci.lo), num(f.b_ci.hi), quoted(f.flags), std::to_string(f.cells),
                   num(f.reference_bias), num(t.reference_change), num(t.reference_reduction),
                   num(f.reference_spread), num(law ? law->holds : NAN), law ? std::to_string(law->cells) : "",
                   num(law ? law->C1 : NAN), num(law ? law->C2 : NAN)});
  const std::string key = "v" + v + "." + quantity + (corrected ? ".corrected." : ".");
  for (auto &[name, x] : std::vector<std::pair<std::string, double>>{
           {"slope_L", f.slope_L}, {"slope_L_lo", f.slope_L_ci.lo}, {"slope_L_hi", f.slope_L_ci.hi},
           {"slope_H", f.slope_H}, {"slope_H_lo", f.slope_H_ci.lo}, {"slope_H_hi", f.slope_H_ci.hi},
           {"a", f.a}, {"b", f.b}, {"a_lo", f.a_ci.lo}, {"a_hi", f.a_ci.hi}, {"b_lo", f.b_ci.lo},
           {"b_hi", f.b_ci.hi}, {"C1", f.C1}, {"C2", f.C2}, {"reference_bias", f.reference_bias},
           {"reference_spread", f.reference_spread}})
    out.attribute(key + name, num(x));
  out.attribute(key + "flags", f.flags.empty() ? "(none)" : f.flags);
}

std::vector<std::string> EnergyCells(const LawGap &g) {
  const Energy &e = g.energy;
  return {num(e.value), num(e.se), num(e.floor), num(g.energy_lo), num(g.energy_hi),
          g.energy_resolved ? "true" : "false", std::to_string(e.S)};
}

std::vector<std::string> PowerFitMisfit(const PowerFit &f) {
  if (!f.cells) return {"", "", "", "", "", "", "", ""};
  const auto word = [](bool b) { return std::string(b ? "true" : "false"); };
  return {study::num(f.chi2), std::to_string(f.dof), study::num(f.p_value), word(f.rejected()),
          f.fits_p ? word(f.decided_p()) : "", f.fits_q ? word(f.decided_q()) : "",
          f.reference ? study::num(f.L_ref) : "", f.reference ? study::num(f.H_ref) : ""};
}

std::vector<std::string> ExpansionRows(size_t v, const std::string &x, const std::vector<double> &size,
                                       const std::vector<double> &err, const std::vector<double> &se,
                                       const std::vector<char> &resolved, std::vector<std::string> *lines,
                                       const std::vector<double> &rho) {
  using study::num;
  std::vector<double> xs, ys, ss, rs;
  std::vector<size_t> at;
  std::vector<std::string> rows;
  for (size_t i = 0; i < size.size(); ++i)
    if (resolved[i] && err[i] > 0) xs.push_back(size[i]), ys.push_back(err[i]), ss.push_back(se[i]), at.push_back(i);
  for (size_t i = 0; i < at.size() && !rho.empty(); ++i)
    for (size_t j = 0; j < at.size(); ++j) rs.push_back(rho[at[i] * size.size() + at[j]]);
  lines->clear();
  for (const Expansion &e : {ExpansionFit(xs, ys, ss, 1, true, 1, rs), ExpansionFit(xs, ys, ss, 2, false, 1, rs),
                             ExpansionFit(xs, ys, ss, 2, true, 1, rs)}) {
    if (!e.terms) continue;
    lines->push_back(ExpansionLine(e, x));
    const bool two = e.terms > 1;
    rows.push_back(csv({std::to_string(v), x, quoted(ExpansionForm(e, x)), num(e.p), num(e.p_lo),
                               num(e.p_hi), num(e.c[0]), num(e.c_se[0]), two ? num(e.c[1]) : "",
                               two ? num(e.c_se[1]) : "", num(e.chi2), std::to_string(e.dof), num(e.p_value),
                               e.rejected() ? "true" : "false", e.free_order ? (Decided(e) ? "true" : "false") : ""}));
  }
  return rows;
}

} // namespace mft
