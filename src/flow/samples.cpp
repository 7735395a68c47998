// Samples of a model's law: a block of initialisations per rank, each on a
// one-rank problem; statistics reduced over the ranks.
#include "mft/flow/samples.hpp"

#include "mft/flow/problem.hpp"
#include "mft/layout/events.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

namespace mft {

namespace {

// x(1) of p at its current heads into out.
PetscErrorCode RunOne(Problem *p, double *out) {
  const PetscInt n = p->tokens.M * p->tokens.N * p->tokens.d;
  const PetscScalar *x;
  PetscFunctionBeginUser;
  PetscCall(ProblemSetHeads(p));
  PetscCall(VecCopy(p->x0, p->x1));
  PetscCall(FlowForward(&p->flow, p->x1));
  PetscCall(VecGetArrayRead(p->x1, &x));
  std::copy(x, x + n, out);
  PetscCall(VecRestoreArrayRead(p->x1, &x));
  PetscFunctionReturn(0);
}

// The one-rank problem of a sample of the model of s.
PetscErrorCode SampleProblem(const Settings &s, Settings *one, Problem *p) {
  PetscFunctionBeginUser;
  *one = s; // a sample is a whole model on one rank
  one->scheme.zero_targets = true;
  one->parallel.head_groups = 0;
  one->output.trajectory = 0;
  PetscCall(ProblemCreate(PETSC_COMM_SELF, *one, p));
  PetscFunctionReturn(0);
}

// Sample k's neurons for the fine model f, and the coarse model c's made of
// them as its heads are (CoarseHeads' map of neurons).
PetscErrorCode CoupleNeurons(const Settings &one_f, PetscInt k, const std::vector<PetscInt> &map, Problem *f, Problem *c) {
  const PetscScalar *from;
  PetscScalar *to;
  const size_t entries = (size_t)f->neurons.size();
  PetscFunctionBeginUser;
  PetscCall(NeuronsInitialize(f->neurons, one_f.init, one_f.init.seed + (std::uint64_t)k, f->neurons.theta));
  PetscCall(VecGetArrayRead(f->neurons.theta, &from));
  PetscCall(VecGetArray(c->neurons.theta, &to));
  for (size_t j = 0; j < map.size(); ++j) std::copy(from + map[j] * entries, from + (map[j] + 1) * entries, to + j * entries);
  PetscCall(VecRestoreArray(c->neurons.theta, &to));
  PetscCall(VecRestoreArrayRead(f->neurons.theta, &from));
  PetscFunctionReturn(0);
}

// r's sizes and its block on this rank; the inputs of p.
PetscErrorCode SamplesStart(MPI_Comm comm, const Settings &s, PetscInt S, Problem *p, Samples *r) {
  PetscMPIInt size, rank;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  const double entries = (double)S * (double)s.data.M * (double)s.data.N * (double)s.model.d / size;
  PetscCheck(entries <= (double)INT_MAX, comm, PETSC_ERR_USER_INPUT,
             "%" PetscInt_FMT " samples of %" PetscInt_FMT " x %" PetscInt_FMT " tokens in R^%" PetscInt_FMT
             " are %.3g numbers a rank, more than one block can hold (%d): take more ranks, fewer samples or fewer "
             "probe tokens",
             S, s.data.M, s.data.N, s.model.d, entries, INT_MAX);
  r->S = S, r->M = p->tokens.M, r->N = p->tokens.N, r->d = p->tokens.d;
  r->block = split(S, size, rank);
  PetscCall(GatherAll(p->x0, &r->inputs));
  r->tokens.assign((size_t)(r->block.size() * r->M * r->N * r->d), 0.0);
  PetscFunctionReturn(0);
}

// The slowest rank's seconds since t0, into each of rs.
PetscErrorCode SamplesTimed(MPI_Comm comm, double t0, std::initializer_list<Samples *> rs) {
  double elapsed = seconds() - t0;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, comm));
  for (Samples *r : rs) r->seconds = elapsed;
  PetscFunctionReturn(0);
}

} // namespace

