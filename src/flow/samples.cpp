// Samples of a model's law: a block of initialisations per rank, each on a
// one-rank problem, gathered at the end.
#include "mft/flow/samples.hpp"

#include "mft/flow/problem.hpp"
#include "mft/files/report.hpp"

#include <climits>
#include <cmath>

namespace mft {

namespace {

// The block's samples, one after the other on p: x(1) of each into out.
PetscErrorCode RunBlock(Problem *p, const Settings &s, Range block, std::uint64_t first, double *out) {
  const PetscInt n = p->tokens.M * p->tokens.N * p->tokens.d;
  PetscFunctionBeginUser;
  for (PetscInt k = block.begin; k < block.end; ++k) {
    PetscCall(HeadsInitialize(&p->heads, s.init, s.init.seed + first + (std::uint64_t)k, p->heads.theta));
    PetscCall(ProblemSetHeads(p));
    PetscCall(VecCopy(p->x0, p->x1));
    PetscCall(FlowForward(&p->flow, p->x1));
    const PetscScalar *x;
    PetscCall(VecGetArrayRead(p->x1, &x));
    std::copy(x, x + n, out + (k - block.begin) * n);
    PetscCall(VecRestoreArrayRead(p->x1, &x));
  }
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode SamplesForward(MPI_Comm comm, const Settings &s, PetscInt S, Samples *r, std::uint64_t first) {
  PetscMPIInt size, rank;
  Problem p;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  const double entries = (double)S * (double)s.data.M * (double)s.data.N * (double)s.model.d;
  PetscCheck(entries <= (double)INT_MAX, comm, PETSC_ERR_USER_INPUT,
             "%" PetscInt_FMT " samples of %" PetscInt_FMT " x %" PetscInt_FMT " tokens in R^%" PetscInt_FMT
             " are %.3g numbers, more than one gather can hold (%d): take fewer samples or probe tokens",
             S, s.data.M, s.data.N, s.model.d, entries, INT_MAX);
  Settings one = s; // a sample is a whole model on one rank
  one.scheme.zero_targets = true;
  one.parallel.head_groups = 0;
  one.output.trajectory = 0;
  PetscCall(ProblemCreate(PETSC_COMM_SELF, one, &p));
  r->S = S, r->M = p.tokens.M, r->N = p.tokens.N, r->d = p.tokens.d;
  const PetscInt n = r->M * r->N * r->d;
  PetscCall(GatherAll(p.x0, &r->inputs));
  const Range block = split(S, size, rank);
  std::vector<double> mine((size_t)(block.size() * n));
  const double t0 = seconds();
  PetscCall(RunBlock(&p, one, block, first, mine.data()));
  double elapsed = seconds() - t0;
  PetscCall(ProblemDestroy(&p));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, comm));
  r->seconds = elapsed;
  std::vector<int> counts((size_t)size), offsets((size_t)size);
  for (PetscMPIInt q = 0; q < size; ++q) {
    const Range b = split(S, size, q);
    counts[q] = (int)(b.size() * n), offsets[q] = (int)(b.begin * n);
  }
  r->tokens.assign((size_t)(S * n), 0.0);
  PetscCallMPI(MPI_Allgatherv(mine.data(), counts[rank], MPI_DOUBLE, r->tokens.data(), counts.data(), offsets.data(),
                              MPI_DOUBLE, comm));
  SamplesGram(r);
  PetscFunctionReturn(0);
}

void SamplesGram(Samples *r) {
  const PetscInt M = r->M, N = r->N, d = r->d, S = r->S;
  const size_t G = (size_t)(M * N * N);
  std::vector<double> gram(G);
  auto sample_gram = [&](PetscInt k) { // G of sample k, every probe sequence
    for (PetscInt m = 0; m < M; ++m) {
      const double *x = r->tokens.data() + ((size_t)k * M + m) * N * d;
      for (PetscInt i = 0; i < N; ++i)
        for (PetscInt j = 0; j < N; ++j) {
          double g = 0;
          for (PetscInt c = 0; c < d; ++c) g += x[i * d + c] * x[j * d + c];
          gram[(m * N + i) * N + j] = g;
        }
    }
  };
  // Two passes (the mean, then the spread about it): no cancellation where
  // the spread is small against the mean.
  r->gram_mean.assign(G, 0.0);
  r->gram_stderr.assign(G, 0.0);
  for (PetscInt k = 0; k < S; ++k) {
    sample_gram(k);
    for (size_t e = 0; e < G; ++e) r->gram_mean[e] += gram[e];
  }
  for (double &e : r->gram_mean) e /= (double)S;
  for (PetscInt k = 0; S > 1 && k < S; ++k) {
    sample_gram(k);
    for (size_t e = 0; e < G; ++e) r->gram_stderr[e] += (gram[e] - r->gram_mean[e]) * (gram[e] - r->gram_mean[e]);
  }
  for (double &e : r->gram_stderr) e = S > 1 ? std::sqrt(e / (double)(S - 1) / (double)S) : 0.0;
}

} // namespace mft
