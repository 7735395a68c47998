// One attention head of each of kLanes models over one sequence each, at
// once: the maps of attention.hpp with every number a vector of lanes, lane
// w the model of seed w of an ensemble (ensemble.hpp). The models of an
// ensemble share their data but not their heads, and small models (a few
// dimensions, a few tokens) leave a kernel over one model's head little to
// vectorise: across the seeds every product and exp is a full vector.
//
// Layout ("lanes"): an array of n numbers of each lane is n kLanes doubles,
// entry e of lane w at e kLanes + w (a head's entries, a sequence's tokens
// row by row, their gradients). Each lane computes exactly what it would
// alone: the same operations in the same order whatever the other lanes
// hold, so a seed's results do not depend on its lane, its neighbours or
// the number of ranks an ensemble is spread over. The arithmetic is the
// plain kernel's (attention_plain: one query at a time, every score formed,
// the row maximum subtracted), with the kernels' own exp (softmax.hpp), so
// a lane equals attention_plain on its model to round-off, which the tests
// check. Every routine here is not collective.
#pragma once

#include "mft/kernels/attention.hpp"

#include <vector>

namespace mft {

constexpr PetscInt kLanes = 8;

// Scratch of the lanes kernels, sized once for the longest sequence.
struct SeedsWork {
  std::vector<double> q, kappa, w, p, da, y, dy, dq, dkappa, dw;
  void reserve(const HeadShape &shape, PetscInt N);
};

// All N queries of the sequence x (lanes: N x d) of each lane against its
// own head theta (lanes: shape.size): out (lanes: N x d) += scale Attn.
// weights: the keys' masses (N, the same in every lane; null: 1/N each).
// The reverse forms each row again: kept from the forward they cross memory
// twice, which cost an ensemble of 512 4 x 4 models as much as the rows'
// exps save (docs/performance.md).
void attention_seeds(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *x,
                     PetscInt N, double scale, const double *weights, double *out, SeedsWork &work);

// The transpose of the forward map's Jacobian applied to lam (lanes: N x d),
// weighted by scale: adds to dx (lanes: N x d, every token as query and as
// key), dtheta (lanes: shape.size) and, when not null, to weight_grad
// (lanes: N) the derivative in each key's weight.
void attention_seeds_reverse(const HeadShape &shape, const double *theta, const AttentionOptions &o, const double *x,
                             PetscInt N, double scale, const double *weights, const double *lam, double *dx,
                             double *dtheta, double *weight_grad, SeedsWork &work);

// Lanes from models: dst[e kLanes + w] = src[w][e], e < n, for the lanes w
// whose src is not null (the others 0); and back: dst[w][e] (+)= src[e
// kLanes + w] for the lanes whose dst is not null.
void lanes_gather(const double *const *src, PetscInt n, double *dst);
void lanes_scatter(const double *src, PetscInt n, double *const *dst, bool add);

} // namespace mft
