// Settings recorded in files: a params file, a checkpoint to restart from, or
// a run file as data, each fills in the settings it records.
#include "mft/files/settings_files.hpp"

#include "mft/files/checkpoint.hpp"
#include "mft/settings/error.hpp"
#include "mft/layout/h5.hpp"
#include "mft/files/runfile.hpp"

#include <algorithm>
#include <map>
#include <sstream>

namespace mft {

// What a params file's shapes say where it records no setting (a file another
// program wrote): model.L, model.H, model.k, model.d from /params/Q (L, H, k,
// d), model.head_kind from whether /params/O is there.
static PetscErrorCode SettingsFromShapes(MPI_Comm comm, const std::string &path, const std::vector<std::string> &keys,
                                         std::vector<std::string> *values) {
  h5::File f;
  PetscFunctionBeginUser;
  PetscCall(h5::Open(comm, path, false, &f));
  const auto Q = h5::Shape(f, "/params/Q"), O = h5::Shape(f, "/params/O");
  PetscCall(h5::Close(&f));
  if (Q.size() != 4) PetscFunctionReturn(0); // RunFileReadParams names what is missing
  const std::map<std::string, std::string> implied = {{"model.L", std::to_string(Q[0])},
                                                      {"model.H", std::to_string(Q[1])},
                                                      {"model.k", std::to_string(Q[2])},
                                                      {"model.d", std::to_string(Q[3])},
                                                      {"model.head_kind", O.empty() ? "qkv" : "qkvo"}};
  for (size_t i = 0; i < keys.size(); ++i)
    if ((*values)[i].empty() && implied.count(keys[i])) (*values)[i] = implied.at(keys[i]);
  PetscFunctionReturn(0);
}

PetscErrorCode SettingsFromFiles(MPI_Comm comm, const std::string &command, const std::vector<std::string> &args,
                                 Settings *s) {
  const std::vector<std::string> model = {"model.L",      "model.H",    "model.d", "model.k",
                                          "model.head_kind", "model.beta", "model.causal", "model.norm",
                                          "model.depth_exponent", "model.head_exponent", "model.logit_exponent",
                                          "model.mlp_width", "model.mlp_activation", "model.mlp_depth_exponent",
                                          "model.mlp_width_exponent", "loss.kind",    "loss.c",     "loss.readout_seed"};
  enum class Given { refused, checked_later, model_wins };
  struct Source {
    std::string option, path;
    std::vector<std::string> keys;
    Given given;
  };
  std::vector<Source> sources;
  if (!s->params_file.empty()) sources.push_back({"params.file", s->params_file, model, Given::refused});
  if (command == "train" && !s->restart.empty() && s->restart != "auto") {
    std::vector<std::string> keys = {"train.steps"}; // kept below unless the file's schedule is cosine
    for (auto &kv : s->record)
      if (RunDefining(*s, kv.first) && kv.first != "data.file") keys.push_back(kv.first);
    sources.push_back({"--restart", s->restart, keys, Given::checked_later});
  }
  if (!s->data.file.empty()) sources.push_back({"data.file", s->data.file, model, Given::model_wins});
  std::vector<std::string> extra = args, taken;
  PetscBool help;
  PetscFunctionBeginUser;
  if (sources.empty()) PetscFunctionReturn(0);
  for (const Source &src : sources) {
    std::vector<std::string> values;
    if (src.given == Given::checked_later) { // a damaged checkpoint is named as the restart's
      PetscCall(PetscPushErrorHandler(ErrorCapture, nullptr));
      const PetscErrorCode err = RunFileAttributes(comm, src.path, src.keys, &values);
      PetscCall(PetscPopErrorHandler());
      std::string from;
      if (err) PetscCall(CheckpointResolve(comm, *s, &from));
      PetscCheck(!err, comm, PETSC_ERR_FILE_UNEXPECTED, "%s", captured_error());
    } else {
      PetscCall(RunFileAttributes(comm, src.path, src.keys, &values));
      if (src.option == "params.file") PetscCall(SettingsFromShapes(comm, src.path, src.keys, &values));
    }
    // train.schedule is run-defining, so a checkpoint's is among the values read.
    const auto at = std::find(src.keys.begin(), src.keys.end(), "train.schedule");
    const std::string schedule = at == src.keys.end() ? "" : values[at - src.keys.begin()];
    const bool records = std::any_of(values.begin(), values.end(), [](const std::string &v) { return !v.empty(); });
    PetscCheck(records || src.given == Given::model_wins, comm, PETSC_ERR_FILE_UNEXPECTED,
               "%s %s records no settings %s", src.option.c_str(), src.path.c_str(),
               src.option == "params.file" ? "and has no /params/Q of shape (L, H, k, d): not a params file"
                                           : "(not a run file or checkpoint of mft)");
    for (size_t i = 0; i < src.keys.size(); ++i) {
      const std::string &key = src.keys[i];
      if (values[i].empty() || !SettingsReads(command, key) || std::find(taken.begin(), taken.end(), key) != taken.end())
        continue;
      if (key == "train.steps" && schedule != "cosine") continue;
      if (!s->is_explicit(key)) {
        extra.insert(extra.end(), {"--" + key, values[i]});
        taken.push_back(key);
        continue;
      }
      if (src.given == Given::checked_later || (src.given == Given::model_wins && key.rfind("model.", 0) == 0)) continue;
      std::string now;
      for (auto &kv : s->record)
        if (kv.first == key) now = kv.second;
      PetscCheck(SameSetting(now, values[i]), comm, PETSC_ERR_USER_INPUT, "%s = %s is given, but %s %s has %s = %s",
                 key.c_str(), now.c_str(), src.option.c_str(), src.path.c_str(), key.c_str(), values[i].c_str());
    }
  }
  PetscCall(SettingsParse(comm, command, extra, s, &help));
  PetscFunctionReturn(0);
}

PetscErrorCode InputsVerify(MPI_Comm comm, const Settings &s) {
  PetscFunctionBeginUser;
  for (const char *key : {"params.file", "data.file", "data.heldout", "study.probe_file", "worst.start",
                          "worst.references"}) {
    if (!SettingsReads(s.command, key)) continue;
    std::string paths;
    for (const auto &kv : s.record)
      if (kv.first == key) paths = kv.second;
    std::istringstream each(paths); // worst.references: a list
    for (std::string path; each >> path;) {
      h5::File f;
      std::string sum;
      PetscCall(h5::Open(comm, path, false, &f));
      const bool summed = h5::ReadAttribute(f, "checksum", &sum);
      PetscCall(h5::Close(&f));
      if (!summed) continue; // another program's file
      std::uint64_t stored = 0, computed = 0;
      PetscCall(h5::Verify(comm, path, &stored, &computed));
      PetscCheck(stored == computed, comm, PETSC_ERR_FILE_UNEXPECTED,
                 "%s is damaged: its checksum is %s but its contents sum to %s (%s); nothing was run",
                 path.c_str(), h5::ChecksumText(stored).c_str(), h5::ChecksumText(computed).c_str(), key);
    }
  }
  PetscFunctionReturn(0);
}

} // namespace mft
