// The MLP sublayers' neurons: storage (layer x neuron x entries),
// initialisation, the replica the sublayer reads and the gradient's sum.
//
// A neuron j of layer l is u_j (d), b_j, w_j (d), stored in that order
// (NeuronSize = 2 d + 1 entries); the L m neurons form one PETSc Vec `theta`
// in the order (l, j, entries), partitioned over the ranks in whole neurons
// as theta of the heads is. The sublayer acts on each token alone, so a rank
// takes its owned tokens through every neuron: each keeps a replica `local`
// of all of them (one allgather per update, NeuronsGather), and its partial
// gradient over its tokens, `grad`, is summed over the ranks once per
// adjoint solve (NeuronsReduceGradient). No token crosses the network for
// the MLP.
#pragma once

#include "mft/settings/settings.hpp"

#include <petscvec.h>

#include <cstdint>
#include <vector>

namespace mft {

struct Neurons {
  PetscInt L = 0, m = 0, d = 0; // layers, neurons a layer (of every model), token dimension
  PetscInt models = 1;          // an ensemble's models folded (ensemble.hpp): model s holds neurons s m/models .. of a layer
  Activation activation = Activation::relu;
  double scale = 0;             // of the neuron sum in the velocity (NeuronSumScale)
  Vec theta = nullptr;          // all neurons, distributed
  VecScatter to_all = nullptr;  // theta -> every rank's `all`
  Vec all = nullptr;            // sequential, on `local`
  std::vector<double> local;    // replica [l][j][entries]
  std::vector<double> grad;     // replica layout: this rank's partial gradient of a solve
  PetscInt size() const { return 2 * d + 1; }
  PetscInt per_model() const { return m / models; }
  const double *neuron(PetscInt l, PetscInt j) const { return local.data() + (l * m + j) * size(); }
};

// The neurons of model m on comm (m.mlp_width of them a layer; of each of
// `models` models folded side by side, an ensemble's). Create and Destroy are
// collective on comm.
PetscErrorCode NeuronsCreate(MPI_Comm comm, const ModelSettings &m, Neurons *n, PetscInt models = 1);
PetscErrorCode NeuronsDestroy(Neurons *n);

// Draws every neuron i.i.d. (docs/model.md, 'The MLP sublayer') into theta:
// u entries mlp_u_gain / sqrt(d) xi, b = mlp_b_gain xi, w entries mlp_w_mean +
// mlp_w_gain xi, xi of init.law with unit variance; one stream per (l, j).
// Not collective: each rank draws the neurons it owns.
PetscErrorCode NeuronsInitialize(const Neurons &n, const InitSettings &s, std::uint64_t seed, Vec theta);
// The same for folded models, model s from seeds[s]: its neurons are those
// NeuronsInitialize draws from that seed alone. Not collective.
PetscErrorCode NeuronsInitializeModels(const Neurons &n, const InitSettings &s, const std::vector<std::uint64_t> &seeds,
                                       Vec theta);

// local <- theta (after every change of theta).
// Collective on theta's comm.
PetscErrorCode NeuronsGather(Neurons *n);

// dtheta <- the sum over the ranks of `grad`, then `grad` <- 0.
// Collective on theta's comm.
PetscErrorCode NeuronsReduceGradient(Neurons *n, Vec dtheta);

} // namespace mft
