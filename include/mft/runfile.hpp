// HDF5 run files, checkpoints and data files in the docs/model.md 'Files' layout.
//
// Arrays are row-major float64 written collectively; each rank writes the rows
// (tokens, heads) it owns. Root attributes record every setting under its
// dotted key, plus the short names of docs/model.md (L, H, d, k, M, N, beta,
// head_kind, loss, causal, optimizer, lr, weight_decay, beta1, beta2, eps,
// seed, step), and a checksum of every dataset. A file is written under
// NAME.tmp, flushed, read back and verified against the checksum of what was
// written, and only then renamed to NAME: a crash never leaves a partial file
// under the final name.
#pragma once

#include "mft/optimizer.hpp"
#include "mft/problem.hpp"

#include <string>
#include <vector>

namespace mft {

struct History {
  std::vector<double> loss;            // risk before each training step
  std::vector<double> max_param_norm;  // largest head norm before each step
  // mft train with data.heldout: rows (step, held-out risk, held-out accuracy,
  // training accuracy) at the logged steps, before their update (NaN: no accuracy).
  std::vector<double> heldout;
};

// Reads the shapes of a data file (/data/tokens (M,N,d), /data/targets
// (M,N,d) or (M,c), /data/readout (c,d)) into s: M, N, d, loss.c. Sizes the
// user set explicitly must agree (data.M may be fewer: the file's first
// data.M sequences); the targets must fit loss.kind, unless
// scheme.zero_targets (a study's probe: the file's tokens only).
PetscErrorCode DataFileConform(MPI_Comm comm, Settings *s);

// Reads the tokens (owned rows), targets and readout of a conformed data file
// (the first t.M sequences); y == nullptr: the tokens only.
PetscErrorCode DataFileRead(MPI_Comm comm, const std::string &path, const TokenLayout &t, Vec x0, Targets *y);

// What a file holds besides /data, /params, /optimizer (when opt has moments)
// and /history: a run file adds /output/tokens (and /grad), both at the
// stored params, and /trajectory when the flow recorded one; a checkpoint
// holds the training state only.
enum class Content { run, run_with_gradient, checkpoint };

// Writes p, h and opt to path; `step` is the number of updates done.
PetscErrorCode RunFileWrite(const Problem &p, const History &h, const Optimizer *opt, PetscInt step, Content what,
                            const std::string &path);

// Reads back a training state written by RunFileWrite on any number of ranks:
// data, targets, params, optimizer moments, history and step. The caller has
// verified the file and checked its settings.
PetscErrorCode RunFileRead(const std::string &path, Problem *p, Optimizer *opt, History *h, PetscInt *step);

// Reads only the heads (/params) of a run or checkpoint file into p.
PetscErrorCode RunFileReadParams(const std::string &path, Problem *p);

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
PetscErrorCode SettingsFromFiles(MPI_Comm comm, const std::string &command, const std::vector<std::string> &args,
                                 Settings *s);

// The settings a checkpoint must share with a run that restarts from it:
// model, data, init, loss, optimizer and schedule (train.steps with the
// cosine schedule, which spans the steps).
bool RunDefining(const Settings &s, const std::string &key);

// Two recorded values of a setting are the same (as text, or as numbers).
bool SameSetting(const std::string &a, const std::string &b);

// A small array known on every rank, for ResultFileWrite.
struct ResultArray {
  std::string name;
  std::vector<unsigned long long> dims;
  const double *data;
};

// Writes arrays and attributes (with every setting) to path, verified and
// renamed like a run file: the output of the analysis commands (and a
// trajectory, when given one).
PetscErrorCode ResultFileWrite(MPI_Comm comm, const Settings &s, const std::vector<ResultArray> &arrays,
                               const std::vector<std::pair<std::string, std::string>> &attributes,
                               const std::string &path, const Trajectory *trajectory = nullptr);

// Root attributes of a run file as text (numbers with 17 digits); empty when absent.
PetscErrorCode RunFileAttributes(MPI_Comm comm, const std::string &path, const std::vector<std::string> &keys,
                                 std::vector<std::string> *values);

} // namespace mft
