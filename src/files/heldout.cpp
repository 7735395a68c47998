// Held-out risk and accuracies during training.
#include "mft/files/heldout.hpp"

#include <cstdio>

namespace mft {

PetscErrorCode HeldoutCreate(const Problem &p, Heldout *h) {
  const Settings &s = p.settings;
  MPI_Comm comm = p.grid.comm;
  PetscFunctionBeginUser;
  h->file = !s.data.heldout.empty(), h->accuracy = s.loss.accuracy;
  PetscCheck(!h->accuracy || p.targets.kind == LossKind::pooled, comm, PETSC_ERR_USER_INPUT,
             "loss.accuracy needs the pooled loss (targets of classes, one output per class); the loss is token");
  if (!h->file) PetscFunctionReturn(0);
  Settings hs = s; // the same model on the held-out sequences
  hs.data.file = s.data.heldout, hs.data.heldout.clear();
  hs.explicit_keys.clear(); // its sizes come from its own file
  hs.output.trajectory = 0;
  PetscCall(ProblemCreate(comm, hs, &h->data));
  const Settings &got = h->data.settings;
  PetscCheck(got.model.d == s.model.d && h->data.targets.kind == p.targets.kind && h->data.targets.c == p.targets.c, comm,
             PETSC_ERR_USER_INPUT,
             "data.heldout %s has d = %" PetscInt_FMT ", %s loss with %" PetscInt_FMT
             " outputs, but the training data d = %" PetscInt_FMT ", %s loss with %" PetscInt_FMT " outputs",
             s.data.heldout.c_str(), got.model.d, to_string(h->data.targets.kind), h->data.targets.c, s.model.d,
             to_string(p.targets.kind), p.targets.c);
  PetscFunctionReturn(0);
}

// The accuracy of a problem at its current heads, on all its sequences.
static PetscErrorCode Accuracy(Problem *p, double *acc) {
  std::vector<double> out;
  PetscFunctionBeginUser;
  PetscCall(PooledOutputs(p->tokens, p->targets.W, p->targets.c, p->x1, out));
  *acc = ClassAccuracy(out, p->targets.z, p->targets.c);
  PetscFunctionReturn(0);
}

PetscErrorCode HeldoutEvaluate(Problem *p, Heldout *h, PetscInt step, History *history) {
  PetscFunctionBeginUser;
  if (!h->active()) PetscFunctionReturn(0);
  if (h->accuracy) { // the training sequences, all of them, at these heads
    ProblemSetBatch(p, -1);
    PetscCall(ProblemEvaluate(p, PETSC_FALSE));
    PetscCall(Accuracy(p, &h->training_accuracy));
  }
  if (h->file) { // the training's heads (and MLP neurons) in the held-out problem
    std::vector<double> all;
    PetscCall(GatherAll(p->heads.theta, &all));
    PetscCall(SetFromAll(h->data.heads.theta, all));
    if (p->neurons.theta) {
      PetscCall(GatherAll(p->neurons.theta, &all));
      PetscCall(SetFromAll(h->data.neurons.theta, all));
    }
    PetscCall(ProblemSetHeads(&h->data));
    ProblemSetBatch(&h->data, -1);
    PetscCall(ProblemEvaluate(&h->data, PETSC_FALSE));
    h->risk = h->data.risk;
    if (h->accuracy) PetscCall(Accuracy(&h->data, &h->heldout_accuracy));
  }
  history->heldout.insert(history->heldout.end(), {(double)step, h->risk, h->heldout_accuracy, h->training_accuracy});
  PetscFunctionReturn(0);
}

TrainingColumns HeldoutColumns(Problem *p, Heldout *h, History *history) {
  TrainingColumns c;
  if (!h->active()) return c;
  char head[64];
  std::snprintf(head, sizeof head, "%s%s", h->file ? "     held-out" : "", h->accuracy ? (h->file ? "    acc  h-acc" : "    acc") : "");
  c.header = head;
  c.row = [p, h, history](PetscInt step, std::string *row) -> PetscErrorCode {
    char b[64];
    PetscFunctionBeginUser;
    PetscCall(HeldoutEvaluate(p, h, step, history));
    int n = 0;
    if (h->file) n += std::snprintf(b, sizeof b, " %12.5e", h->risk);
    if (h->accuracy) n += std::snprintf(b + n, sizeof b - (size_t)n, " %6.4f", h->training_accuracy);
    if (h->accuracy && h->file) std::snprintf(b + n, sizeof b - (size_t)n, " %6.4f", h->heldout_accuracy);
    *row = b;
    PetscFunctionReturn(0);
  };
  return c;
}

std::string HeldoutFigures(const Heldout &h) {
  std::string figures;
  char b[64];
  if (h.file) std::snprintf(b, sizeof b, ", held-out risk %.6e", h.risk), figures += b;
  if (h.accuracy) std::snprintf(b, sizeof b, ", accuracy %.4f", h.training_accuracy), figures += b;
  if (h.accuracy && h.file) std::snprintf(b, sizeof b, " (held-out %.4f)", h.heldout_accuracy), figures += b;
  return figures;
}

void HeldoutSummary(const Heldout &h, Summary *sum) {
  if (h.file) sum->add("heldout_risk", h.risk);
  if (h.accuracy) sum->add("accuracy", h.training_accuracy);
  if (h.accuracy && h.file) sum->add("heldout_accuracy", h.heldout_accuracy);
}

PetscErrorCode HeldoutDestroy(Heldout *h) {
  PetscFunctionBeginUser;
  if (h->file) PetscCall(ProblemDestroy(&h->data));
  PetscFunctionReturn(0);
}

} // namespace mft
