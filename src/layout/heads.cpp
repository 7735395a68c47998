// Head parameters: layout, initialisation, replica gather, norms.
#include "mft/layout/heads.hpp"

#include "mft/layout/exchange.hpp"
#include "mft/layout/random.hpp"

#include <algorithm>
#include <cmath>

namespace mft {

PetscErrorCode HeadsCreate(const Grid &g, const ModelSettings &m, Heads *h) {
  PetscFunctionBeginUser;
  h->shape = head_shape(m.head_kind, m.d, m.k);
  h->L = m.L;
  h->H = m.H;
  h->infinite = m.infinite_head;
  h->logit_exponent = m.logit_exponent;
  h->group = split(m.H, g.Ph, g.a);
  h->owned = split(m.L * m.H, g.size, g.rank);
  const PetscInt P = h->shape.size, Hl = h->group.size();
  PetscCall(VecCreateMPI(g.comm, h->owned.size() * P, m.L * m.H * P, &h->theta));

  h->local.assign((size_t)(m.L * Hl * P), 0.0);
  h->grad.assign(h->local.size(), 0.0);
  h->layer_grad.assign((size_t)(Hl * P), 0.0);

  // This rank's chunk of the replica: heads [c0, c1) in the order (l, h - h0).
  h->token_comm = g.token_comm;
  h->chunk_counts.resize(g.Pt);
  for (PetscInt b = 0; b < g.Pt; ++b) h->chunk_counts[b] = split(m.L * Hl, g.Pt, b).size() * P;
  const Range c = split(m.L * Hl, g.Pt, g.b);
  h->chunk_begin = c.begin * P;
  h->chunk.assign((size_t)(c.size() * P), 0.0);
  PetscCall(VecCreateSeqWithArray(PETSC_COMM_SELF, 1, c.size() * P, h->chunk.data(), &h->chunk_vec));
  std::vector<PetscInt> idx((size_t)(c.size() * P));
  for (PetscInt r = c.begin, n = 0; r < c.end; ++r) {
    const PetscInt flat = (r / Hl) * m.H + h->group.begin + r % Hl;
    for (PetscInt e = 0; e < P; ++e) idx[n++] = flat * P + e;
  }
  IS to;
  PetscCall(ISCreateGeneral(PETSC_COMM_SELF, (PetscInt)idx.size(), idx.data(), PETSC_COPY_VALUES, &to));
  PetscCall(VecScatterCreate(h->chunk_vec, nullptr, h->theta, to, &h->chunk_to_theta));
  PetscCall(ISDestroy(&to));
  const PetscInt B = HeadBuckets(m.L, g.Pt);
  for (PetscInt b = 0; b < B; ++b) h->buckets.push_back(split(m.L, B, b));
  h->gathering.resize((size_t)B);
  h->reducing.resize((size_t)B);
  h->layers_done.assign((size_t)B, 0);
  h->summed.assign((size_t)B, 0);
  PetscFunctionReturn(0);
}

PetscInt HeadBuckets(PetscInt L, PetscInt Pt) { return Pt > 1 ? std::min(L, kHeadBuckets) : 1; }

namespace {

// The replica's entries of bucket b.
Range BucketEntries(const Heads &h, size_t b) {
  const PetscInt row = h.group.size() * h.shape.size;
  return {h.buckets[b].begin * row, h.buckets[b].end * row};
}

PetscErrorCode EndAll(std::vector<ExchangeInFlight> &x) {
  PetscFunctionBeginUser;
  for (ExchangeInFlight &e : x) PetscCall(ExchangeEnd(&e));
  PetscFunctionReturn(0);
}

PetscErrorCode ProgressAll(std::vector<ExchangeInFlight> &x) {
  PetscFunctionBeginUser;
  for (ExchangeInFlight &e : x) PetscCall(ExchangeProgress(&e));
  PetscFunctionReturn(0);
}

// Starts the sum of bucket b's gradient onto the chunks.
PetscErrorCode ReduceBucket(Heads *h, size_t b) {
  PetscFunctionBeginUser;
  const Range e = BucketEntries(*h, b);
  const PetscInt first = std::max(e.begin, h->chunk_begin) - h->chunk_begin; // the own part's place in the chunk
  PetscCall(ExchangeBegin(h->token_comm, ExchangeKind::reduce_scatter, kExchangeTags + kHeadBuckets + (PetscMPIInt)b,
                          h->grad.data() + e.begin, SegmentsWithin(h->chunk_counts, e.begin, e.end),
                          h->chunk.data() + std::min<PetscInt>(first, (PetscInt)h->chunk.size()), &h->reducing[b]));
  h->summed[b] = 1;
  if (!h->overlap) PetscCall(ExchangeEnd(&h->reducing[b]));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode HeadsDestroy(Heads *h) {
  PetscFunctionBeginUser;
  PetscCall(EndAll(h->gathering));
  PetscCall(EndAll(h->reducing));
  PetscCall(VecScatterDestroy(&h->chunk_to_theta));
  PetscCall(VecDestroy(&h->chunk_vec));
  PetscCall(VecDestroy(&h->theta));
  PetscFunctionReturn(0);
}

// The infinite head (heads.hpp) of k = d, from the law draws xi of its
// entries (the finite head's) and the Gaussians zeta drawn after them.
static void InfiniteHead(const HeadShape &sh, const InitSettings &s, double g, const double *xi, Stream &r,
                         std::vector<double> &zeta, double *head) {
  const PetscInt d = sh.d;
  zeta.resize((size_t)sh.size);
  r.normals(zeta.data(), sh.size);
  const double w = g == 0.5 ? s.q_gain * s.k_gain / (double)d : 0.0, root = std::sqrt((double)d);
  for (PetscInt i = 0; i < d; ++i)
    for (PetscInt j = 0; j < d; ++j) {
      const PetscInt e = i * d + j;
      const double id = i == j ? 1.0 : 0.0;
      head[sh.offQ + e] = id;
      head[sh.offK + e] = w * zeta[(size_t)(sh.offK + e)];
      if (sh.kind == HeadKind::qkv) {
        head[sh.offV + e] = s.v_mean * id + s.v_gain / root * xi[sh.offV + e];
      } else {
        head[sh.offO + e] = id;
        head[sh.offV + e] = s.o_mean * s.v_mean * id + s.o_mean * s.v_gain / root * xi[sh.offV + e] +
                            s.o_gain * s.v_gain / root * zeta[(size_t)(sh.offV + e)];
      }
    }
}

PetscErrorCode HeadsInitializeModels(Heads *h, const InitSettings &s, const std::vector<std::uint64_t> &seeds,
                                     Vec theta) {
  const HeadShape &sh = h->shape;
  const double gain[4] = {s.q_gain, s.k_gain, s.v_gain, s.o_gain};
  const double mean[4] = {s.q_mean, s.k_mean, s.v_mean, s.o_mean};
  const PetscInt H = h->H / h->seeds; // a model's heads a layer
  PetscScalar *t;
  PetscFunctionBeginUser;
  PetscCheck((PetscInt)seeds.size() == h->seeds, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "%zu seeds for %" PetscInt_FMT
             " models", seeds.size(), h->seeds);
  PetscCall(VecGetArray(theta, &t));
  std::vector<double> xi((size_t)sh.size), zeta; // zeta: the infinite head's Gaussians
  for (PetscInt flat = h->owned.begin; flat < h->owned.end; ++flat) {
    const PetscInt l = flat / h->H, model = flat % h->H / H, head_of_model = flat % h->H % H;
    Stream r(seeds[(size_t)model], kHeads, (std::uint64_t)l, (std::uint64_t)head_of_model);
    double *head = t + (flat - h->owned.begin) * sh.size;
    // The head's draws in the order of its entries (the blocks in order, each row-major).
    if (s.law == InitLaw::gaussian) r.normals(xi.data(), sh.size);
    else
      for (double &u : xi) u = std::sqrt(3.0) * (2.0 * r.uniform() - 1.0);
    if (h->infinite) {
      InfiniteHead(sh, s, h->logit_exponent, xi.data(), r, zeta, head);
      continue;
    }
    const double *next = xi.data();
    for (PetscInt b = 0; b < sh.blocks(); ++b) {
      const PetscInt rows = sh.block_rows(b), cols = sh.block_cols(b);
      const double spread = gain[b] / std::sqrt((double)cols);
      double *block = head + sh.block_offset(b);
      for (PetscInt i = 0; i < rows; ++i)
        for (PetscInt j = 0; j < cols; ++j) block[i * cols + j] = (i == j ? mean[b] : 0.0) + spread * *next++;
    }
  }
  PetscCall(VecRestoreArray(theta, &t));
  PetscFunctionReturn(0);
}

PetscErrorCode HeadsInitialize(Heads *h, const InitSettings &s, std::uint64_t seed, Vec theta) {
  PetscFunctionBeginUser;
  PetscCall(HeadsInitializeModels(h, s, std::vector<std::uint64_t>((size_t)h->seeds, seed), theta));
  PetscFunctionReturn(0);
}

PetscErrorCode HeadsPerturb(const Heads &h, std::uint64_t seed, double eps, Vec theta) {
  PetscScalar *t;
  PetscFunctionBeginUser;
  PetscCall(VecGetArray(theta, &t));
  for (PetscInt flat = h.owned.begin; flat < h.owned.end; ++flat) {
    Stream r(seed, kHeads, (std::uint64_t)(flat / h.H), (std::uint64_t)(flat % h.H));
    for (PetscInt e = 0; e < h.shape.size; ++e) t[(flat - h.owned.begin) * h.shape.size + e] += eps * r.normal();
  }
  PetscCall(VecRestoreArray(theta, &t));
  PetscFunctionReturn(0);
}

std::vector<double> HeadsBlockChange(const HeadShape &shape, PetscInt L, PetscInt H, const std::vector<double> &now,
                                     const std::vector<double> &start) {
  const PetscInt nb = shape.blocks();
  std::vector<double> moved((size_t)(L * nb), 0.0), size((size_t)(L * nb), 0.0);
  for (PetscInt flat = 0; flat < L * H; ++flat)
    for (PetscInt b = 0; b < nb; ++b) {
      const size_t lb = (size_t)((flat / H) * nb + b); // layer flat / H, block b
      const PetscInt first = flat * shape.size + shape.block_offset(b);
      for (PetscInt e = first; e < first + shape.block_rows(b) * shape.block_cols(b); ++e) {
        const double x0 = start[(size_t)e], dx = now[(size_t)e] - x0;
        moved[lb] += dx * dx, size[lb] += x0 * x0;
      }
    }
  for (size_t i = 0; i < moved.size(); ++i) moved[i] = size[i] > 0 ? std::sqrt(moved[i] / size[i]) : NAN;
  return moved;
}

PetscErrorCode HeadsGather(Heads *h) {
  PetscFunctionBeginUser;
  PetscCall(EndAll(h->gathering)); // the replica is about to change under them
  PetscCall(VecScatterBegin(h->chunk_to_theta, h->theta, h->chunk_vec, INSERT_VALUES, SCATTER_REVERSE));
  PetscCall(VecScatterEnd(h->chunk_to_theta, h->theta, h->chunk_vec, INSERT_VALUES, SCATTER_REVERSE));
  std::copy(h->chunk.begin(), h->chunk.end(), h->local.begin() + h->chunk_begin);
  for (size_t b = 0; b < h->buckets.size(); ++b) {
    const Range e = BucketEntries(*h, b);
    PetscCall(ExchangeBegin(h->token_comm, ExchangeKind::allgather, kExchangeTags + (PetscMPIInt)b,
                            h->local.data() + e.begin, SegmentsWithin(h->chunk_counts, e.begin, e.end), nullptr,
                            &h->gathering[b]));
    if (!h->overlap) PetscCall(ExchangeEnd(&h->gathering[b]));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode HeadsReady(Heads *h, PetscInt l) {
  PetscFunctionBeginUser;
  PetscCall(ProgressAll(h->gathering));
  for (size_t b = 0; b < h->buckets.size() && h->buckets[b].begin <= l; ++b) PetscCall(ExchangeEnd(&h->gathering[b]));
  PetscFunctionReturn(0);
}

PetscErrorCode HeadsGradientStart(Heads *h) {
  PetscFunctionBeginUser;
  PetscCall(EndAll(h->reducing)); // `grad` is their scratch
  std::fill(h->grad.begin(), h->grad.end(), 0.0);
  std::fill(h->layers_done.begin(), h->layers_done.end(), 0);
  std::fill(h->summed.begin(), h->summed.end(), 0);
  PetscFunctionReturn(0);
}

PetscErrorCode HeadsGradientLayer(Heads *h, PetscInt l) {
  PetscFunctionBeginUser;
  size_t b = 0;
  while (b + 1 < h->buckets.size() && h->buckets[b].end <= l) ++b;
  PetscCheck(!h->summed[b], PETSC_COMM_SELF, PETSC_ERR_ORDER,
             "a gradient of layer %" PetscInt_FMT " came after its bucket of layers was summed", l);
  if (++h->layers_done[b] == h->buckets[b].size() && h->overlap) PetscCall(ReduceBucket(h, b));
  PetscCall(ProgressAll(h->reducing));
  PetscFunctionReturn(0);
}

PetscErrorCode HeadsReduceGradient(Heads *h, Vec dtheta) {
  PetscFunctionBeginUser;
  // Buckets not yet gone (all of them without overlap; a sweep that did not
  // reach each layer once) go now, in the reverse's order.
  for (size_t b = h->buckets.size(); b-- > 0;)
    if (!h->summed[b]) PetscCall(ReduceBucket(h, b));
  PetscCall(EndAll(h->reducing));
  PetscCall(VecScatterBegin(h->chunk_to_theta, h->chunk_vec, dtheta, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(h->chunk_to_theta, h->chunk_vec, dtheta, INSERT_VALUES, SCATTER_FORWARD));
  PetscFunctionReturn(0);
}

PetscErrorCode HeadsMaxNorm(const Heads &h, Vec theta, double *norm) {
  const PetscScalar *t;
  double local = 0;
  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(theta, &t));
  for (PetscInt n = 0; n < h.owned.size(); ++n) {
    double sum = 0;
    for (PetscInt e = 0; e < h.shape.size; ++e) sum += t[n * h.shape.size + e] * t[n * h.shape.size + e];
    local = std::fmax(local, std::sqrt(sum));
  }
  PetscCall(VecRestoreArrayRead(theta, &t));
  PetscCallMPI(MPI_Allreduce(&local, norm, 1, MPI_DOUBLE, MPI_MAX, PetscObjectComm((PetscObject)theta)));
  PetscFunctionReturn(0);
}

} // namespace mft