namespace {

// The interaction energy and the mean log-distance of the tokens at each
// slice of t (a one-rank problem's), each the mean over the sequences, into
// energy and log_distance (t.S + 1 each; the latter NaN for N = 1).
PetscErrorCode SliceEnergies(const Trajectory &t, double *energy, double *log_distance) {
  const PetscInt N = t.N, d = t.d;
  PetscFunctionBeginUser;
  for (PetscInt k = 0; k <= t.S; ++k) {
    const PetscScalar *x;
    double sum = 0, logs = 0;
    PetscCall(VecGetArrayRead(t.tokens[k], &x));
    for (PetscInt m = 0; m < t.M; ++m) {
      const double *seq = x + m * N * d;
      for (PetscInt c = 0; c < d; ++c) {
        double mean = 0, spread = 0;
        for (PetscInt i = 0; i < N; ++i) mean += seq[i * d + c] / (double)N;
        for (PetscInt i = 0; i < N; ++i) spread += (seq[i * d + c] - mean) * (seq[i * d + c] - mean);
        sum += 2 * spread / (double)N;
      }
      for (PetscInt i = 0; i < N; ++i)
        for (PetscInt j = i + 1; j < N; ++j) {
          double r2 = 0;
          for (PetscInt c = 0; c < d; ++c) r2 += (seq[i * d + c] - seq[j * d + c]) * (seq[i * d + c] - seq[j * d + c]);
          logs += 0.5 * std::log(r2);
        }
    }
    PetscCall(VecRestoreArrayRead(t.tokens[k], &x));
    energy[k] = sum / (double)t.M;
    log_distance[k] = N > 1 ? logs / ((double)t.M * (double)(N * (N - 1) / 2)) : NAN;
  }
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode SamplesForward(MPI_Comm comm, const Settings &s, PetscInt S, Samples *r, std::uint64_t first) {
  Settings one;
  Problem p;
  Trajectory t;
  PetscFunctionBeginUser;
  PetscCall(SampleProblem(s, &one, &p));
  PetscCall(SamplesStart(comm, one, S, &p, r));
  r->depths = s.output.trajectory > 0 ? s.output.trajectory + 1 : 0;
  if (r->depths) {
    PetscCall(TrajectoryCreate(p.tokens.state, r->M, r->N, r->d, s.output.trajectory, &t));
    PetscCall(FlowRecord(&p.flow, &t));
    r->energy.assign((size_t)(r->block.size() * r->depths), 0.0);
    r->log_distance.assign(r->energy.size(), 0.0);
  }
  const size_t n = (size_t)(r->M * r->N * r->d);
  const double t0 = seconds();
  for (PetscInt k = r->block.begin; k < r->block.end; ++k) {
    PetscCall(ProblemDraw(&p, one.init, one.init.seed + first + (std::uint64_t)k));
    PetscCall(RunOne(&p, r->tokens.data() + (size_t)(k - r->block.begin) * n));
    const size_t at = (size_t)((k - r->block.begin) * r->depths);
    if (r->depths) PetscCall(SliceEnergies(t, r->energy.data() + at, r->log_distance.data() + at));
  }
  PetscCall(ProblemDestroy(&p));
  if (r->depths) PetscCall(TrajectoryDestroy(&t));
  PetscCall(SamplesTimed(comm, t0, {r}));
  PetscCall(SamplesGram(comm, r));
  PetscFunctionReturn(0);
}

std::vector<PetscInt> CoarseHeads(PetscInt L_f, PetscInt H_f, PetscInt L_c, PetscInt H_c) {
  std::vector<PetscInt> map;
  if (L_f != 2 * L_c || !(H_c == 2 * H_f || (H_c == H_f && H_c % 2 == 0))) return map;
  for (PetscInt j = 0; j < L_c; ++j)
    for (PetscInt a = 0; a < H_c; ++a) {
      const PetscInt layer = 2 * j + (a >= H_c / 2 ? 1 : 0);
      map.push_back(layer * H_f + (H_c == H_f ? a : a % H_f));
    }
  return map;
}

PetscErrorCode SamplesForwardPair(MPI_Comm comm, const Settings &fine_settings, const Settings &coarse_settings,
                                  PetscInt S, Samples *fine, Samples *coarse, std::uint64_t first) {
  Settings one_f, one_c;
  Problem f, c;
  PetscFunctionBeginUser;
  const std::vector<PetscInt> map = CoarseHeads(fine_settings.model.L, fine_settings.model.H,
                                                coarse_settings.model.L, coarse_settings.model.H);
  PetscCheck(!map.empty(), comm, PETSC_ERR_ARG_INCOMP,
             "no coupling of a %" PetscInt_FMT " x %" PetscInt_FMT " model to a %" PetscInt_FMT " x %" PetscInt_FMT
             " one: the coarse model halves L and keeps H (even) or doubles it",
             fine_settings.model.L, fine_settings.model.H, coarse_settings.model.L, coarse_settings.model.H);
  PetscCall(SampleProblem(fine_settings, &one_f, &f));
  PetscCall(SampleProblem(coarse_settings, &one_c, &c));
  PetscCheck(f.heads.shape.size == c.heads.shape.size, comm, PETSC_ERR_ARG_INCOMP,
             "a coupled pair shares its heads: both models need one head shape");
  PetscCall(SamplesStart(comm, one_f, S, &f, fine));
  PetscCall(SamplesStart(comm, one_c, S, &c, coarse));
  const std::vector<PetscInt> neurons = CoarseHeads(fine_settings.model.L, fine_settings.model.mlp_width,
                                                    coarse_settings.model.L, coarse_settings.model.mlp_width);
  PetscCheck(!fine_settings.model.mlp() || !neurons.empty(), comm, PETSC_ERR_ARG_INCOMP,
             "no coupling of %" PetscInt_FMT " neurons a layer to %" PetscInt_FMT, fine_settings.model.mlp_width,
             coarse_settings.model.mlp_width);
  const size_t n = (size_t)(fine->M * fine->N * fine->d), entries = (size_t)f.heads.shape.size;
  const double t0 = seconds();
  for (PetscInt k = fine->block.begin; k < fine->block.end; ++k) {
    PetscCall(HeadsInitialize(&f.heads, one_f.init, one_f.init.seed + first + (std::uint64_t)k, f.heads.theta));
    const PetscScalar *from;
    PetscScalar *to;
    PetscCall(VecGetArrayRead(f.heads.theta, &from));
    PetscCall(VecGetArray(c.heads.theta, &to));
    for (size_t h = 0; h < map.size(); ++h) std::copy(from + map[h] * entries, from + (map[h] + 1) * entries, to + h * entries);
    PetscCall(VecRestoreArray(c.heads.theta, &to));
    PetscCall(VecRestoreArrayRead(f.heads.theta, &from));
    if (one_f.model.mlp()) PetscCall(CoupleNeurons(one_f, k + (PetscInt)first, neurons, &f, &c));
    PetscCall(RunOne(&f, fine->tokens.data() + (size_t)(k - fine->block.begin) * n));
    PetscCall(RunOne(&c, coarse->tokens.data() + (size_t)(k - coarse->block.begin) * n));
  }
  PetscCall(ProblemDestroy(&f));
  PetscCall(ProblemDestroy(&c));
  PetscCall(SamplesTimed(comm, t0, {fine, coarse}));
  PetscCall(SamplesGram(comm, fine));
  PetscCall(SamplesGram(comm, coarse));
  PetscFunctionReturn(0);
}

SampleSet SamplesSet(const Samples &r, double weight) { return BlockSet(SamplesBlock(r), weight); }

SampleBlock SamplesBlock(const Samples &r) { return {r.tokens.data(), r.S, r.block.size(), r.M, r.N, r.d}; }

std::vector<SampleBlock> SamplesBlocks(const std::vector<Samples> &rs) {
  std::vector<SampleBlock> blocks;
  for (const Samples &r : rs) blocks.push_back(SamplesBlock(r));
  return blocks;
}

PetscErrorCode SamplesGram(MPI_Comm comm, Samples *r) {
  PetscFunctionBeginUser;
  PetscCall(GramOf(comm, {SamplesSet(*r)}, r->M, r->N, r->d, &r->gram_mean, &r->gram_stderr));
  PetscFunctionReturn(0);
}

std::vector<double> SamplesMoved(const Samples &r) {
  const size_t n = (size_t)(r.M * r.N * r.d), tokens = (size_t)(r.M * r.N);
  std::vector<double> moved;
  for (PetscInt s = 0; s < r.block.size(); ++s) {
    double sum = 0;
    for (size_t e = 0; e < n; ++e) sum += std::pow(r.tokens[(size_t)s * n + e] - r.inputs[e], 2);
    moved.push_back(sum / (double)tokens);
  }
  return moved;
}

double SamplesMovedAtUniformAttention(const Settings &s, const Samples &r) {
  const ModelSettings &m = s.model;
  if (m.beta != 0 || m.head_kind != HeadKind::qkv || m.norm != TokenNorm::none || m.causal) return NAN;
  double xbar2 = 0; // |xbar(0)|^2, mean over the probe sequences
  for (PetscInt q = 0; q < r.M; ++q)
    for (PetscInt c = 0; c < r.d; ++c) {
      double mean = 0;
      for (PetscInt i = 0; i < r.N; ++i) mean += r.inputs[(size_t)((q * r.N + i) * r.d + c)] / (double)r.N;
      xbar2 += mean * mean / (double)r.M;
    }
  const double L = (double)m.L, H = (double)m.H, a = m.depth_exponent, c = m.head_exponent;
  const double mu = s.init.v_mean, sigma = s.init.v_gain;
  const double step = 1 + mu * std::pow(L, -a) * std::pow(H, 1 - c),
               rho = step * step + sigma * sigma * std::pow(L, -2 * a) * std::pow(H, 1 - 2 * c);
  return xbar2 * (std::pow(rho, L) - 2 * std::pow(step, L) + 1);
}

PetscErrorCode SamplesGather(MPI_Comm comm, const Samples &r, PetscInt count, std::vector<double> *out) {
  PetscMPIInt size, rank;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  count = std::min(count, r.S);
  const PetscInt n = r.M * r.N * r.d;
  PetscCheck((double)count * (double)n <= (double)INT_MAX, comm, PETSC_ERR_USER_INPUT,
             "%" PetscInt_FMT " samples of %" PetscInt_FMT " numbers are more than one gather can hold", count, n);
  // Each rank's rows in rank order (the blocks of split(S), or fewer where
  // a rank kept some of its rows only: an ensemble's survivors).
  std::vector<int> counts((size_t)size), offsets((size_t)size);
  PetscInt rows = r.block.size();
  std::vector<PetscInt> all((size_t)size);
  PetscCallMPI(MPI_Allgather(&rows, 1, MPIU_INT, all.data(), 1, MPIU_INT, comm));
  for (PetscMPIInt q = 0, begin = 0; q < size; begin += (PetscMPIInt)all[(size_t)q], ++q) {
    const PetscInt end = std::min<PetscInt>(begin + all[(size_t)q], count), first = std::min<PetscInt>(begin, count);
    counts[q] = (int)((end - first) * n), offsets[q] = (int)(first * n);
  }
  out->assign((size_t)(count * n), 0.0);
  PetscCallMPI(MPI_Allgatherv(r.tokens.data(), counts[rank], MPI_DOUBLE, out->data(), counts.data(), offsets.data(),
                              MPI_DOUBLE, comm));
  PetscFunctionReturn(0);
}

} // namespace mft
