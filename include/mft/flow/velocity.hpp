// The mean-field velocity of one layer and its transposed Jacobians.
//
//   f(x)_i = (1/H) sum_h Attn_{theta[l,h]}(x_i)            (docs/model.md, 'Depth as time')
//
// or, with depth and head exponents a and c, L^(1-a) H^-c sum_h Attn: the
// Euler step 1/L then adds L^-a H^-c sum_h Attn (HeadSumScale).
//
// Forward: each rank gathers the tokens of its token group (and, for a
// sequence cut across token groups, the other groups' tokens or key
// projections: tokens.hpp), adds the contributions of its head group for the
// group's queries, and the head groups' partial sums are reduce-scattered
// onto the owned tokens. The gathered tokens of each layer are kept for the
// adjoint (VelocityKeep), which then gathers only the adjoint.
// Reverse: one sweep per layer gives both (df/dx)^T lam, the state part with
// its mean-field term (a key token receives from every query that attends to
// it), and (df/dtheta)^T lam for the layer's heads. PETSc asks for the two
// separately, with the same lam: the parameter part is kept from the sweep,
// and added to the rank's partial head gradients (Heads::grad), which cross
// the network once per adjoint solve (HeadsReduceGradient), not per layer.
#pragma once

#include "mft/kernels/attention.hpp"
#include "mft/kernels/attention_seeds.hpp"
#include "mft/flow/chunks.hpp"
#include "mft/layout/events.hpp"
#include "mft/layout/heads.hpp"
#include "mft/layout/tokens.hpp"

#include <petscvec.h>

