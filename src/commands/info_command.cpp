// mft info FILE: what an HDF5 file of mft is (run file, checkpoint, data file,
// study case or study results), its sizes and settings, step and risk, the
// datasets it holds with their shapes, and whether its checksum verifies.
#include "mft/commands/commands.hpp"
#include "mft/layout/h5.hpp"
#include "mft/files/report.hpp"

#include <sstream>

namespace mft {

PetscErrorCode CommandInfo(MPI_Comm comm, const std::vector<std::string> &args, int *status) {
  PetscFunctionBeginUser;
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    PetscCall(PetscPrintf(comm, "usage: mft info FILE\nWhat an mft HDF5 file is and holds; exit 2 when it is damaged.\n"));
    PetscFunctionReturn(0);
  }
  PetscCheck(args.size() == 1 && args[0].rfind("--", 0) != 0, comm, PETSC_ERR_USER_INPUT,
             "mft info takes one file: mft info FILE");
  const std::string &path = args[0];
  std::uint64_t stored = 0, computed = 0;
  h5::File f;
  PetscCall(h5::Open(comm, path, false, &f));
  auto attr = [&](const std::string &key) {
    std::string v;
    return h5::ReadAttribute(f, key, &v) ? v : std::string();
  };
  const std::string content = attr("content"), command = attr("command"), checksum = attr("checksum");
  if (!checksum.empty()) { // every dataset read back and summed
    PetscCall(h5::Close(&f));
    PetscCall(h5::Verify(comm, path, &stored, &computed));
    PetscCall(h5::Open(comm, path, false, &f));
  }
  std::string kind = "data file";
  if (!attr("study.case").empty()) kind = "study case " + attr("study.case");
  else if (command == "study") kind = "study results";
  else if (content == "checkpoint") kind = "checkpoint";
  else if (content == "run") kind = "run file (mft " + command + ")";
  else if (!command.empty()) kind = "result file (mft " + command + ")";
  // The datasets: the list the writer recorded, or the docs/model.md names a data file may hold.
  std::vector<std::string> names;
  std::istringstream listed(attr("datasets"));
  for (std::string n; std::getline(listed, n, ';');)
    if (!n.empty()) names.push_back(n);
  if (names.empty()) names = {"/data/tokens", "/data/targets", "/data/readout"};
  std::ostringstream os;
  os << path << ": " << kind << "\n";
  const auto tokens = h5::Shape(f, "/data/tokens");
  if (tokens.size() == 3) os << "  data: M = " << tokens[0] << " sequences of N = " << tokens[1] << " tokens in R^" << tokens[2] << "\n";
  if (!attr("model.L").empty())
    os << "  model: L = " << attr("model.L") << ", H = " << attr("model.H") << ", d = " << attr("model.d")
       << ", k = " << attr("model.k") << ", " << attr("model.head_kind") << ", beta = " << attr("model.beta")
       << (attr("model.logit_exponent").empty() || attr("model.logit_exponent") == "0" ? ""
                                                                                     : ", g = " + attr("model.logit_exponent"))
       << (attr("model.causal") == "true" ? ", causal" : "")
       << (attr("model.norm").empty() || attr("model.norm") == "none" ? "" : ", norm " + attr("model.norm")) << "; loss "
       << attr("loss.kind") << "\n";
  if (!attr("model.mlp_width").empty() && attr("model.mlp_width") != "0")
    os << "  MLP sublayers: m = " << attr("model.mlp_width") << ", " << attr("model.mlp_activation") << ", a' = "
       << attr("model.mlp_depth_exponent") << ", c' = " << attr("model.mlp_width_exponent") << "\n";
  if (!attr("ensemble.models").empty())
    os << "  ensemble: " << attr("ensemble.models") << " models, seeds from " << attr("ensemble.first_seed") << "\n";
  if (!attr("train.optimizer").empty() && command == "train")
    os << "  training: " << attr("train.optimizer") << ", lr " << attr("train.lr") << ", step " << attr("step") << " of "
       << attr("train.steps") << (attr("risk").empty() ? "" : ", risk " + attr("risk")) << "\n";
  else if (!attr("risk").empty())
    os << "  risk " << attr("risk") << "\n";
  if (!attr("ranks").empty())
    os << "  written on " << attr("ranks") << " ranks" << (attr("grid").empty() ? "" : " (grid " + attr("grid") + ")") << "\n";
  os << "  datasets:\n";
  for (const auto &n : names) {
    const auto dims = h5::Shape(f, n);
    if (!dims.empty()) os << "    " << n << " " << h5::ShapeText(dims) << "\n";
  }
  PetscCall(h5::Close(&f));
  const bool has_sum = !checksum.empty();
  const bool good = !has_sum || stored == computed;
  os << "  checksum: " << (has_sum ? (good ? "verifies" : "DOES NOT verify") : "none (not written by mft)") << "\n";
  PetscCall(PetscPrintf(comm, "%s", os.str().c_str()));
  PetscCheck(good, comm, PETSC_ERR_FILE_UNEXPECTED, "%s is damaged: its checksum does not verify (a changed or truncated file)",
             path.c_str());
  Summary sum;
  sum.add("command", std::string("info")).add("file", path).add("kind", kind);
  sum.add("checksum", std::string(has_sum ? "verifies" : "none"));
  PetscCall(sum.print(comm));
  *status = 0;
  PetscFunctionReturn(0);
}

} // namespace mft
