// What mft train reports beside the training risk: the risk of a held-out
// data file (data.heldout) at the same heads, and with loss.accuracy the
// accuracy on the held-out and the training sequences (pooled loss with class
// targets: the largest output where the target is largest). Evaluated at every
// logged step before its update, and at the end; kept in the run file as
// /history/heldout.
#pragma once

#include "mft/flow/problem.hpp"
#include "mft/files/report.hpp"
#include "mft/files/runfile.hpp"
#include "mft/files/training.hpp"

namespace mft {

struct Heldout {
  bool file = false;     // a held-out data file
  bool accuracy = false; // loss.accuracy
  Problem data;          // the held-out problem (when file)
  double risk = NAN, heldout_accuracy = NAN, training_accuracy = NAN; // at the last evaluation
  bool active() const { return file || accuracy; } // anything to report
};

// From the training problem's settings; refuses a held-out file whose d,
// loss or outputs differ from the training data's, and accuracy without the
// pooled loss.
// Collective on the problem's comm.
PetscErrorCode HeldoutCreate(const Problem &p, Heldout *h);

// The figures at the heads of p now, appended to history->heldout as the row of `step`.
// Collective on the problem's comm.
PetscErrorCode HeldoutEvaluate(Problem *p, Heldout *h, PetscInt step, History *history);

// The progress table's extra columns (empty when not active).
// Collective on the problem's comm, as is its row.
TrainingColumns HeldoutColumns(Problem *p, Heldout *h, History *history);

// The last evaluation: for the final line (", held-out risk .., accuracy .. (held-out ..)")
// and as the summary's heldout_risk, accuracy, heldout_accuracy.
// Not collective.
std::string HeldoutFigures(const Heldout &h);
void HeldoutSummary(const Heldout &h, Summary *sum);

// Collective on the problem's comm.
PetscErrorCode HeldoutDestroy(Heldout *h);

} // namespace mft
