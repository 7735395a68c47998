// Neurons: a distributed Vec of whole neurons, its replica on every rank, the gradient's sum.
#include "mft/layout/neurons.hpp"

#include "mft/layout/grid.hpp"
#include "mft/layout/random.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

namespace mft {

PetscErrorCode NeuronsCreate(MPI_Comm comm, const ModelSettings &m, Neurons *n, PetscInt models) {
  PetscMPIInt size, rank;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  n->L = m.L, n->m = m.mlp_width * models, n->d = m.d, n->models = models;
  n->activation = m.mlp_activation;
  n->scale = NeuronSumScale(m, m.L);
  const PetscInt total = n->L * n->m;
  PetscCheck((double)total * (double)n->size() <= (double)INT_MAX, comm, PETSC_ERR_USER_INPUT,
             "model.L * model.mlp_width * (2 model.d + 1) = %.0f neuron entries: more than one rank's replica can "
             "hold (%d)", (double)total * (double)n->size(), INT_MAX);
  const Range owned = split(total, size, rank);
  PetscCall(VecCreateMPI(comm, owned.size() * n->size(), total * n->size(), &n->theta));
  n->local.assign((size_t)(total * n->size()), 0.0);
  n->grad.assign(n->local.size(), 0.0);
  PetscCall(VecCreateSeqWithArray(PETSC_COMM_SELF, 1, total * n->size(), n->local.data(), &n->all));
  PetscCall(VecScatterCreateToAll(n->theta, &n->to_all, nullptr));
  PetscFunctionReturn(0);
}

PetscErrorCode NeuronsDestroy(Neurons *n) {
  PetscFunctionBeginUser;
  PetscCall(VecScatterDestroy(&n->to_all));
  PetscCall(VecDestroy(&n->all));
  PetscCall(VecDestroy(&n->theta));
  PetscFunctionReturn(0);
}

PetscErrorCode NeuronsInitializeModels(const Neurons &n, const InitSettings &s, const std::vector<std::uint64_t> &seeds,
                                       Vec theta) {
  PetscInt begin, end;
  PetscScalar *t;
  PetscFunctionBeginUser;
  PetscCheck((PetscInt)seeds.size() == n.models, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "%zu seeds for %" PetscInt_FMT
             " models", seeds.size(), n.models);
  PetscCall(VecGetOwnershipRange(theta, &begin, &end));
  PetscCall(VecGetArray(theta, &t));
  const PetscInt E = n.size(), per = n.per_model();
  std::vector<double> xi((size_t)E);
  for (PetscInt flat = begin / E; flat < end / E; ++flat) {
    const PetscInt l = flat / n.m, j = flat % n.m;
    Stream r(seeds[(size_t)(j / per)], kNeurons, (std::uint64_t)l, (std::uint64_t)(j % per));
    if (s.law == InitLaw::gaussian) r.normals(xi.data(), E);
    else
      for (double &u : xi) u = std::sqrt(3.0) * (2.0 * r.uniform() - 1.0);
    double *neuron = t + (flat * E - begin);
    for (PetscInt c = 0; c < n.d; ++c) neuron[c] = s.mlp_u_gain / std::sqrt((double)n.d) * xi[(size_t)c];
    neuron[n.d] = s.mlp_b_gain * xi[(size_t)n.d];
    for (PetscInt c = n.d + 1; c < E; ++c) neuron[c] = s.mlp_w_mean + s.mlp_w_gain * xi[(size_t)c];
  }
  PetscCall(VecRestoreArray(theta, &t));
  PetscFunctionReturn(0);
}

PetscErrorCode NeuronsInitialize(const Neurons &n, const InitSettings &s, std::uint64_t seed, Vec theta) {
  PetscFunctionBeginUser;
  PetscCall(NeuronsInitializeModels(n, s, std::vector<std::uint64_t>((size_t)n.models, seed), theta));
  PetscFunctionReturn(0);
}

PetscErrorCode NeuronsGather(Neurons *n) {
  PetscFunctionBeginUser;
  PetscCall(VecScatterBegin(n->to_all, n->theta, n->all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(n->to_all, n->theta, n->all, INSERT_VALUES, SCATTER_FORWARD));
  PetscFunctionReturn(0);
}

PetscErrorCode NeuronsReduceGradient(Neurons *n, Vec dtheta) {
  PetscInt begin, end;
  MPI_Comm comm = PetscObjectComm((PetscObject)n->theta);
  PetscScalar *g;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, n->grad.data(), (int)n->grad.size(), MPI_DOUBLE, MPI_SUM, comm));
  PetscCall(VecGetOwnershipRange(dtheta, &begin, &end));
  PetscCall(VecGetArray(dtheta, &g));
  std::copy(n->grad.begin() + begin, n->grad.begin() + end, g);
  PetscCall(VecRestoreArray(dtheta, &g));
  std::fill(n->grad.begin(), n->grad.end(), 0.0);
  PetscFunctionReturn(0);
}

} // namespace mft
