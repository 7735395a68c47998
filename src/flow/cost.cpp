// The cost model of a training step: counted from the layouts, rank by rank.
#include "mft/flow/cost.hpp"

#include "mft/kernels/attention.hpp"
#include "mft/layout/exchange.hpp"
#include "mft/layout/grid.hpp"
#include "mft/layout/heads.hpp"
#include "mft/layout/tokens.hpp"
#include "mft/flow/chunks.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace mft {

namespace {

struct Count {
  double messages = 0, bytes = 0, remote_messages = 0, remote_bytes = 0; // all; of which to other nodes
  void add(const Count &o, double times = 1) {
    messages += times * o.messages, bytes += times * o.bytes;
    remote_messages += times * o.remote_messages, remote_bytes += times * o.remote_bytes;
  }
  void send(double b, bool remote) {
    messages += 1, bytes += b;
    if (remote) remote_messages += 1, remote_bytes += b;
  }
};

// Ranks on nodes, per to a node in rank order (0: all on one).
struct Nodes {
  PetscInt per = 0;
  PetscInt of(PetscInt r) const { return per > 0 ? r / per : 0; }
  bool apart(PetscInt a, PetscInt b) const { return of(a) != of(b); }
};

// A communicator's ranks among all: rank i of it is first + i stride.
struct Members {
  PetscInt first, stride;
  PetscInt operator()(PetscInt i) const { return first + i * stride; }
};

// Rank r receives the entries [t0, t1) of a PETSc-owned range (owner_begin
// over ranks): adds their bytes to each other owner's part of `from`.
void Receive(const std::vector<PetscInt> &owner_begin, PetscInt r, PetscInt t0, PetscInt t1, double entry_bytes,
             std::map<PetscInt, double> &from) {
  if (t1 <= t0) return;
  PetscInt o = (PetscInt)(std::upper_bound(owner_begin.begin(), owner_begin.end(), t0) - owner_begin.begin()) - 1;
  for (; o + 1 < (PetscInt)owner_begin.size() && owner_begin[o] < t1; ++o) {
    const PetscInt lo = std::max(t0, owner_begin[o]), hi = std::min(t1, owner_begin[o + 1]);
    if (hi > lo && o != r) from[o] += entry_bytes * (double)(hi - lo);
  }
}

// What rank `rank` of a communicator of n (members `who`) sends in one exchange.
Count Exchange(ExchangeKind kind, PetscInt n, PetscInt rank, const std::vector<PetscInt> &counts, Members who,
               Nodes nodes) {
  Count c;
  for (const ExchangeStep &s : ExchangePlan(kind, n, rank, counts))
    if (s.send_end > s.send_begin) c.send(8.0 * (double)(s.send_end - s.send_begin), nodes.apart(who(rank), who(s.peer)));
  return c;
}

// What each rank sends in the PETSc scatter of the heads from theta (owned
// by all P ranks in turn) to the chunks (each rank's heads of its head group,
// layer by layer): one message to each rank it owns heads of.
std::vector<Count> HeadScatters(const ModelSettings &m, PetscInt P, PetscInt Ph, PetscInt ph, Nodes nodes) {
  const PetscInt Pt = P / Ph;
  std::vector<Count> scatter((size_t)P);
  std::vector<PetscInt> theta_begin((size_t)P + 1);
  for (PetscInt r = 0; r < P; ++r) theta_begin[r] = split(m.L * m.H, P, r).begin;
  theta_begin[P] = m.L * m.H;
  for (PetscInt r = 0; r < P; ++r) { // the chunk's heads, layer by layer, from their owners in theta: one message each
    const Range heads = split(m.H, Ph, r % Ph);
    const PetscInt Hl = heads.size();
    const Range chunk = split(m.L * Hl, Pt, r / Ph);
    std::map<PetscInt, double> from;
    for (PetscInt c0 = chunk.begin; c0 < chunk.end;) {
      const PetscInt l = c0 / Hl, c1 = std::min(chunk.end, (l + 1) * Hl);
      const PetscInt f0 = l * m.H + heads.begin + c0 % Hl;
      Receive(theta_begin, r, f0, f0 + (c1 - c0), 8.0 * ph, from);
      c0 = c1;
    }
    for (const auto &[o, bytes] : from) scatter[o].send(bytes, nodes.apart(o, r));
  }
  return scatter;
}

// What rank r sends to share its group's `q` rows of cut sequence `seq`
// (TokensShareCutRowsBegin): to every other group holding part of it (its rank of
// the same place, g Ph + r % Ph), all its rows, or with `identical` its share
// of them (of the group's Ph shares, or of the peer's node's S where the
// peer's node shares them, NodeSharing); then (`gathered`, per rank of the
// group, and `node_gathered`, per rank of the node) the entries of the peers'
// parts its group and its node complete by one allgather each after all the
// cut sequences. With `back`, instead: the gradients of each peer's rows, to
// it (with `identical`, this rank's share of its group's or node's sums).
struct CutRowsCount {
  Count sent;
  std::vector<PetscInt> gathered, node_gathered;
};
void ShareCutRows(const NodeSharing &ns, PetscInt r, PetscInt seq, PetscInt q, PetscInt width, bool identical,
                  Nodes nodes, bool back, CutRowsCount *out) {
  const PetscInt Ph = ns.Ph, a = r % Ph, b = r / Ph, M = ns.M, N = ns.N, Pt = ns.Pt;
  const PetscInt S = ns.ranks(ns.node(b)), u = ns.place(b, a);
  auto share = [&](PetscInt n, bool node, PetscInt sx, PetscInt at) { // rows of share `at` of n rows
    return (double)(node ? split(n, sx, at) : identical ? split(n, Ph, a) : Range{0, n}).size();
  };
  for (PetscInt g = split_part(M * N, Pt, seq * N); g <= split_part(M * N, Pt, (seq + 1) * N - 1); ++g) {
    if (g == b) continue;
    const Range part = split(M * N, Pt, g);
    const PetscInt n = std::min(part.end, (seq + 1) * N) - std::max(part.begin, seq * N); // the peer's rows
    const bool remote = nodes.apart(r, g * Ph + a);
    const bool in_node = identical && ns.shared(seq, b, g), out_node = identical && ns.shared(seq, g, b);
    if (back) { // the gradients of the peer's rows (with `identical`: this rank's share of the sums)
      const double rows = share(n, in_node, S, u);
      if (rows > 0) out->sent.send(8.0 * (double)width * rows, remote);
      continue;
    }
    const double mine = share(q, out_node, ns.ranks(ns.node(g)), ns.place(g, a));
    if (mine > 0) out->sent.send(8.0 * (double)width * mine, remote);
    if (in_node)
      for (PetscInt x = 0; x < S; ++x) out->node_gathered[x] += split(n, S, x).size() * width;
    else
      for (PetscInt x = 0; identical && x < Ph; ++x) out->gathered[x] += split(n, Ph, x).size() * width;
  }
}

} // namespace

