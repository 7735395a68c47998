// Data files in the docs/model.md 'Files' layout: /data/tokens (M, N, d),
// /data/targets ((M, N, d) or (M, c)), /data/readout (c, d) and the
// optional /data/weights (M, N); and the
// transfers of token arrays (each rank its owned rows) and of small arrays
// known on every rank, which the run files use too.
#pragma once

#include "mft/layout/h5.hpp"
#include "mft/flow/risk.hpp"
#include "mft/settings/settings.hpp"
#include "mft/layout/tokens.hpp"

#include <string>
#include <vector>

namespace mft {

// Reads the shapes of a data file (/data/tokens (M,N,d), /data/targets
// (M,N,d) or (M,c), /data/readout (c,d)) into s: M, N, d, loss.c. Sizes the
// user set explicitly must agree (data.M may be fewer: the file's first
// data.M sequences); the targets must fit loss.kind, unless
// scheme.zero_targets (a study's probe: the file's tokens only).
// Collective on comm (every rank reads the shapes).
PetscErrorCode DataFileConform(MPI_Comm comm, Settings *s);

// Reads the tokens (owned rows), their weights (/data/weights, when the file
// has them), targets and readout of a conformed data file (the first t.M
// sequences); y == nullptr: the tokens (and weights) only.
// Collective on comm.
PetscErrorCode DataFileRead(MPI_Comm comm, const std::string &path, TokenLayout &t, Vec x0, Targets *y);

// The tokens' weights (docs/model.md, 'Token measures') of the first M
// sequences of N tokens of an open file, on every rank: (M, N), each weight
// positive and finite, each row summing to 1 within kWeightSum; none (empty)
// when the file has no /data/weights.
// Collective on f.comm.
constexpr double kWeightSum = 1e-10;
PetscErrorCode ReadWeights(h5::File &f, const std::string &path, PetscInt M, PetscInt N, std::vector<double> *weights);

// Every weight 1/N (within kWeightSum): the unweighted model's masses.
// Not collective.
bool UniformWeights(const TokenLayout &t);

// A token array (M, N, d): each rank writes or reads the rows it owns (t.owned).
// Collective on f.comm.
PetscErrorCode WriteTokens(h5::File &f, const std::string &name, const TokenLayout &t, Vec v);
PetscErrorCode ReadTokens(h5::File &f, const std::string &name, const TokenLayout &t, Vec v);

// The targets (/data/targets, and /data/readout for the pooled loss) of the
// first t.M sequences of an open file, for loss y->kind.
// Collective on f.comm.
PetscErrorCode ReadTargets(h5::File &f, const TokenLayout &t, Targets *y);

// A small array known on every rank: rank 0 writes it, every rank reads all of it.
// Collective on f.comm.
PetscErrorCode WriteReplicated(h5::File &f, const std::string &name, const std::vector<hsize_t> &dims, const double *buf);
PetscErrorCode ReadReplicated(h5::File &f, const std::string &name, const std::vector<hsize_t> &dims, double *buf);

} // namespace mft
