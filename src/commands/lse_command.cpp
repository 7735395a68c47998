// mft lse: the log-sum-exp independence test of the data's token distributions.
#include "mft/commands/commands.hpp"
#include "mft/files/settings_files.hpp"
#include "mft/analyses/lse.hpp"
#include "mft/files/report.hpp"
#include "mft/files/runfile.hpp"

namespace mft {

PetscErrorCode CommandLse(MPI_Comm comm, const std::vector<std::string> &args, int *status) {
  Settings s;
  PetscBool help;
  LseResult r;
  PetscFunctionBeginUser;
  PetscCall(SettingsParse(comm, "lse", args, &s, &help));
  if (help) PetscFunctionReturn(0);
  PetscCall(InputsVerify(comm, s)); // the files mft wrote, whole, before any work
  PetscCall(PetscPrintf(comm, "mft lse: %s, %s lse of %" PetscInt_FMT " distributions at %" PetscInt_FMT
                              " points in the ball of radius %g\n",
                        s.data.file.empty() ? s.data.family.c_str() : s.data.file.c_str(), to_string(s.lse.mode),
                        s.data.M, s.lse.points, s.lse.radius));
  const double t0 = seconds();
  PetscCall(LseTest(comm, s, &r));
  const double elapsed = seconds() - t0;
  PetscCall(PetscPrintf(comm, "lse Gram matrix modulo affine functions: lambda_min %.6e, lambda_max %.6e, relative %.6e\n",
                        r.eigenvalues.front(), r.eigenvalues.back(), r.relative_min));
  PetscCall(ResultFileWrite(comm, s,
                            {{"/lse/eigenvalues", {(unsigned long long)r.M}, r.eigenvalues.data()},
                             {"/lse/gram", {(unsigned long long)r.M, (unsigned long long)r.M}, r.gram.data()}},
                            {}, s.output.file));
  Summary sum;
  sum.add("command", std::string("lse")).add("family", s.data.file.empty() ? s.data.family : s.data.file);
  sum.add("mode", std::string(to_string(s.lse.mode))).add("distributions", (long long)r.M).add("points", (long long)s.lse.points);
  sum.add("lambda_min", r.eigenvalues.front()).add("lambda_max", r.eigenvalues.back());
  sum.add("relative_min", r.relative_min).add("seconds", elapsed).add("file", s.output.file);
  PetscCall(sum.print(comm));
  PetscFunctionReturn(0);
}

} // namespace mft
