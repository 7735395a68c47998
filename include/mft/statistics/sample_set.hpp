// Samples of a law as plain arrays of tokens: each sample M sequences of N
// tokens in R^d, the samples split over the ranks in consecutive blocks, a
// rank holding its rows. A law is a list of independent sets of samples,
// each a weighted sum of coupled members; its Gram means and their standard
// errors are collective reductions of the blocks' sums (two passes: the
// mean, then the spread about it).
#pragma once

#include <petscsys.h>

#include <utility>
#include <vector>

namespace mft {

// Samples of one law, in sets: the law's mean of f is the sum over sets of
// the mean over the set's samples of sum_k weight_k f(member k). Sets are
// independent of each other; the members of one set are coupled (sample s
// of each was drawn with the others', e.g. from shared heads), so a set's
// variance is that of its weighted sum. A model: one set of one member of
// weight 1. The limit extrapolated from n and 2n steps: its fine paths with
// weight 2 and its coarse ones with -1, one set of two members when the pair
// is coupled, two sets when drawn independently. tokens: (rows, M, N, d)
// row-major, this rank's rows of the set's S samples.
struct SampleSet {
  struct Member {
    const double *tokens = nullptr;
    double weight = 1;
  };
  std::vector<Member> members;
  PetscInt S = 0;    // the set's samples over every rank
  PetscInt rows = 0; // this rank's
  SampleSet() = default;
  SampleSet(const double *tokens, PetscInt S_, double weight) : members{{tokens, weight}}, S(S_), rows(S_) {}
  SampleSet(std::vector<Member> m, PetscInt S_, PetscInt rows_) : members(std::move(m)), S(S_), rows(rows_) {}
};
using Law = std::vector<SampleSet>;

// One side's samples as this rank holds them, and their sizes: tokens
// (rows, M, N, d) row-major, this rank's rows of every rank's S samples (a
// view: the tokens are the caller's).
struct SampleBlock {
  const double *tokens = nullptr;
  PetscInt S = 0;    // the samples over every rank
  PetscInt rows = 0; // this rank's
  PetscInt M = 0, N = 0, d = 0;
};

// A block's samples as one set of a law, with a weight.
// Not collective.
SampleSet BlockSet(const SampleBlock &b, double weight = 1);

// Sequence m's Gram matrices of sample s (this rank's row) of set k, summed
// with the members' weights, into z (N, N); g: room for N x N.
// Not collective.
void SetGram(const SampleSet &k, PetscInt M, PetscInt N, PetscInt d, PetscInt s, PetscInt m, double *g, double *z);

// The Gram means of a law, (M, N, N), and their standard errors (the sets'
// variances add). Collective on comm.
PetscErrorCode GramOf(MPI_Comm comm, const Law &law, PetscInt M, PetscInt N, PetscInt d, std::vector<double> *mean,
                      std::vector<double> *se);

} // namespace mft
