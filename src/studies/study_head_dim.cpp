// A study over the head dimension (study_tables.hpp): its cells over (k, H)
// fitted by err^2 = A^2 H^-2q + B^2 k^-2r (statistics/separable.hpp), and
// the gap in k at each H alone, with intervals from a bootstrap of the
// study's seeds and references jointly across its cells.
#include "mft/statistics/separable.hpp"
#include "mft/studies/study_tables.hpp"

#include <cstdio>
#include <set>

namespace mft {

using namespace study;

double VariantK(const std::string &variant) {
  const std::vector<std::string> w = words(variant);
  if (w.size() != 1 || w[0].rfind("model.k=", 0) != 0) return NAN;
  try {
    size_t used = 0;
    const double k = std::stod(w[0].substr(8), &used);
    return used == w[0].size() - 8 && k >= 1 && std::isfinite(k) ? k : NAN;
  } catch (const std::exception &) {
    return NAN;
  }
}

void AddHeadDimCells(HeadDimCells *cells, PetscInt time, double k, PetscInt references, const StudyErrors e[2],
                     const StudyStatistics st[2], bool keep_unresolved) {
  for (int q = 0; q < 2; ++q) {
    HeadDimCell &c = (*cells)[{time, q}];
    for (size_t i = 0; i < st[q].cells.size(); ++i) {
      const StudyCell &x = st[q].cells[i];
      c.k.push_back(k), c.H.push_back((double)e[q].H[i % e[q].H.size()]), c.err.push_back(x.err[1]);
      c.se.push_back((x.ci[1].hi - x.ci[1].lo) / 3.92), c.resolved.push_back(x.resolved || keep_unresolved);
    }
    c.errors.emplace_back(references, e[q]);
  }
}

namespace {

std::string yes(bool b) { return b ? "true" : "false"; }

// The gap in k at each H alone (r held), each with its sources' interval.
void WriteGaps(std::vector<std::string> *gaps, PetscInt time, const char *quantity, const HeadDimCell &c, double r,
               const std::vector<Resample> &sources) {
  for (double h : std::set<double>(c.H.begin(), c.H.end())) {
    std::vector<double> k, err, se;
    std::vector<Resample> drawn(sources.size());
    for (size_t s = 0; s < sources.size(); ++s)
      drawn[s].units = sources[s].units, drawn[s].draws.resize(sources[s].draws.size());
    for (size_t i = 0; i < c.err.size(); ++i)
      if (c.H[i] == h && c.resolved[i] && c.err[i] > 0 && c.se[i] > 0) {
        k.push_back(c.k[i]), err.push_back(c.err[i]), se.push_back(c.se[i]);
        for (size_t s = 0; s < sources.size(); ++s)
          for (size_t b = 0; b < sources[s].draws.size(); ++b) drawn[s].draws[b].push_back(sources[s].draws[b][i]);
      }
    const SeparableGap g = SeparableGapAt(k, err, se, r, drawn);
    gaps->push_back(csv({std::to_string(time), quantity, num(h), std::to_string(k.size()), num(g.B), num(g.lo), num(g.hi)}));
  }
}

} // namespace

PetscErrorCode WriteHeadDim(const std::string &dir, const HeadDimCells &cells) {
  std::vector<std::string> fits, gaps;
  PetscFunctionBeginUser;
  for (const auto &[at, c] : cells) {
    const auto [time, q] = at;
    const char *quantity = q ? "p" : "x";
    const std::vector<Resample> sources = StudyResamples(c.errors, kHeadDimBoots, 7 + (std::uint64_t)time);
    const SeparableFit f = SeparableFitOf(c.k, c.H, c.err, c.se, c.resolved, sources);
    if (!f.cells) continue;
    fits.push_back(csv({std::to_string(time), quantity, std::to_string(f.cells), num(f.A), num(f.A_lo), num(f.A_hi),
                        num(f.q), num(f.q_lo), num(f.q_hi), num(f.B), num(f.B_lo), num(f.B_hi), num(f.r), num(f.r_lo),
                        num(f.r_hi), num(f.chi2), std::to_string(f.dof), num(f.p_value), yes(f.rejected()),
                        yes(f.decided_q()), yes(f.decided_r())}));
    PetscCall(PetscPrintf(PETSC_COMM_SELF,
                          "mft study: t=%" PetscInt_FMT " %s: err^2 = A^2 H^-2q + B^2 k^-2r over %" PetscInt_FMT
                          " cells: A = %.3g [%.3g, %.3g], q = %.2f [%.2f, %.2f], B = %.3g [%.3g, %.3g], r = %.2f "
                          "[%.2f, %.2f]; chi^2 %.3g on %" PetscInt_FMT " (p %.3g): %s\n",
                          time, quantity, f.cells, f.A, f.A_lo, f.A_hi, f.q, f.q_lo, f.q_hi, f.B, f.B_lo, f.B_hi, f.r,
                          f.r_lo, f.r_hi, f.chi2, f.dof, f.p_value,
                          f.rejected() ? "the law is rejected"
                                       : (std::string("q ") + (f.decided_q() ? "decided" : "not decided") + ", r " +
                                          (f.decided_r() ? "decided" : "not decided"))
                                             .c_str()));
    WriteGaps(&gaps, time, quantity, c, f.r, sources);
  }
  PetscCall(WriteTable(PETSC_COMM_SELF, dir + "/head_dim_fits.csv",
                       "time,quantity,cells,A,A_lo,A_hi,q,q_lo,q_hi,B,B_lo,B_hi,r,r_lo,r_hi,chi2,dof,p_value,rejected,"
                       "decided_q,decided_r",
                       fits));
  PetscCall(WriteTable(PETSC_COMM_SELF, dir + "/head_dim_gaps.csv", "time,quantity,H,cells,B_H,B_H_lo,B_H_hi", gaps));
  PetscFunctionReturn(0);
}

} // namespace mft