UnitOperations CountUnit(const ModelSettings &m, PetscInt N, PetscInt q0, PetscInt q1, double projected) {
  const double d = (double)m.d, k = (double)m.k, dv = m.head_kind == HeadKind::qkv ? d : k, q = (double)(q1 - q0);
  const PetscInt at_once = AttentionWork().keys_at_once;
  auto keys_of = [&](PetscInt a, PetscInt b) { // the sum of nk over queries [a, b), in doubles (b^2 passes 2^31)
    const double x = (double)a, y = (double)b;
    return a >= b ? 0.0 : m.causal ? 0.5 * (y * (y + 1) - x * (x + 1)) : (y - x) * (double)N;
  };
  const double keys = keys_of(q0, q1);
  UnitOperations u;
  u.forward = 2.0 * projected * d * (k + dv) + 2.0 * q * d * k + 2.0 * keys * k + keys + 2.0 * keys * dv;
  if (m.head_kind == HeadKind::qkvo) u.forward += 2.0 * q * dv * d;
  // Queries with more keys than a block takes at once: tiled.
  const double tiled = keys_of(std::max(q0, m.causal ? at_once : (N > at_once ? q0 : q1)), q1);
  u.reverse = 2.0 * u.forward;
  u.again = 2.0 * tiled * k + tiled + 2.0 * tiled * dv;
  if (m.head_kind == HeadKind::qkvo) u.again += 2.0 * (keys - tiled) * dv;
  return u;
}

