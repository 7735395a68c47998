// mft ntk: the NTK Gram matrix at the initial heads (or those of --params.file),
// its spectrum, and whether it is positive definite.
#include "mft/commands/commands.hpp"
#include "mft/analyses/ntk.hpp"
#include "mft/files/report.hpp"
#include "mft/files/runfile.hpp"
#include "mft/files/settings_files.hpp"

namespace mft {

PetscErrorCode CommandNtk(MPI_Comm comm, const std::vector<std::string> &args, int *status) {
  Settings s;
  PetscBool help;
  Problem p;
  Ntk k;
  PetscFunctionBeginUser;
  PetscCall(SettingsParse(comm, "ntk", args, &s, &help));
  if (help) PetscFunctionReturn(0);
  PetscCall(InputsVerify(comm, s)); // the files mft wrote, whole, before any work
  PetscCall(SettingsFromFiles(comm, "ntk", args, &s));
  PetscCall(ProblemCreate(comm, s, &p));
  PetscCall(ReportHeader(p));
  if (!s.params_file.empty()) PetscCall(RunFileReadParams(s.params_file, &p));
  const double t0 = seconds();
  PetscCall(NtkCompute(&p, s.ntk.part, &k));
  const double elapsed = seconds() - t0;
  const double lmin = k.eigenvalues.front(), lmax = k.eigenvalues.back();
  const bool pd = lmin > s.ntk.threshold * lmax;
  PetscCall(PetscPrintf(comm,
                        "NTK (%s part) of %" PetscInt_FMT " outputs: lambda_min %.6e, lambda_max %.6e, ratio %.3e: %s "
                        "(threshold %g lambda_max), %.2f s\n",
                        to_string(s.ntk.part), k.n, lmin, lmax, lmin / lmax,
                        pd ? "positive definite" : "NOT positive definite", s.ntk.threshold, elapsed));
  std::vector<ResultArray> arrays = {{"/ntk/eigenvalues", {(unsigned long long)k.n}, k.eigenvalues.data()}};
  if (k.n <= s.ntk.max_matrix)
    arrays.push_back({"/ntk/matrix", {(unsigned long long)k.n, (unsigned long long)k.n}, k.matrix.data()});
  auto num = [](double v) { char b[32]; std::snprintf(b, sizeof b, "%.17g", v); return std::string(b); };
  PetscCall(ResultFileWrite(comm, p.settings, arrays,
                            {{"ntk.outputs", std::to_string(k.n)}, {"lambda_min", num(lmin)}, {"lambda_max", num(lmax)},
                             {"positive_definite", pd ? "true" : "false"}},
                            s.output.file));
  Summary sum;
  sum.add("command", std::string("ntk")).add("part", std::string(to_string(s.ntk.part))).add("outputs", (long long)k.n);
  sum.add("lambda_min", lmin).add("lambda_max", lmax).add("ratio", lmin / lmax).add("threshold", s.ntk.threshold);
  sum.add("positive_definite", std::string(pd ? "true" : "false")).add("seconds", elapsed).add("file", s.output.file);
  PetscCall(sum.print(comm));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(0);
}

} // namespace mft
