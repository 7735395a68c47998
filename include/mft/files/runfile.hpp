// HDF5 run files and result files in the docs/model.md 'Files' layout (data files: data.hpp).
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

#include "mft/flow/ensemble.hpp"
#include "mft/flow/optimizer.hpp"
#include "mft/flow/problem.hpp"

#include <string>
#include <vector>

namespace mft {

// An ensemble's history holds each step's row of the rank's models (steps x
// models, row-major), NaN for a model that has diverged.
struct History {
  std::vector<double> loss;            // risk before each training step
  std::vector<double> max_param_norm;  // largest head norm before each step
  // mft train with data.heldout: rows (step, held-out risk, held-out accuracy,
  // training accuracy) at the logged steps, before their update (NaN: no accuracy).
  std::vector<double> heldout;
};

// What a file holds besides /data, /params, /optimizer (when opt has moments)
// and /history: a run file adds /output/tokens (and /grad), both at the
// stored params, and /trajectory when the flow recorded one; a checkpoint
// holds the training state only.
enum class Content { run, run_with_gradient, checkpoint };

// Writes p, h and opt to path; `step` is the number of updates done.
// Collective on the problem's comm.
PetscErrorCode RunFileWrite(const Problem &p, const History &h, const Optimizer *opt, PetscInt step, Content what,
                            const std::string &path);

// Reads back a training state written by RunFileWrite on any number of ranks:
// data, targets, params, optimizer moments, history and step. The caller has
// verified the file and checked its settings.
// Collective on the problem's comm.
PetscErrorCode RunFileRead(const std::string &path, Problem *p, Optimizer *opt, History *h, PetscInt *step);

// An ensemble's run file or checkpoint: the data once (/data as a run
// file's), and every model's arrays with a leading seeds axis, each rank
// writing its block: /params/* (S, L, H, rows, cols), /optimizer/*,
// /history/loss and max_param_norm (S, steps), /ensemble/risk (S) and
// /ensemble/diverged (S: the step a model diverged at, -1 for none); a run
// file adds /output/tokens (S, M, N, d), NaN for a diverged model, and
// /grad/* (zero for one). Attributes: every setting, ensemble.models = S, ensemble.first_seed
// (model i's seed: first + i), step, the models' mean risk. Collective on e's comm.
PetscErrorCode EnsembleFileWrite(const Ensemble &e, const History &h, const Optimizer *opt, PetscInt step, Content what,
                                 const std::string &path);
// Reads back an ensemble's training state (heads, moments, history,
// divergence, step) written on any number of ranks; the caller has verified
// the file and checked its settings (train.seeds among them). The data are
// the settings' own again. Collective on e's comm.
PetscErrorCode EnsembleFileRead(const std::string &path, Ensemble *e, Optimizer *opt, History *h, PetscInt *step);

// Reads only the heads (/params) of a run or checkpoint file into p.
// Collective on the problem's comm.
PetscErrorCode RunFileReadParams(const std::string &path, Problem *p);

// An array for ResultFileWrite: a small one known on every rank, or, with
// `distributed`, one whose first dimension is split over the ranks, data
// holding this rank's rows [rows.begin, rows.end) (samples: each rank its block).
struct ResultArray {
  std::string name;
  std::vector<unsigned long long> dims;
  const double *data;
  bool distributed = false;
  Range rows;
  ResultArray(std::string n, std::vector<unsigned long long> shape, const double *d)
      : name(std::move(n)), dims(std::move(shape)), data(d) {}
  ResultArray(std::string n, std::vector<unsigned long long> shape, const double *d, Range mine)
      : name(std::move(n)), dims(std::move(shape)), data(d), distributed(true), rows(mine) {}
};

// Writes arrays and attributes (with every setting) to path, verified and
// renamed like a run file: the output of the analysis commands (and a
// trajectory, when given one).
// Collective on comm.
PetscErrorCode ResultFileWrite(MPI_Comm comm, const Settings &s, const std::vector<ResultArray> &arrays,
                               const std::vector<std::pair<std::string, std::string>> &attributes,
                               const std::string &path, const Trajectory *trajectory = nullptr);

// Root attributes of a run file as text (numbers with 17 digits); empty when absent.
// Collective on comm.
PetscErrorCode RunFileAttributes(MPI_Comm comm, const std::string &path, const std::vector<std::string> &keys,
                                 std::vector<std::string> *values);

} // namespace mft