namespace {

// One pass over rank r's sequences (of its token group g): its units'
// operations (CountUnit, with the keys' and values' projections of the whole
// sequence, or only of the group's own tokens when a cut sequence is shared
// as projections), its cut sequences and the rows they share: a cut's peers
// are every other token group holding part of its sequence, as
// CutSequencesFor makes them (tested), counted here without building the
// plan; then the peers' rows within the group and the node, gathered and
// summed back.
struct GroupPass {
  PetscInt cuts = 0, queries = 0;             // queries: the most of a sequence
  double forward = 0, reverse = 0, again = 0; // again: made again in the reverse, unless statistics are kept
  CutRowsCount share, back; // one share of the cut rows (the forward's; the adjoint's unless kept); their gradients
};
GroupPass PassOverSequences(const ModelSettings &m, PetscInt M, PetscInt N, PetscInt P, PetscInt Ph, PetscInt r,
                            CutForm form, PetscInt row, const Network &net, Nodes nodes) {
  const Range g = GroupTokens(P, Ph, M, N, r), s = GroupSequences(P, Ph, M, N, r);
  const Members group{r - r % Ph, 1};
  const bool tokens = form == CutForm::tokens;
  const NodeSharing ns(M, N, P, Ph, net.node_ranks);
  const PetscInt S = ns.ranks(ns.node(r / Ph)); // the ranks of its node that share rows (NodeSharing)
  GroupPass p;
  p.share.gathered.assign((size_t)Ph, 0), p.share.node_gathered.assign((size_t)S, 0);
  for (PetscInt seq = s.begin; seq < s.end; ++seq) {
    const PetscInt q0 = std::max(g.begin - seq * N, (PetscInt)0), q1 = std::min(g.end - seq * N, N);
    const double q = (double)(q1 - q0);
    const bool cut = q1 - q0 < N;
    p.queries = std::max(p.queries, q1 - q0);
    if (cut) {
      ++p.cuts;
      ShareCutRows(ns, r, seq, q1 - q0, row, tokens, nodes, false, &p.share);
      ShareCutRows(ns, r, seq, q1 - q0, row, tokens, nodes, true, &p.back);
    }
    const UnitOperations u = CountUnit(m, N, q0, q1, cut && form == CutForm::projections ? q : (double)N);
    p.forward += u.forward, p.reverse += u.reverse, p.again += u.again;
  }
  auto any = [](const std::vector<PetscInt> &v) {
    return std::any_of(v.begin(), v.end(), [](PetscInt e) { return e > 0; });
  };
  if (Ph > 1 && any(p.share.gathered)) {
    p.share.sent.add(Exchange(ExchangeKind::allgather, Ph, r % Ph, p.share.gathered, group, nodes));
    p.back.sent.add(Exchange(ExchangeKind::reduce_scatter, Ph, r % Ph, p.share.gathered, group, nodes));
  }
  if (any(p.share.node_gathered)) {
    const Members node{ns.groups(ns.node(r / Ph)).begin * Ph, 1};
    const PetscInt u = ns.place(r / Ph, r % Ph);
    p.share.sent.add(Exchange(ExchangeKind::allgather, S, u, p.share.node_gathered, node, nodes));
    p.back.sent.add(Exchange(ExchangeKind::reduce_scatter, S, u, p.share.node_gathered, node, nodes));
  }
  return p;
}

// Memory (chunks.hpp): L gathered states kept (and the queries'
// statistics; with model.norm = sphere, L velocities), and each cut's rows and their gradients. With threads over
// chunks of heads (chunks.hpp), each chunk but the first sums into copies
// of the group's tokens (and of the cut rows); with few units, threads over
// chunks of a sequence's queries too: the keys' projections of every
// sequence and head, and a copy of their gradients a chunk. What is kept for
// the adjoint is kept when it fits beside the rest (chunks.hpp): the cut
// rows (then shared once a layer, not twice), the statistics.
struct RankMemory {
  PetscInt J = 1, Qc = 1; // head chunks, query chunks
  double others = 0;      // all but what is kept for the adjoint
  KeptForAdjoint kept;
};
RankMemory MemoryOfRank(const ModelSettings &m, PetscInt N, PetscInt tokens_in_group, PetscInt sequences, PetscInt Hl,
                        CutForm form, PetscInt row, const GroupPass &pass, double memory) {
  const PetscInt d = m.d, k = m.k, dv = m.head_kind == HeadKind::qkv ? d : k;
  const bool tokens = form == CutForm::tokens;
  const double width = 8.0 * (double)row;
  RankMemory r;
  const double copy = 8.0 * ((double)tokens_in_group + (tokens ? (double)pass.cuts * N : 0.0)) * d;
  r.J = HeadChunks(sequences, Hl, copy);
  const double projected = (double)sequences * (double)Hl * (double)N * (double)(k + dv);
  r.Qc = tokens || pass.cuts == 0 ? QueryChunks(sequences * r.J, pass.queries, 8.0 * projected) : 1;
  const double copies = (double)(r.J - 1) * copy + (r.Qc > 1 ? 8.0 * (double)(r.Qc + 2) * projected : 0.0);
  // model.norm = sphere keeps each layer's velocity at the owned tokens too
  // (flow.hpp): counted at the group's tokens, a bound.
  const double states = m.norm == TokenNorm::sphere ? 2.0 : 1.0;
  r.others = 8.0 * states * (double)m.L * (double)tokens_in_group * (double)d +
             2.0 * width * (double)pass.cuts * (double)N + copies;
  r.kept = KeptForTheAdjoint(m.L, (double)pass.cuts * N * row, Hl, tokens_in_group, head_shape(m.head_kind, d, k), N,
                             memory > 0 ? std::max(0.0, memory - r.others) : -1.0);
  return r;
}

// Per step: the gradient and the heads over the token groups, in buckets of
// layers (heads.hpp, exchange.hpp). All buckets but the first layers' run
// behind kernels.
void HeadBucketExchanges(const ModelSettings &m, PetscInt Pt, PetscInt Ph, PetscInt r, PetscInt Hl, PetscInt ph,
                         Nodes nodes, Count *step, Count *behind) {
  const Members peers{r % Ph, Ph}; // its token groups' ranks of its place
  std::vector<PetscInt> counts((size_t)Pt);
  for (PetscInt b = 0; b < Pt; ++b) counts[b] = split(m.L * Hl, Pt, b).size() * ph;
  const PetscInt B = HeadBuckets(m.L, Pt);
  for (PetscInt bk = 0; bk < B; ++bk) {
    const Range layers = split(m.L, B, bk);
    const std::vector<PetscInt> within = SegmentsWithin(counts, layers.begin * Hl * ph, layers.end * Hl * ph);
    Count &to = bk == 0 ? *step : *behind;
    to.add(Exchange(ExchangeKind::reduce_scatter, Pt, r / Ph, within, peers, nodes));
    to.add(Exchange(ExchangeKind::allgather, Pt, r / Ph, within, peers, nodes));
  }
}

// The network's time of the busiest rank: each node's bytes off the node
// share its card; the heads' later buckets go behind the kernels of the
// layers before them (forward: the gathers, a third of the compute;
// reverse: the sums, two thirds): hidden up to (B - 1) / B of that compute.
void NetworkTime(const ModelSettings &m, const std::vector<Count> &steps, const std::vector<Count> &behind,
                 const Network &net, Nodes nodes, StepCost *c) {
  const PetscInt P = (PetscInt)steps.size();
  std::vector<double> off_node((size_t)nodes.of(P - 1) + 1, 0.0);
  for (PetscInt r = 0; r < P; ++r) off_node[nodes.of(r)] += steps[r].remote_bytes;
  auto seconds = [&](const Count &t, double card) {
    return (t.messages - t.remote_messages) * net.latency + (t.bytes - t.remote_bytes) / net.bandwidth +
           t.remote_messages * net.remote_latency + std::max(t.remote_bytes / net.remote_bandwidth, card);
  };
  const double window = c->compute * (double)(HeadBuckets(m.L, c->Pt) - 1) / (double)HeadBuckets(m.L, c->Pt);
  for (PetscInt r = 0; r < P; ++r) {
    const Count &t = steps[r];
    const double card = t.remote_bytes > 0 ? off_node[nodes.of(r)] / net.card_bandwidth : 0;
    const double hidden = std::min(seconds(behind[r], 0.0), window);
    c->hidden = std::max(c->hidden, hidden);
    c->communication = std::max(c->communication, seconds(t, card) - hidden);
  }
}

} // namespace

