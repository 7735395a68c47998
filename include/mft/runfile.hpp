// HDF5 run files and data files in the MODEL.md 'Files' layout.
//
// Arrays are row-major float64 written collectively with parallel HDF5; each
// rank writes the rows (tokens, heads) it owns. Root attributes record every
// setting under its dotted key, plus the short names of MODEL.md (L, H, d, k,
// M, N, beta, head_kind, loss, causal, optimizer, lr, seed, step). A file is
// written under a temporary name and renamed when complete, so that a crash
// never leaves a half-written file under the final name.
#pragma once

#include "mft/problem.hpp"

#include <string>
#include <vector>

namespace mft {

struct History {
  std::vector<double> loss;            // risk before each training step
  std::vector<double> max_param_norm;  // largest head norm before each step
};

// Reads the shapes of a data file (/data/tokens (M,N,d), /data/targets
// (M,N,d) or (M,c), /data/readout (c,d)) into s: M, N, d, loss.c. Sizes the
// user set explicitly must agree; the targets must fit loss.kind.
PetscErrorCode DataFileConform(MPI_Comm comm, Settings *s);

// Reads the tokens (owned rows), targets and readout of a conformed data file.
PetscErrorCode DataFileRead(MPI_Comm comm, const std::string &path, const TokenLayout &t, Vec x0, Targets *y);

// Writes /data, /params, /output/tokens, /grad (with_grad), /history and the
// attributes of p to path.
PetscErrorCode RunFileWrite(const Problem &p, const History &h, PetscInt step, PetscBool with_grad,
                            const std::string &path);

} // namespace mft
