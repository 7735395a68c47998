// The cost of one training step on P ranks, and the choice of the process grid.
//
// What crosses the network is counted rank by rank from the layouts the
// solver itself uses (split() of tokens and heads, tokens.hpp and heads.hpp;
// the plans of exchange.hpp), not estimated:
//   per layer  each token group gathers its tokens over its Ph ranks twice
//              (the forward's state, kept for the adjoint; the adjoint) and
//              reduce-scatters the contributions once, and with Ph > 1
//              the forward's velocity too; for each sequence cut across
//              token groups, the group's rows (tokens or key projections,
//              tokens.hpp) go to every other group holding part of it twice
//              (forward, adjoint; once when the forward's are kept for the
//              adjoint, velocity.hpp) and their gradients come back once;
//   per step   the head gradients are reduce-scattered over the token groups
//              and the updated heads allgathered, each in HeadBuckets buckets
//              of layers (heads.hpp), each with a PETSc scatter between the
//              chunks and theta (local when Ph = 1); all buckets but the
//              first layers' run behind kernels, and are hidden up to
//              (B - 1) / B of the step's compute.
// Compute: the attention operations each rank does (and the MLP sublayers'
// products on its own tokens, CountMlp) (CountUnit: bench.hpp's
// count, with the keys' and values' projections of every sequence it
// touches, or, for a cut sequence shared as projections, of the group's own
// tokens), the forward's at rate.forward and the reverse's at
// rate.forward * rate.reverse.
// Time: the slowest rank's compute plus the slowest rank's communication
// less what of it runs hidden behind the kernels.
// Ranks are placed on nodes in order, node_ranks to a node (0: all on one).
// A message to a rank of the same node costs latency + bytes / bandwidth;
// to another node remote_latency, and its bytes go at remote_bandwidth, or
// slower when the node's ranks together send more off the node than its
// network card carries at card_bandwidth in that time:
//   t_r = m_local lat + b_local / bw + m_remote rlat
//         + max(b_remote / rbw, (bytes off node r's node) / card).
// Every routine here is not collective: a rank prices any rank's work from the
// sizes alone.
#pragma once

#include "mft/settings/settings.hpp"
#include "mft/layout/tokens.hpp"

#include <optional>

namespace mft {

struct Network {
  double latency = 1.5e-6;         // seconds a message within a node
  double bandwidth = 12e9;         // bytes a second within a node
  double remote_latency = 2.5e-6;  // seconds a message between nodes
  double remote_bandwidth = 25e9;  // bytes a second one rank sends off its node
  double card_bandwidth = 25e9;    // bytes a second a node's card carries, all its ranks together
  PetscInt node_ranks = 0;         // ranks a node, in rank order (0: every rank on one node)
};

// The network of the settings (parallel.latency, ...), node_ranks to a node.
Network NetworkOf(const ParallelSettings &s, PetscInt node_ranks);

// A rank's compute rates: `forward` operations a second of the forward's
// count, and the reverse's operations at `reverse` times that rate (the
// kernels' own ratio on this machine and shape, MeasureReverseRate in
// bench.hpp; 1 when not measured). From a plain rate: reverse 1.
struct Rates {
  double forward = 0, reverse = 1;
  Rates(double f, double r = 1) : forward(f), reverse(r) {}
};

// The operations of one (sequence, head) unit at queries [q0, q1) of N
// tokens with `projected` tokens' keys and values projected:
//   forward  bench.hpp's count (projections, scores, exps, weighted sums, O);
//   reverse  twice the forward's (each product's two transposes), and, in
//            `again`, what the reverse makes again unless the forward kept
//            its statistics (attention.hpp): a tiled block's first sweep
//            (the scores, exps and weighted sums of queries with more keys
//            than a block takes at once), and qkvo's weighted sums at once
//            (dO needs Y).
struct UnitOperations {
  double forward = 0, reverse = 0, again = 0;
};
UnitOperations CountUnit(const ModelSettings &m, PetscInt N, PetscInt q0, PetscInt q1, double projected);

// The operations of one layer's MLP sublayer on `tokens` tokens: its
// products (the activations are not counted), forward Z = Y U^T and
// sigma(Z) W (4 m d a token), reverse Z again, dW, G, dY and dU (10 m d).
struct MlpOperations {
  double forward = 0, reverse = 0;
};
MlpOperations CountMlp(const ModelSettings &m, PetscInt tokens);

struct StepCost {
  PetscInt P = 1, Ph = 1, Pt = 1;
  CutForm form = CutForm::tokens;
  bool cuts = false;                      // some token group holds part of a sequence
  PetscInt threads = 1;                   // per rank
  double messages = 0, bytes = 0;         // sent per rank and step: the mean over ranks
  double remote_messages = 0, remote_bytes = 0; // of which to other nodes
  double scatter_messages = 0, scatter_bytes = 0; // of which PETSc's scatters (the rest: exchange.hpp)
  double max_messages = 0, max_bytes = 0; // the busiest rank's
  double operations = 0;                  // the busiest rank's
  double compute = 0, communication = 0;  // seconds, slowest rank (communication: what the kernels do not hide)
  double hidden = 0;                      // seconds of exchanges behind the kernels (heads.hpp), largest rank's
  double memory = 0; // bytes the busiest rank keeps for the exchanges: the forward's gathered states, the cut rows
  double seconds() const { return compute + communication; }
};

// The step of `m` on M sequences of N tokens, P ranks in Ph head groups, cut
// sequences shared in `form`, each rank running `threads` threads over its
// (sequence, chunk of heads) units (velocity.hpp: a rank's compute divided
// by the threads its units keep busy).
// The forward's statistics are counted kept (memory, nothing made again in
// the reverse) where they pay and fit in `memory` bytes a rank beside the
// rest (0: any), as a run keeps them (velocity.hpp).
StepCost PredictStep(const ModelSettings &m, PetscInt M, PetscInt N, PetscInt P, PetscInt Ph, CutForm form,
                     const Rates &rate, const Network &net, PetscInt threads = 1, double memory = 0);

// parallel.cut_sequences as a form (none for auto: the cost model chooses).
std::optional<CutForm> CutFormSetting(const ParallelSettings &s);

// The grid of least predicted step time: over the head-group counts Ph (a
// divisor of P, at most H, leaving every token group a token; only `Ph` when
// it is given, > 0) and the forms (only `form` when given) whose memory is at
// most `memory` bytes a rank (0: any). Ph = 0 in the result when there is
// none; then `memory` is the least any of them needs (-1: no grid at all).
StepCost ChooseGrid(const ModelSettings &m, PetscInt M, PetscInt N, PetscInt P, const Rates &rate, const Network &net,
                    PetscInt Ph = 0, std::optional<CutForm> form = std::nullopt, double memory = 0,
                    PetscInt threads = 1);

// For `cores` cores on nodes of node_cores (0: one node of them all): the
// threads per rank T (a divisor of node_cores, and of cores), the grid and
// the form of least predicted step time, with cores / T ranks and
// node_cores / T of them a node. Ph = 0 when no grid fits.
StepCost ChooseLayout(const ModelSettings &m, PetscInt M, PetscInt N, PetscInt cores, PetscInt node_cores,
                      const Rates &rate, Network net, std::optional<CutForm> form = std::nullopt);

} // namespace mft