namespace mft {

// PETSc events of a step's parts, registered by VelocityCreate: the attention
// kernels (MftKernels) and the exchanges of tokens, cut-sequence rows, sums
// and gradients (MftExchange: the time a rank spends in their calls, waiting
// included; what runs behind the kernels is not in it). -log_view shows them
// in the stages MftForward (the forward solve) and MftAdjoint (the adjoint
// solve, the gradient's sum with it); the heads' gather after an update is
// in the stage that calls it. mft bench reads them over every stage.

struct Velocity {
  const Grid *grid = nullptr;
  const TokenLayout *tokens = nullptr;
  Heads *heads = nullptr;
  AttentionOptions options;
  double scale = 0;        // of the head sum (HeadSumScale)
  const std::vector<char> *active = nullptr; // sequences in the current batch (null: all)
  Vec x_local = nullptr;   // the group's tokens of the state
  Vec lam_local = nullptr; // the group's tokens of the adjoint
  Vec dx_local = nullptr;  // contributions to the group's tokens
  Vec scratch = nullptr;   // a state-layout vector for a lone parameter transpose
  std::vector<double> partial; // the head group's velocity at the group's queries
  // The rows of the cut sequences (tokens.hpp), per cut N rows of key_width
  // numbers: the tokens (d), or the projections (Hl (k + dv): the group's
  // heads in order, each K x_j then V x_j); their gradients in the reverse.
  CutForm form = CutForm::tokens;
  std::vector<double> keys, dkeys;
  PetscInt key_width = 0;
  // The rows' share in flight: the kernels of the sequences the group holds
  // whole run first, then those of the cut ones (with parallel.overlap).
  CutRowsInFlight sharing;
  // Threads over the group's sequences and chunks of its heads
  // (parallel.threads): each has its own work space. The reverse sums each
  // head's gradient over a fixed number of chunks of sequences (each chunk in
  // sequence order, then the chunks in order); with head_chunks > 1 (HeadChunks)
  // chunk j > 0 of the heads sums its heads' contributions to a token (in head
  // order) into head_partial (and, for cut rows shared as tokens, into
  // dkeys_partial), added to chunk 0's after all in chunk order. Neither
  // depends on the thread count.
  PetscInt threads = 1, chunks = 1, head_chunks = 1;
  // With query_chunks > 1 (QueryChunks: few sequences and heads for the
  // threads) the units are (sequence, chunk of heads, chunk of queries):
  // each sequence's keys are projected once for all its query chunks, in
  // key chunks (`projected`, per sequence and head a key store of N keys,
  // attention.hpp, read in place by every chunk); in the reverse each query
  // chunk sets its key gradients in its own copy (`dprojected`: N rows of
  // dkappa, then of dw), the copies are summed in chunk order and taken back
  // through the projection in key chunks; the head gradients go into one
  // copy per (sequence, chunk) (`query_grad`), added in order. The chunks
  // are the layout's, not the thread count's.
  PetscInt query_chunks = 1;
  std::vector<double> projected, dprojected, query_grad;
  std::vector<AttentionWork> works;
  std::vector<double> chunk_grad;    // chunks x (the group's heads' entries)
  std::vector<double> head_partial;  // (head_chunks - 1) x the group's tokens
  std::vector<double> dkeys_partial; // (head_chunks - 1) x dkeys (tokens form)
  PetscInt layer = -1;     // layer whose state is gathered in x_local
  // The forward's gathered state of each layer, kept for the adjoint that
  // follows (VelocityKeep): kept_layer[l] once layer l's is in kept.
  std::vector<double> kept;
  std::vector<char> kept_layer;
  // With them, where the sequences are long enough for the statistics to
  // pay and StatisticsBytes allows, each layer's queries' softmax statistics
  // (attention.hpp: the reverse then makes P~ and dS in one pass, and skips
  // a tiled block's first sweep), per layer, head of the group and token of
  // the group; `forwards` when the prepared layer's state is the forward's,
  // so that they hold for it.
  std::vector<double> statistics;
  // Likewise, when they fit, each layer's cut-sequence rows as the forward
  // had them shared: the adjoint then takes them and shares none again.
  std::vector<double> kept_keys;
  bool forwards = false;
  double memory = -1; // bytes the rank may keep for its buffers (its share of the node; < 0: no limit)
  // Weighted tokens (TokenLayout::weights): the reverse also makes (df/dw)^T
  // lam, the layer's part of the weights' gradient. Each unit adds into a
  // copy of its own (one per chunk of heads and chunk of queries, each the
  // group's sequences' N tokens: weight_parts), summed in copy order into
  // layer_weight_grad (seqs x N, this rank's part; the other ranks' parts
  // are theirs to add: Flow sums them once per adjoint solve).
  std::vector<double> weight_parts, layer_weight_grad;
  // An ensemble (ensemble.hpp): `seeds` models folded into one rank's
  // problem, model s holding sequences s M .. s M + M - 1 and heads s H ..
  // s H + H - 1 of every layer (M, H the model's). Its units are (group of
  // kLanes models, sequence), each model's heads in order, run by the lanes
  // kernels (attention_seeds.hpp); threads over the groups (each its own
  // models: sums in the same order on any thread count). 0: not an ensemble.
  PetscInt seeds = 0;
  struct SeedsBuffers { // a thread's: the lanes kernels' scratch, a sequence's lanes, a group's heads
    SeedsWork work;
    std::vector<double> x, lam, out, weight_grad, heads, dheads;
  };
  std::vector<SeedsBuffers> seeds_buffers;
  PetscInt sweeps = 0;     // reverse sweeps done (one per layer and adjoint solve)
  // Identity of the adjoint vector whose parameter part is in heads->layer_grad.
  PetscInt grad_layer = -1;
  PetscObjectId grad_id = 0;
  PetscObjectState grad_state = 0;
};

// VelocityCreate and VelocityDestroy are collective on g.comm.
// seeds > 0: an ensemble of that many models folded on one rank (t holds
// seeds M sequences, h seeds H heads a layer; m is one model's).
PetscErrorCode VelocityCreate(const Grid &g, const TokenLayout &t, Heads *h, const ModelSettings &m, CutForm form,
                              PetscInt threads, Velocity *v, PetscInt seeds = 0);


// The fixed number of chunks of sequences the reverse sums head gradients over.
constexpr PetscInt kGradientChunks = 16;

// Collective on the grid's comm.
PetscErrorCode VelocityDestroy(Velocity *v);

// f = velocity of layer l at state x.
// Collective on x's comm (the gather, the cut rows, the sums over the head
// groups).
PetscErrorCode VelocityEvaluate(Velocity *v, PetscInt l, Vec x, Vec f);

// Gathers the state x of layer l (and shares the cut sequences' rows) for
// the transposes that follow. The group's tokens are not gathered again when
// the forward kept them for layer l (VelocityKeep): x must then be that
// state (the adjoint of the forward solve), which is checked on the owned
// tokens.
// Collective on x's comm.
PetscErrorCode VelocityPrepare(Velocity *v, PetscInt l, Vec x);

// From now on, and until the next call, the forward keeps each layer's
// gathered state (layers 0 ... L - 1) for the adjoint; L = 0 stops keeping.
// One gather of the state a layer fewer in the adjoint, for L times the
// group's tokens in memory.
// Not collective.
PetscErrorCode VelocityKeep(Velocity *v, PetscInt L);

// dx = (df/dx)^T lam at the prepared state; keeps (df/dtheta)^T lam (and,
// with weighted tokens, (df/dw)^T lam in layer_weight_grad).
// Collective on lam's comm.
PetscErrorCode VelocityReverse(Velocity *v, Vec lam, Vec dx);

// Heads::grad[layer] += weight * (this rank's part of (df/dtheta)^T lam), for
// the prepared layer.
// Not collective: this rank's partial sums only.
PetscErrorCode VelocityReverseParameters(Velocity *v, Vec lam, double weight);

} // namespace mft
