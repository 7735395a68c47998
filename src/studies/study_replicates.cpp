// Replicates of a study: the same config run again in other folders with
// other init.seed. Each folder's corrected fits are made from its case files
// as the aggregation makes them; then per figure and time how often one
// replicate's point lies in another's interval (replicates.csv), and per
// variant, quantity and time the figures pooled (replicates_pooled.csv):
// statistics/replicates.hpp.
#include "mft/statistics/replicates.hpp"
#include "mft/studies/study.hpp"
#include "mft/studies/study_tables.hpp"

#include "mft/settings/options.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

namespace mft {

using namespace study;

namespace {

using FitKey = std::tuple<size_t, int, PetscInt>; // variant, quantity, time

ReplicateFigure FigureOf(const StudyFit &f, const FitFigure &g) {
  const double x = f.*g.value;
  return {x, (f.*g.ci).lo, (f.*g.ci).hi, std::isfinite(x) && determined(f.flags, g.undecided)};
}

// Every folder's fits, keyed; a folder that holds no case file of the study is refused.
PetscErrorCode ReadReplicates(const Settings &s, const std::vector<std::string> &dirs,
                              std::vector<std::map<FitKey, StudyFit>> *fits) {
  PetscFunctionBeginUser;
  for (const std::string &dir : dirs) {
    std::vector<QuantityFit> list;
    PetscInt read = 0;
    PetscCall(StudyFitsOf(s, dir, &list, &read));
    PetscCheck(read > 0, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT,
               "--replicates: '%s' holds no case file of this study (run it with the same config and another init.seed)",
               dir.c_str());
    fits->emplace_back();
    for (const QuantityFit &q : list) fits->back()[{q.variant, q.quantity, q.time}] = q.fit;
  }
  PetscFunctionReturn(0);
}

// The figure g of every replicate at key k (not determined where a replicate lacks it).
std::vector<ReplicateFigure> FiguresAt(const std::vector<std::map<FitKey, StudyFit>> &fits, const FitKey &k,
                                       const FitFigure &g) {
  std::vector<ReplicateFigure> out;
  for (const auto &r : fits) {
    const auto it = r.find(k);
    out.push_back(it == r.end() ? ReplicateFigure() : FigureOf(it->second, g));
  }
  return out;
}

} // namespace

PetscErrorCode StudyReplicates(MPI_Comm comm, const Settings &s, const std::string &dir) {
  PetscMPIInt rank;
  std::vector<std::string> dirs = {dir};
  PetscFunctionBeginUser;
  for (const std::string &d : words(s.replicates)) dirs.push_back(d);
  PetscCheck(dirs.size() > 1, comm, PETSC_ERR_USER_INPUT, "--replicates: name at least one folder besides '%s'",
             dir.c_str());
  for (const std::string &d : dirs)
    PetscCheck(std::filesystem::is_directory(d), comm, PETSC_ERR_USER_INPUT, "--replicates: '%s' is not a folder",
               d.c_str());
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  std::vector<std::string> agreement, pooled;
  if (rank == 0) {
    std::vector<std::map<FitKey, StudyFit>> fits;
    PetscCall(ReadReplicates(s, dirs, &fits));
    const auto variants = StudyVariants(s);
    const double expected = AgreementExpected();
    PetscCall(PetscPrintf(PETSC_COMM_SELF,
                          "mft study: %zu replicates; a point in another's 95%% interval, calibrated: %.3f of the pairs\n",
                          dirs.size(), expected));
    for (const FitFigure &g : kFitFigures)
      for (const PetscInt time : StudyTimes(s)) {
        ReplicateAgreement a;
        double least = INFINITY, most = -INFINITY;
        for (const auto &[k, f] : fits[0]) {
          if (std::get<2>(k) != time) continue;
          const std::vector<ReplicateFigure> figures = FiguresAt(fits, k, g);
          a += AgreementOf(figures);
          for (const ReplicateFigure &x : figures)
            if (std::isfinite(x.value)) least = std::min(least, x.value), most = std::max(most, x.value);
          const PooledFigure p = PoolOf(figures);
          const size_t v = std::get<0>(k);
          pooled.push_back(csv({std::to_string(v), quoted(variants[v]), std::get<1>(k) ? "adjoint" : "tokens",
                                std::to_string(time), g.name, num(p.value), num(p.lo), num(p.hi),
                                std::to_string(p.used), std::to_string(dirs.size())}));
        }
        agreement.push_back(csv({g.name, std::to_string(time), std::to_string(a.agree), std::to_string(a.pairs),
                                 std::to_string(a.undetermined), num(a.fraction()), num(expected), num(least), num(most)}));
        PetscCall(PetscPrintf(PETSC_COMM_SELF,
                              "mft study: replicates: %-7s t=%-4" PetscInt_FMT " agree %.3f of %ld pairs (%ld undetermined)\n",
                              g.name, time, a.fraction(), a.pairs, a.undetermined));
      }
  }
  PetscCall(WriteTable(comm, dir + "/replicates.csv", "figure,time,agree,pairs,undetermined,fraction,expected,min,max",
                       agreement));
  PetscCall(WriteTable(comm, dir + "/replicates_pooled.csv",
                       "variant,overrides,quantity,time,figure,value,lo,hi,used,replicates", pooled));
  PetscCall(PetscPrintf(comm, "mft study: wrote %s/replicates.csv, replicates_pooled.csv\n", dir.c_str()));
  PetscFunctionReturn(0);
}

} // namespace mft
