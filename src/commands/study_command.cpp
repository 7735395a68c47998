// mft study: the kind of study the settings ask for (study_kind.hpp), run or
// listed (--list); a convergence study also runs as a Slurm array task
// (--study.only) and aggregates a study folder (--aggregate DIR).
#include "mft/commands/commands.hpp"
#include "mft/files/settings_files.hpp"
#include "mft/settings/options.hpp"
#include "mft/studies/study_kind.hpp"

#include <string>

namespace mft {

PetscErrorCode CommandStudy(MPI_Comm comm, const std::vector<std::string> &args, int *status) {
  Settings s;
  PetscBool help;
  PetscFunctionBeginUser;
  PetscCall(SettingsParse(comm, "study", args, &s, &help));
  if (help) PetscFunctionReturn(0);
  PetscCall(InputsVerify(comm, s)); // the files mft wrote, whole, before any work
  const StudyKind &kind = StudyKindOf(s);
  const bool convergence = std::string(kind.name) == "convergence";
  PetscCheck(s.replicates.empty() || (convergence && !s.list_cases), comm, PETSC_ERR_USER_INPUT,
             "--replicates compares the fits of a convergence study's replicates: not with %s",
             s.list_cases ? "--list" : "a study in law");
  PetscFunctionReturn(s.list_cases ? kind.list(comm, args, s) : kind.run(comm, args, s, status));
}

} // namespace mft