MlpOperations CountMlp(const ModelSettings &m, PetscInt tokens) {
  const double products = 2.0 * (double)tokens * (double)m.mlp_width * (double)m.d; // one m x d product's
  return {2.0 * products, 5.0 * products};
}

StepCost PredictStep(const ModelSettings &m, PetscInt M, PetscInt N, PetscInt P, PetscInt Ph, CutForm form,
                     const Rates &rate, const Network &net, PetscInt threads, double memory) {
  const PetscInt d = m.d, k = m.k, dv = m.head_kind == HeadKind::qkv ? d : k, Pt = P / Ph;
  const PetscInt ph = m.head_kind == HeadKind::qkv ? 2 * k * d + dv * d : 2 * k * d + dv * d + d * k; // head size
  StepCost c;
  c.P = P, c.Ph = Ph, c.Pt = Pt, c.form = form;
  double busiest = 0; // the largest operations a busy thread of a rank does
  const Nodes nodes{net.node_ranks};
  const std::vector<Count> scatter = HeadScatters(m, P, Ph, ph, nodes);
  std::vector<Count> steps((size_t)P), behind((size_t)P); // behind: of the step's, what runs behind kernels
  for (PetscInt r = 0; r < P; ++r) {
    const Members group{r - r % Ph, 1}; // its head group
    Count layer, step;
    // Per layer: the group's tokens gathered twice (the forward's state, kept
    // for the adjoint; the adjoint) and the contributions reduce-scattered
    // once, over the Ph ranks of the group; with Ph > 1 the forward's velocity
    // too. The cut sequences' rows (d or Hl (k + dv) numbers a token) are
    // shared twice (forward, adjoint; once when kept for the adjoint) and
    // their gradients returned once, one message to each peer each time
    // (tokens.hpp).
    const Range g = GroupTokens(P, Ph, M, N, r), s = GroupSequences(P, Ph, M, N, r);
    const PetscInt Hl = split(m.H, Ph, r % Ph).size();
    std::vector<PetscInt> entries((size_t)Ph);
    for (PetscInt a = 0; a < Ph; ++a) entries[a] = split(g.size(), Ph, a).size() * d;
    layer.add(Exchange(ExchangeKind::allgather, Ph, r % Ph, entries, group, nodes), 2.0);
    layer.add(Exchange(ExchangeKind::reduce_scatter, Ph, r % Ph, entries, group, nodes), Ph > 1 ? 2.0 : 1.0);
    const PetscInt row = form == CutForm::tokens ? d : Hl * (k + dv); // numbers a token's row
    GroupPass pass = PassOverSequences(m, M, N, P, Ph, r, form, row, net, nodes);
    layer.add(pass.back.sent);
    c.cuts = c.cuts || pass.cuts > 0;
    const RankMemory mem = MemoryOfRank(m, N, g.size(), s.size(), Hl, form, row, pass, memory);
    layer.add(pass.share.sent, mem.kept.rows > 0 ? 1.0 : 2.0);
    if (mem.kept.statistics == 0) pass.reverse += pass.again;
    c.memory = std::max(c.memory, mem.others + mem.kept.rows + mem.kept.statistics);
    // Per step: the heads' buckets, and the PETSc scatters between the chunk and theta.
    HeadBucketExchanges(m, Pt, Ph, r, Hl, ph, nodes, &step, &behind[r]);
    step.add(scatter[r], 2.0);
    step.add(layer, (double)m.L);
    step.add(behind[r]);
    steps[r] = step;
    c.messages += step.messages / (double)P;
    c.bytes += step.bytes / (double)P;
    c.remote_messages += step.remote_messages / (double)P;
    c.remote_bytes += step.remote_bytes / (double)P;
    c.scatter_messages += 2.0 * scatter[r].messages / (double)P;
    c.scatter_bytes += 2.0 * scatter[r].bytes / (double)P;
    c.max_messages = std::max(c.max_messages, step.messages);
    c.max_bytes = std::max(c.max_bytes, step.bytes);
    // MLP sublayers: the rank's own tokens through every neuron, on one thread.
    const MlpOperations mlp = CountMlp(m, split(g.size(), Ph, r % Ph).size());
    c.operations = std::max(c.operations, (double)m.L * ((double)Hl * (pass.forward + pass.reverse) + mlp.forward + mlp.reverse));
    // Threads share (sequence, chunk of heads, chunk of queries) units of about equal work.
    const double units = (double)std::max<PetscInt>(1, s.size() * mem.J * mem.Qc);
    const double busy = units / std::ceil(units / (double)std::max<PetscInt>(1, threads));
    busiest = std::max(busiest, (double)m.L * ((double)Hl * (pass.forward + pass.reverse / rate.reverse) / busy +
                                                mlp.forward + mlp.reverse / rate.reverse));
  }
  c.compute = busiest / rate.forward;
  c.threads = threads;
  NetworkTime(m, steps, behind, net, nodes, &c);
  return c;
}

