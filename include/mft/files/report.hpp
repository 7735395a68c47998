// What a run prints on rank 0: a header that says what is being solved, and
// one machine-readable summary line at the end:
//   mft-summary {"command": "train", "final_risk": 1.2e-05, ...}
#pragma once

#include "mft/flow/ensemble.hpp"
#include "mft/flow/problem.hpp"
#include "mft/layout/events.hpp"

#include <string>
#include <utility>
#include <vector>

namespace mft {

// The header. Not collective: rank 0 of the problem's comm prints it.
PetscErrorCode ReportHeader(const Problem &p);
// An ensemble's first line (ensemble.hpp). Collective on e's comm.
PetscErrorCode ReportEnsembleHeader(const Ensemble &e);

class Summary {
public:
  Summary &add(const std::string &key, double value);
  Summary &add(const std::string &key, long long value);
  Summary &add(const std::string &key, const std::string &value);
  PetscErrorCode print(MPI_Comm comm) const; // the last line of a run

private:
  std::vector<std::pair<std::string, std::string>> items_;
};

} // namespace mft
