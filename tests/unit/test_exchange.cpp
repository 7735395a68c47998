// The program's own collectives: reduce-scatter and allgather against MPI's,
// uneven and empty segments, and the message counts the cost model reads.
#include "helpers.hpp"
#include "mft/layout/exchange.hpp"
#include "mft/layout/tokens.hpp"

#include <algorithm>
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

// Buckets of one vector in flight together (distinct tags, progressed in
// turn, ended out of order) give the whole exchange's result bitwise: each
// entry is summed by the same ranks in the same order.
TEST(Exchange, BucketsInFlightEqualTheWholeBitwise) {
  int P, rank;
  MPI_Comm_size(PETSC_COMM_WORLD, &P);
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  std::vector<PetscInt> counts((size_t)P);
  PetscInt total = 0, begin = 0;
  for (int r = 0; r < P; ++r) counts[r] = 5 + 3 * r, total += counts[r], begin += r < rank ? counts[r] : 0;
  std::vector<double> whole((size_t)total), sum((size_t)counts[rank]);
  for (PetscInt i = 0; i < total; ++i) whole[i] = value(rank, i);
  std::vector<double> bucketed = whole, out((size_t)counts[rank], NAN);
  ASSERT_EQ(ReduceScatterSum(PETSC_COMM_WORLD, whole.data(), counts, sum.data()), 0);
  const PetscInt cut[] = {0, total / 3, total / 3 + 1, total}; // uneven, one a single entry
  std::vector<ExchangeInFlight> x(3);
  const Traffic before = traffic();
  for (int b = 0; b < 3; ++b) {
    const std::vector<PetscInt> within = SegmentsWithin(counts, cut[b], cut[b + 1]);
    const PetscInt first = std::max<PetscInt>(0, cut[b] - begin); // this rank's part of bucket b, in its segment
    ASSERT_EQ(ExchangeBegin(PETSC_COMM_WORLD, ExchangeKind::reduce_scatter, kExchangeTags + b,
                            bucketed.data() + cut[b], within,
                            out.data() + std::min<PetscInt>(first, counts[rank]), &x[(size_t)b]),
              0);
    for (ExchangeInFlight &e : x) ASSERT_EQ(ExchangeProgress(&e), 0);
  }
  for (int b : {2, 0, 1}) ASSERT_EQ(ExchangeEnd(&x[(size_t)b]), 0);
  for (PetscInt i = 0; i < counts[rank]; ++i) EXPECT_EQ(out[i], sum[i]) << "entry " << begin + i;
  EXPECT_GT(traffic().inside, before.inside); // the calls of exchanges behind the kernels are timed
  // The allgather likewise, bucket by bucket.
  std::vector<double> gathered((size_t)total, NAN);
  for (PetscInt i = begin; i < begin + counts[rank]; ++i) gathered[i] = value(rank, i);
  for (int b = 0; b < 3; ++b)
    ASSERT_EQ(ExchangeBegin(PETSC_COMM_WORLD, ExchangeKind::allgather, kExchangeTags + b, gathered.data() + cut[b],
                            SegmentsWithin(counts, cut[b], cut[b + 1]), nullptr, &x[(size_t)b]),
              0);
  for (int b : {1, 2, 0}) ASSERT_EQ(ExchangeEnd(&x[(size_t)b]), 0);
  for (int r = 0, at = 0; r < P; at += (int)counts[r], ++r)
    for (PetscInt i = at; i < at + counts[r]; ++i) EXPECT_EQ(gathered[i], value(r, i)) << "entry " << i;
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

// A step that stores what it receives never receives into the range it sends
// (MPI forbids aliased send and receive buffers; folded ranks once did).
TEST(Exchange, PlanNeverAliasesBuffers) {
  for (PetscInt P : {2, 3, 5, 6, 7, 8, 12, 13})
    for (ExchangeKind kind : {ExchangeKind::reduce_scatter, ExchangeKind::allgather})
      for (PetscInt r = 0; r < P; ++r)
        for (const ExchangeStep &s : ExchangePlan(kind, P, r, counts_for((int)P))) {
          if (s.add || s.send_end <= s.send_begin || s.recv_end <= s.recv_begin) continue;
          EXPECT_TRUE(s.send_end <= s.recv_begin || s.recv_end <= s.send_begin)
              << "P " << P << " rank " << r << " peer " << s.peer << ": sends [" << s.send_begin << ", " << s.send_end
              << ") and receives into [" << s.recv_begin << ", " << s.recv_end << ")";
        }
}

// The grid's point-to-point messages travel on a communicator of their own.
TEST(Exchange, GridCommunicatorsArePrivate) {
  Grid g;
  int P;
  MPI_Comm_size(PETSC_COMM_WORLD, &P);
  ASSERT_EQ(GridCreate(PETSC_COMM_WORLD, 1, 1, 0, &g), 0);
  int same;
  MPI_Comm_compare(g.peer_comm, PETSC_COMM_WORLD, &same);
  EXPECT_EQ(same, MPI_CONGRUENT) << "the cut rows would share the caller's communicator";
  MPI_Comm_compare(g.head_comm, PETSC_COMM_WORLD, &same);
  EXPECT_NE(same, MPI_IDENT);
  MPI_Comm_compare(g.token_comm, PETSC_COMM_WORLD, &same);
  EXPECT_NE(same, MPI_IDENT);
  ASSERT_EQ(GridDestroy(&g), 0);
}

// The nodes in rank order: here every rank shares this machine's memory, so
// one node of them all; a given count is taken as it is. With nodes of two
// ranks and one head group (two token groups a node), a node's ranks have
// their own communicator, in rank order; with one node, none.
TEST(Exchange, NodesInRankOrder) {
  int P;
  MPI_Comm_size(PETSC_COMM_WORLD, &P);
  PetscInt n = -1;
  ASSERT_EQ(NodeRanks(PETSC_COMM_WORLD, 0, &n), 0);
  EXPECT_EQ(n, P);
  ASSERT_EQ(NodeRanks(PETSC_COMM_WORLD, 3, &n), 0);
  EXPECT_EQ(n, 3);
  for (PetscInt per : {(PetscInt)P, (PetscInt)2}) {
    Grid g;
    ASSERT_EQ(GridCreate(PETSC_COMM_WORLD, 1, 1, per, &g), 0);
    if (per < P) {
      ASSERT_NE(g.node_comm, MPI_COMM_NULL);
      int rank, size;
      MPI_Comm_rank(g.node_comm, &rank);
      MPI_Comm_size(g.node_comm, &size);
      EXPECT_EQ(rank, g.rank % 2);
      EXPECT_EQ(size, std::min<int>(2, P - g.rank / 2 * 2));
    } else {
      EXPECT_EQ(g.node_comm, MPI_COMM_NULL);
    }
    ASSERT_EQ(GridDestroy(&g), 0);
  }
}

// The part of a split that holds an item (the cost model's shortcut).
TEST(Exchange, SplitPartHoldsTheItem) {
  for (PetscInt n = 1; n <= 40; ++n)
    for (PetscInt parts = 1; parts <= n + 3; ++parts)
      for (PetscInt i = 0; i < n; ++i) {
        const Range r = split(n, parts, split_part(n, parts, i));
        EXPECT_TRUE(r.begin <= i && i < r.end) << "n " << n << " parts " << parts << " item " << i;
      }
}

// The plan of the cut sequences (tokens.hpp), on every grid of up to 24 ranks
// and sequences of several lengths, against the ownership ranges themselves:
// a rank's cuts are exactly the sequences its token group holds part of; the
// group's part and its peers' parts tile the sequence, in order; every peer is
// in the same head group and lists the rank back, with the same two ranges.
TEST(Exchange, CutSequencesTileAndAreMutual) {
  for (PetscInt P = 1; P <= 24; ++P)
    for (PetscInt Ph = 1; Ph <= P; ++Ph) {
      if (P % Ph) continue;
      for (PetscInt M : {1, 2, 3, 5})
        for (PetscInt N : {1, 2, 7, 16}) {
          if (P / Ph > M * N) continue;
          const std::string where = "P " + std::to_string(P) + " Ph " + std::to_string(Ph) + " M " +
                                    std::to_string(M) + " N " + std::to_string(N);
          for (PetscInt r = 0; r < P; ++r) {
            const Range g = GroupTokens(P, Ph, M, N, r), s = GroupSequences(P, Ph, M, N, r);
            const std::vector<CutSequence> cuts = CutSequencesFor(P, Ph, M, N, r);
            size_t c = 0;
            for (PetscInt m = s.begin; m < s.end; ++m) {
              const bool whole = g.begin <= m * N && (m + 1) * N <= g.end;
              if (whole) continue;
              ASSERT_LT(c, cuts.size()) << where << " rank " << r << ": sequence " << m << " not among the cuts";
              const CutSequence &cs = cuts[c++];
              ASSERT_EQ(cs.m, m) << where;
              EXPECT_EQ(cs.mine.begin, std::max(g.begin, m * N)) << where;
              EXPECT_EQ(cs.mine.end, std::min(g.end, (m + 1) * N)) << where;
              // The parts in token order: peers before, mine, peers after; no gap, no overlap.
              std::vector<Range> parts;
              for (const TokenPiece &p : cs.peers) parts.push_back({p.begin, p.end});
              parts.push_back(cs.mine);
              std::sort(parts.begin(), parts.end(), [](Range a, Range b) { return a.begin < b.begin; });
              PetscInt next = m * N;
              for (const Range &p : parts) {
                EXPECT_EQ(p.begin, next) << where << " rank " << r << " sequence " << m;
                EXPECT_GT(p.size(), 0) << where;
                next = p.end;
              }
              EXPECT_EQ(next, (m + 1) * N) << where << " rank " << r << " sequence " << m;
              for (const TokenPiece &p : cs.peers) {
                EXPECT_EQ(p.peer % Ph, r % Ph) << where << ": a peer in another head group";
                const Range pg = GroupTokens(P, Ph, M, N, p.peer);
                EXPECT_EQ(p.begin, std::max(pg.begin, m * N)) << where;
                EXPECT_EQ(p.end, std::min(pg.end, (m + 1) * N)) << where;
                int back = 0;
                for (const CutSequence &o : CutSequencesFor(P, Ph, M, N, p.peer))
                  for (const TokenPiece &q : o.peers)
                    back += o.m == m && q.peer == r && q.begin == cs.mine.begin && q.end == cs.mine.end;
                EXPECT_EQ(back, 1) << where << ": rank " << p.peer << " does not list rank " << r << " back";
              }
            }
            EXPECT_EQ(c, cuts.size()) << where << " rank " << r << ": cuts of sequences held whole";
          }
        }
    }
}
