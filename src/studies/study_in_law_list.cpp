// The listing of a study in law (study_in_law.hpp, StudyInLawList): its
// cells' head evaluations, the memory a rank and the time, priced from a
// pilot on the ranks of the run.
#include "mft/studies/study_in_law.hpp"

#include "mft/files/report.hpp"
#include "mft/flow/limit.hpp"
#include "mft/flow/samples.hpp"
#include "mft/layout/grid.hpp"
#include "mft/layout/random.hpp"
#include "mft/statistics/energy.hpp"
#include "mft/statistics/power_fit.hpp"
#include "mft/statistics/two_sample.hpp"
#include "mft/studies/study_levels.hpp"
#include "mft/studies/study.hpp"
#include "mft/studies/study_cases.hpp"

#include <algorithm>
#include <cmath>

namespace mft {

using namespace study;

namespace {

// A pilot's share of each side, in head evaluations over a probe set.
constexpr double kPilotEvaluations = 4e5;

// The seconds a rank spends on one head evaluation of a cell's samples and of
// the limit's paths (or of the infinite heads' samples), and the seconds of
// one sequence's energy distance on the ranks of the pilot, `fixed` a
// distance plus `row` a row of either side, from a pilot on this run's
// ranks: the samples of the largest cell, the paths at the study's steps,
// and one sequence's energy distance between kEnergyPilotRows and 4 times
// as many rows a side (a line through the two).
struct LawPilot {
  double sample = 0, path = 0, fixed = 0, row = 0, seconds = 0;
};
constexpr PetscInt kEnergyPilotRows = 2000;

// The seconds of one energy distance between `rows` rows a side of n
// numbers (normals, split over the ranks).
PetscErrorCode EnergyPilotSeconds(MPI_Comm comm, PetscInt n, PetscInt rows, double *secs) {
  PetscMPIInt size, rank;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  const Range b = split(rows, size, rank);
  std::vector<double> X((size_t)(b.size() * n)), Y(X.size());
  Stream st(1, kEnergyDirection, (std::uint64_t)rank);
  st.normals(X.data(), (long)X.size()), st.normals(Y.data(), (long)Y.size());
  Energy e;
  const double t0 = seconds();
  PetscCall(EnergyOf(comm, X.data(), b.size(), Y.data(), b.size(), n, n, kEnergyDirections, 1, &e));
  *secs = seconds() - t0;
  PetscFunctionReturn(0);
}

// The energy distance's pilot: its fixed seconds and its seconds a row.
PetscErrorCode EnergyPilot(MPI_Comm comm, PetscInt n, LawPilot *p) {
  double small, large;
  PetscFunctionBeginUser;
  PetscCall(EnergyPilotSeconds(comm, n, kEnergyPilotRows, &small));
  PetscCall(EnergyPilotSeconds(comm, n, 4 * kEnergyPilotRows, &large));
  p->row = std::max(0.0, (large - small) / (6.0 * (double)kEnergyPilotRows));
  p->fixed = std::max(0.0, small - 2.0 * (double)kEnergyPilotRows * p->row);
  PetscFunctionReturn(0);
}

PetscErrorCode LawPilotRun(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, LawPilot *p) {
  // a study over k, a finite reference or the levels draw no paths
  const bool paths = s.study.k.empty() && !s.study.levels && !LawFiniteReference(s);
  PetscMPIInt size;
  PetscInt L = 0, H = 0;
  Settings cs;
  Samples x;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  for (PetscInt l : integers(s.study.L))
    for (PetscInt h : integers(s.study.H))
      if (l * h > L * H) L = l, H = h;
  std::vector<std::string> model = overrides(StudyVariants(s)[0]);
  const auto shape = StudyShapeOptions(s, L, H);
  model.insert(model.end(), shape.begin(), shape.end());
  if (!s.study.k.empty()) model.insert(model.end(), {"--model.k", std::to_string(integers(s.study.k).back())});
  PetscCall(ProbeSettings(comm, args, s, model, 0, &cs));
  const double t0 = seconds();
  const PetscInt S = std::max<PetscInt>(size, (PetscInt)std::ceil(kPilotEvaluations / (double)(L * H)));
  PetscCall(SamplesForward(comm, cs, S, &x));
  const double t1 = seconds();
  p->sample = (t1 - t0) * size / ((double)S * (double)(L * H));
  if (paths) {
    const double steps = s.limit.richardson ? (s.limit.coupling == LimitCoupling::merged ? 4 : 3) : 1;
    const double per_path = steps * (double)(s.limit.steps * s.limit.step_heads);
    LimitPaths paths;
    PetscCall(ProbeSettings(comm, args, s, overrides(StudyVariants(s)[0]), 0, &cs));
    cs.limit.paths = std::max<PetscInt>(size, (PetscInt)std::ceil(kPilotEvaluations / per_path));
    PetscCall(LimitPathsSolve(comm, cs, &paths));
    p->path = (seconds() - t1) * size / ((double)cs.limit.paths * per_path);
  } else
    p->path = p->sample; // the infinite heads' or the reference's samples (priced as the largest cell's), or none
  PetscCall(EnergyPilot(comm, x.N * x.d, p));
  p->seconds = seconds() - t0;
  PetscFunctionReturn(0);
}

// What a study in law compares its cells with, in words: the limit's paths,
// the infinite heads' samples or the finite reference's (`what`: their
// draws, else the reference itself).
const char *ReferenceWords(const Settings &s, bool what) {
  if (!s.study.k.empty()) return what ? "infinite heads' samples" : "model of infinite heads";
  if (LawFiniteReference(s)) return what ? "reference's samples" : "reference model";
  return what ? "limit's paths" : "limit";
}

// The study's time on `ranks` ranks, priced from the pilot: the cells'
// samples, the limit's paths (all variants' `reference` head evaluations)
// and the energy distances (every cell, probe set and sequence: all its
// samples and the reference's, sorted along each direction; priced as a
// line in the rows through the pilot's two sizes, its slope shared by the
// ranks, the sort's logarithm left out).
PetscErrorCode LawTimePrint(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, double cells,
                            double reference, double ranks) {
  LawPilot p;
  PetscMPIInt size;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(LawPilotRun(comm, args, s, &p));
  const double n_cells = (double)(StudyVariants(s).size() * integers(s.study.L).size() * integers(s.study.H).size() *
                                  (s.study.k.empty() ? 1 : integers(s.study.k).size()));
  const double rows = (double)(s.study.samples + s.limit.paths);
  const double samples = cells * p.sample / ranks, paths = reference * p.path / ranks;
  const double energy =
      n_cells * (double)probe_sets(s).size() * (double)s.study.probe_M * (p.fixed + rows * p.row * size / ranks);
  PetscCall(PetscPrintf(comm,
                        "time on %.0f ranks, priced from a %.2f s pilot on %d: about %.4g s (the cells' samples %.4g s, "
                        "the %s %.4g s, the energy distances %.4g s: %.3g s each and %.3g us a row on %d)%s\n",
                        ranks, p.seconds, size, samples + paths + energy, samples,
                        ReferenceWords(s, true), paths, energy, p.fixed, 1e6 * p.row, size,
                        s.study.target > 0 ? "; with study.target, the pilot's samples: a cell that needs more draws "
                                             "more, up to study.max_samples"
                                           : ""));
  PetscFunctionReturn(0);
}

// The levels' listing (LevelsList), their time from the pilot, and the last
// line "<n> levels in <dir>".
PetscErrorCode LevelsListPriced(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s) {
  double evaluations;
  LawPilot p;
  PetscMPIInt size;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(LevelsList(comm, s, &evaluations));
  PetscCall(LawPilotRun(comm, args, s, &p));
  const double ranks = s.study.plan_cores > 0 ? (double)s.study.plan_cores : (double)size;
  PetscCall(PetscPrintf(comm, "time on %.0f ranks, priced from a %.2f s pilot on %d: about %.4g s for the pilot's "
                              "samples (with study.target, more where a level needs them)\n",
                        ranks, p.seconds, size, evaluations * p.sample / ranks));
  PetscCall(PetscPrintf(comm, "%zu levels in %s\n", StudyVariants(s).size() * integers(s.study.L).size(),
                        s.study.dir.c_str()));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode StudyInLawList(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s) {
  const std::vector<PetscInt> Ls = integers(s.study.L), Hs = integers(s.study.H);
  const double sets = (double)probe_sets(s).size(), S = (double)s.study.samples;
  const double steps = s.limit.richardson ? (s.limit.coupling == LimitCoupling::merged ? 4 : 3) : 1;
  const double limit = sets * (double)s.limit.paths * (double)s.limit.step_heads * (double)s.limit.steps * steps;
  double cells = 0, tokens = 0; // tokens: M N d over the probe sets
  PetscMPIInt size;
  PetscFunctionBeginUser;
  PetscCall(StudyInLawCheck(comm, s));
  if (s.study.levels) PetscFunctionReturn(LevelsListPriced(comm, args, s));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  double largest = 0; // the largest probe set's M N d
  for (const ProbeSet &set : probe_sets(s)) {
    const double n = (double)(s.study.probe_M * (set.N ? set.N : s.data.N) * s.model.d);
    tokens += n, largest = std::max(largest, n);
  }
  // A rank holds its block of a cell's samples and of the limit's paths (both
  // sets with the extrapolation), and its share of one sequence's sorted
  // projections.
  const double ranks = s.study.plan_cores > 0 ? (double)s.study.plan_cores : (double)size;
  const double held = 8 * tokens * ((double)s.study.samples + (s.limit.richardson ? 2 : 1) * (double)s.limit.paths);
  const double energy = 2 * kEnergyBytesPerRow * ((double)s.study.samples + (double)s.limit.paths) / ranks;
  const double verify = 8 * largest * (double)std::max(s.study.samples, s.limit.paths); // a file read back
  // A study over k: the reference is limit.paths samples of the L x H model
  // of infinite heads; a finite reference, limit.paths samples of its own.
  const std::vector<PetscInt> ks = s.study.k.empty() ? std::vector<PetscInt>{0} : integers(s.study.k);
  const double model = !s.study.k.empty()     ? (double)(Ls[0] * Hs[0])
                       : LawFiniteReference(s) ? (double)(s.study.reference_L * s.study.reference_H)
                                               : 0;
  const double reference = model > 0 ? sets * (double)s.limit.paths * model : limit;
  for (size_t v = 0; v < StudyVariants(s).size(); ++v) {
    PetscCall(PetscPrintf(comm, "variant %zu: the %s, %.4g head evaluations (each over a probe set)\n", v,
                          ReferenceWords(s, false), reference));
    for (PetscInt L : Ls)
      for (PetscInt H : Hs)
        for (PetscInt k : ks) {
          const std::string with_k = k > 0 ? " k=" + std::to_string(k) : "";
          PetscCall(PetscPrintf(comm, "variant %zu L=%" PetscInt_FMT " H=%" PetscInt_FMT "%s: %.4g head evaluations\n",
                                v, L, H, with_k.c_str(), sets * S * (double)(L * H)));
          cells += sets * S * (double)(L * H);
        }
  }
  PetscCall(PetscPrintf(comm,
                        "study in law: %.4g head evaluations in all, each over a probe set, spread over every rank\n",
                        cells + reference * (double)StudyVariants(s).size()));
  PetscCall(PetscPrintf(comm,
                        "memory a rank on %.0f ranks (study.plan_cores, or the ranks of this run): %.3g GB of samples "
                        "and paths, %.3g GB while a file is verified, %.3g GB for the energy distance, and the process "
                        "(about 0.07 GB): %.3g GB\n",
                        ranks, held / ranks / 1e9, verify / ranks / 1e9, energy / 1e9,
                        (held + verify) / ranks / 1e9 + energy / 1e9 + 0.07));
  PetscCall(LawTimePrint(comm, args, s, cells, reference * (double)StudyVariants(s).size(), ranks));
  PetscCall(PetscPrintf(comm, "%zu cells in %s\n", StudyVariants(s).size() * Ls.size() * Hs.size() * ks.size(),
                        s.study.dir.c_str()));
  PetscFunctionReturn(0);
}

} // namespace mft