Network NetworkOf(const ParallelSettings &s, PetscInt node_ranks) {
  return Network{s.latency, s.bandwidth, s.remote_latency, s.remote_bandwidth, s.card_bandwidth, node_ranks};
}

std::optional<CutForm> CutFormSetting(const ParallelSettings &s) {
  if (s.cut_sequences == CutSequences::automatic) return std::nullopt;
  return s.cut_sequences == CutSequences::tokens ? CutForm::tokens : CutForm::projections;
}

StepCost ChooseGrid(const ModelSettings &m, PetscInt M, PetscInt N, PetscInt P, const Rates &rate, const Network &net,
                    PetscInt Ph, std::optional<CutForm> form, double memory, PetscInt threads) {
  StepCost best;
  best.Ph = 0;
  double least = -1; // the least memory of the candidates
  for (PetscInt h = 1; h <= std::min(P, m.H); ++h) {
    if (Ph > 0 ? h != Ph : P % h || P / h > M * N) continue; // a given Ph is checked by the settings
    for (CutForm f : {CutForm::tokens, CutForm::projections}) {
      if (form && f != *form) continue;
      const StepCost c = PredictStep(m, M, N, P, h, f, rate, net, threads, memory);
      if (least < 0 || c.memory < least) least = c.memory;
      if (memory > 0 && c.memory > memory) continue;
      if (best.Ph == 0 || c.seconds() < best.seconds()) best = c;
    }
  }
  if (best.Ph == 0) best.memory = least;
  return best;
}

StepCost ChooseLayout(const ModelSettings &m, PetscInt M, PetscInt N, PetscInt cores, PetscInt node_cores,
                      const Rates &rate, Network net, std::optional<CutForm> form) {
  StepCost best;
  best.Ph = 0;
  for (PetscInt T = 1; T <= std::max<PetscInt>(node_cores, 1); ++T) {
    if ((node_cores > 0 && node_cores % T) || cores % T) continue;
    net.node_ranks = node_cores / T;
    const StepCost c = ChooseGrid(m, M, N, cores / T, rate, net, 0, form, 0, T);
    if (c.Ph > 0 && (best.Ph == 0 || c.seconds() < best.seconds())) best = c;
  }
  return best;
}

} // namespace mft
