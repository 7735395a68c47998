// Attention-head parameters: storage (layer x head x block), initialisation, norms.
//
// The parameters of all L*H heads form one PETSc Vec `theta` in the natural
// order (l, h, block entries); each head is stored whole, blocks in the order
// Q (k x d), K (k x d), V (dv x d), O (d x k, qkvo only), row-major, with
// dv = d for qkv and dv = k for qkvo (docs/model.md, 'A head'). Ranks
// own whole heads of theta. For the attention kernels, every rank of head
// group a keeps a replica `local` of heads [h0, h1) of every layer, gathered
// once per parameter update.
//
// What crosses the network once per update and once per adjoint solve, not
// once per layer: the replica, in the order (l, h - h0), is cut into Pt
// consecutive `chunks` of whole heads, one per rank of the head group's
// token_comm. A gather brings each rank's chunk from theta (a local copy when
// Ph = 1) and an allgather over token_comm completes the replica; the
// gradient, accumulated in `grad` (replica layout) over the whole reverse
// sweep, is reduce-scattered over token_comm onto the chunks and put into
// theta's layout (exchange.hpp: log2(Pt) messages a rank, not L Pt).
//
// Both run behind the kernels, in buckets of consecutive layers
// (HeadBuckets): after an update every bucket's allgather is started at once,
// and the forward waits, before layer l, only for the bucket that holds it;
// in the reverse sweep (layers L - 1 down to 0) a bucket's gradient is
// reduce-scattered as soon as its last layer is done, while the layers below
// it run. A bucket exchanged alone gives each rank the same entries of the
// same sums as the whole (exchange.hpp): the results are bitwise those of one
// exchange. With `overlap` off (parallel.overlap) the same buckets go, each
// waited for at once: the same messages, no work behind them.
#pragma once

#include "mft/layout/exchange.hpp"
#include "mft/layout/grid.hpp"
#include "mft/settings/settings.hpp"

#include <petscvec.h>

#include <vector>

namespace mft {

struct Heads {
  HeadShape shape;
  PetscInt L = 0, H = 0;      // H: the heads of a layer, of every model it holds
  PetscInt seeds = 1;         // models whose heads share each layer (an ensemble's: model s has s H/seeds ..)
  bool infinite = false;     // model.k = inf: k = d, drawn from the k -> infinity law (HeadsInitialize)
  double logit_exponent = 0; // g, of which the infinite head's W depends
  Range group;               // heads [h0, h1) of each layer held in `local`
  Range owned;               // flat heads l*H+h owned in theta
  Vec theta = nullptr;       // all parameters, distributed
  std::vector<double> local; // replica [l][h - h0][entries]
  MPI_Comm token_comm = MPI_COMM_NULL; // the ranks that hold the same replica
  std::vector<PetscInt> chunk_counts;  // entries of each rank's chunk of the replica
  PetscInt chunk_begin = 0;            // first entry of this rank's chunk in the replica
  std::vector<double> chunk;           // this rank's chunk (values or reduced gradient)
  Vec chunk_vec = nullptr;             // sequential Vec on `chunk`
  VecScatter chunk_to_theta = nullptr; // chunk -> its heads in theta's layout
  std::vector<double> layer_grad;      // one layer's partial gradient of the group's heads (one sweep)
  std::vector<double> grad;            // replica layout: partial gradients summed over a reverse sweep
  bool overlap = true;                 // buckets behind the kernels (parallel.overlap)
  std::vector<Range> buckets;          // consecutive layers of the replica
  std::vector<ExchangeInFlight> gathering, reducing; // per bucket: its allgather, its gradient's sum
  std::vector<PetscInt> layers_done;   // per bucket: layers whose gradient this sweep is complete
  std::vector<char> summed;            // per bucket: its sum started this sweep

