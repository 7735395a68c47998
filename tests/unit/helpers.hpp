// Test helpers: problems from option lists, whole vectors on every rank.
#pragma once

#include "mft/flow/problem.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace mft::test {

// Settings of a command parsed from "--key value" pairs, as mft would (train
// by default: it reads every option a problem uses).
Settings settings(const std::vector<std::string> &args, const std::string &command = "train");

// A problem on comm from option pairs (parsed as `command`'s); destroyed with the pointer.
struct ProblemDeleter {
  void operator()(Problem *p) const;
};
using ProblemPtr = std::unique_ptr<Problem, ProblemDeleter>;
ProblemPtr make_problem(MPI_Comm comm, const std::vector<std::string> &args, const std::string &command = "train");

// The whole of a distributed Vec, on every rank.
std::vector<double> gather(Vec v);

// Sets entry i of a distributed Vec (collective; every rank passes the same i).
void set_entry(Vec v, PetscInt i, double value);

// max_i |a_i - b_i| / max_i |b_i| (infinite where an entry is NaN)
double relative_error(const std::vector<double> &a, const std::vector<double> &b);

// The tiny sizes used by most tests, as option pairs, plus extra options.
std::vector<std::string> tiny(std::vector<std::string> extra = {});

// True on more than one rank (PETSC_COMM_WORLD).
bool several_ranks();

} // namespace mft::test

// A test of one process's arithmetic (no communicator but PETSC_COMM_SELF, or
// a draw Ranks.* shows the same on every rank count) runs in the one-rank
// jobs only: on more ranks each would repeat it and check nothing new.
#define MFT_ONE_RANK_TEST()                                                                                            \
  if (mft::test::several_ranks()) GTEST_SKIP() << "one process's arithmetic: checked on one rank"
