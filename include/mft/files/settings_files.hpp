// Settings that files record: a params file, a checkpoint to restart from, or
// a run file given as data fills in the settings the user did not give.
#pragma once

#include "mft/settings/settings.hpp"

#include <string>
#include <vector>

namespace mft {

// Files describe themselves (s is parsed again, for `command` with args, with
// what they record added):
// - --params.file: its model and loss settings are taken; one given
//   explicitly that differs is an error naming both values;
// - --restart FILE (train): every run-defining setting it records is taken
//   where not given (CheckpointCompatible refuses one given differently);
// - --data.file, when it is a run file: its model and loss settings fill in
//   those not given; a model setting given differently wins (another model on
//   the same data), a loss setting given differently is an error (the targets
//   are of the file's loss).
// Where several files record a setting, the first of that order provides it.
// Collective on comm (the files are read on every rank).
PetscErrorCode SettingsFromFiles(MPI_Comm comm, const std::string &command, const std::vector<std::string> &args,
                                 Settings *s);

// Collective on comm. Every input file the command reads that mft wrote (it
// carries a checksum) is read whole and checked against its checksum before
// any work: params.file, data.file, data.heldout, study.probe_file,
// worst.start, each of worst.references (a checkpoint to restart from is
// checked as it is taken). A damaged one is one error naming the file and
// the option. A file another program wrote has no checksum and is taken as
// it is; NaN and Inf in the model's inputs are refused as they are read
// (h5::File::finite), whoever wrote them.
PetscErrorCode InputsVerify(MPI_Comm comm, const Settings &s);

} // namespace mft
