// The program's own collectives: reduce-scatter and allgather against MPI's,
// uneven and empty segments, and the message counts the cost model reads.
#include "helpers.hpp"
#include "mft/exchange.hpp"

#include <cmath>

using namespace mft;

namespace {

// Segment sizes with an empty one and uneven ones, for every rank count.
std::vector<PetscInt> counts_for(int P) {
  std::vector<PetscInt> c((size_t)P);
  for (int r = 0; r < P; ++r) c[r] = (r * 7 + 3) % 5; // 3, 0, 2, 4, 1, ...
  return c;
}

double value(int rank, PetscInt i) { return std::sin(1.0 + rank * 0.37 + i * 1.13); }

} // namespace

TEST(Exchange, ReduceScatterEqualsAllreduce) {
  int P, rank;
  MPI_Comm_size(PETSC_COMM_WORLD, &P);
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  const std::vector<PetscInt> counts = counts_for(P);
  PetscInt total = 0, begin = 0;
  for (int r = 0; r < P; ++r) total += counts[r], begin += r < rank ? counts[r] : 0;
  std::vector<double> data((size_t)total), sum((size_t)total), out((size_t)counts[rank]);
  for (PetscInt i = 0; i < total; ++i) data[i] = value(rank, i);
  MPI_Allreduce(data.data(), sum.data(), (int)total, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD);
  const Traffic before = traffic();
  ASSERT_EQ(ReduceScatterSum(PETSC_COMM_WORLD, data.data(), counts, out.data()), 0);
  for (PetscInt i = 0; i < counts[rank]; ++i) EXPECT_NEAR(out[i], sum[begin + i], 1e-14) << "entry " << begin + i;
  // The counters saw what the plan says, and no more than ceil(log2 P) + 1 messages.
  long long planned = 0, bytes = 0;
  for (const ExchangeStep &s : ExchangePlan(ExchangeKind::reduce_scatter, P, rank, counts))
    if (s.send_end > s.send_begin) ++planned, bytes += 8 * (s.send_end - s.send_begin);
  EXPECT_EQ(traffic().messages - before.messages, planned);
  EXPECT_EQ(traffic().bytes - before.bytes, bytes);
  EXPECT_LE(planned, (long long)std::ceil(std::log2((double)P)) + 1);
}

TEST(Exchange, AllgatherCompletesEverySegment) {
  int P, rank;
  MPI_Comm_size(PETSC_COMM_WORLD, &P);
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  const std::vector<PetscInt> counts = counts_for(P);
  std::vector<double> data, expect;
  for (int r = 0; r < P; ++r)
    for (PetscInt i = 0; i < counts[r]; ++i) {
      expect.push_back(value(r, i));
      data.push_back(r == rank ? value(r, i) : NAN); // only the own segment is known
    }
  ASSERT_EQ(AllgatherSegments(PETSC_COMM_WORLD, data.data(), counts), 0);
  ASSERT_EQ(data.size(), expect.size());
  for (size_t i = 0; i < data.size(); ++i) EXPECT_EQ(data[i], expect[i]) << "entry " << i; // copies: bitwise
}

TEST(Exchange, PlanIsSymmetric) {
  // What rank r sends to q in its plan is what q receives from r in its own,
  // for rank counts with and without folding.
  for (PetscInt P : {2, 3, 5, 6, 7, 8, 12, 13}) {
    const std::vector<PetscInt> counts = counts_for((int)P);
    for (ExchangeKind kind : {ExchangeKind::reduce_scatter, ExchangeKind::allgather}) {
      std::vector<std::vector<PetscInt>> sent((size_t)P, std::vector<PetscInt>((size_t)P, 0)), received = sent;
      for (PetscInt r = 0; r < P; ++r)
        for (const ExchangeStep &s : ExchangePlan(kind, P, r, counts)) {
          ASSERT_TRUE(s.peer >= 0 && s.peer < P && s.peer != r);
          sent[r][s.peer] += s.send_end - s.send_begin;
          received[r][s.peer] += s.recv_end - s.recv_begin; // r receives from peer
        }
      for (PetscInt r = 0; r < P; ++r)
        for (PetscInt q = 0; q < P; ++q) EXPECT_EQ(sent[r][q], received[q][r]) << "P " << P << ": " << r << " -> " << q;
    }
  }
}