  const double *head(PetscInt l, PetscInt h_local) const { return local.data() + (l * group.size() + h_local) * shape.size; }
};

// Creates the heads of model m on the grid g. HeadsCreate and HeadsDestroy
// are collective on g.comm (theta, the scatter of the chunks).
PetscErrorCode HeadsCreate(const Grid &g, const ModelSettings &m, Heads *h);
PetscErrorCode HeadsDestroy(Heads *h);

// Draws every head i.i.d. from rho_0 (docs/model.md, 'Initialisation') into theta:
// entry = mean * I[r][c] + spread * xi, xi standard normal or uniform with
// unit variance, spread = gain / sqrt(fan-in); one random stream per (l, h).
// The infinite head (docs/model.md, 'The infinite head'): Q = I, K = W of
// i.i.d. N(0, (q_gain k_gain / d)^2) entries at g = 1/2 (0 above); V as a
// qkv head's; a qkvo head's O = I and V = O V's limit, o_mean v_mean I +
// o_mean v_gain / sqrt(d) xi + o_gain v_gain / sqrt(d) zeta, zeta Gaussian.
// Not collective: each rank draws the heads of theta it owns (call it on every
// rank to fill theta).
PetscErrorCode HeadsInitialize(Heads *h, const InitSettings &s, std::uint64_t seed, Vec theta);
// The same for the models of an ensemble (h->seeds of them): model s's heads
// from seeds[s], each drawn as HeadsInitialize draws it alone.
// Not collective, as HeadsInitialize.
PetscErrorCode HeadsInitializeModels(Heads *h, const InitSettings &s, const std::vector<std::uint64_t> &seeds,
                                     Vec theta);

// Adds eps times i.i.d. N(0,1) entries to every head of theta (one stream per (seed, l, h)).
// Not collective: each rank perturbs the heads it owns, as HeadsInitialize.
PetscErrorCode HeadsPerturb(const Heads &h, std::uint64_t seed, double eps, Vec theta);

// The buckets of L layers on Pt token groups: kHeadBuckets (at most L), or
// one when there is nothing to exchange (Pt = 1). The cost model counts them.
// Not collective.
constexpr PetscInt kHeadBuckets = 4;
PetscInt HeadBuckets(PetscInt L, PetscInt Pt);

// Starts copying theta into the local replica (call after every change of
// theta); HeadsReady(l) before layer l of the replica is read. Collective on
// the grid's comm (a scatter from theta, then an allgather over token_comm);
// every rank calls HeadsReady for the same layers, in the same order.
PetscErrorCode HeadsGather(Heads *h);
PetscErrorCode HeadsReady(Heads *h, PetscInt l);

// A reverse sweep's gradient: HeadsGradientStart zeroes `grad`; after layer
// l's part is added to it, HeadsGradientLayer(l) (its bucket's sum starts
// once all its layers are in); HeadsReduceGradient puts into dtheta the sum
// over the token groups (every entry of theta is written). Collective on the
// grid's comm, each rank through the same layers in the same order.
PetscErrorCode HeadsGradientStart(Heads *h);
PetscErrorCode HeadsGradientLayer(Heads *h, PetscInt l);
PetscErrorCode HeadsReduceGradient(Heads *h, Vec dtheta);

// Largest Frobenius norm of one head (all its blocks) over every head of theta.
// Collective on theta's comm.
PetscErrorCode HeadsMaxNorm(const Heads &h, Vec theta, double *norm);

// How far training moved each layer's blocks: out[l * blocks + b] =
// |theta_lb - theta0_lb| / |theta0_lb|, the Frobenius norms over block b
// (Q, K, V, O) of layer l's H heads; `now` and `start` hold all L*H heads
// of one shape in the natural order (as gathered from theta); NaN for a
// block that starts at zero (init gain and mean 0).
// Not collective.
std::vector<double> HeadsBlockChange(const HeadShape &shape, PetscInt L, PetscInt H, const std::vector<double> &now,
                                     const std::vector<double> &start);

} // namespace mft
