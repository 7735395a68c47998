// The fast attention kernels (blocked, small-product kernels or BLAS,
// vectorised exp) against the plain kernels, forward and reverse,
// on query ranges that cross block boundaries, with and without the causal
// mask, with each block's keys at once and in tiles (the online softmax:
// tiles of 40 and 13 keys, so that rows meet tiles wholly masked, partly
// masked and a larger maximum after a smaller one; with at most 100 keys at
// once, so that some blocks of a range take tiles and others not); the
// kernels' exponential against the C library's. Run with
// MFT_NO_LIBXSMM=1 too (ctest unit_blas): every product through the BLAS.
#include "helpers.hpp"
#include "mft/kernels/attention.hpp"
#include "mft/kernels/linalg.hpp"
#include "mft/kernels/softmax.hpp"
#include "mft/layout/random.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

using namespace mft;
using namespace mft::test;

namespace {

struct Case {
  HeadKind kind;
  bool causal;
};
class Kernels : public ::testing::TestWithParam<Case> {};

// A head, tokens and an adjoint drawn from stream `seed`.
struct Inputs {
  HeadShape s;
  AttentionOptions o;
  std::vector<double> theta, x, lam;
  Inputs(const Case &c, PetscInt d, PetscInt k, PetscInt N, std::uint64_t seed)
      : s(head_shape(c.kind, d, k)), theta(s.size), x(N * d), lam(N * d) {
    o.beta = 0.9, o.causal = c.causal;
    Stream r(42, seed);
    for (auto &t : theta) t = r.normal() / std::sqrt((double)d);
    for (auto &v : x) v = 1.5 * r.normal();
    for (auto &v : lam) v = r.normal();
  }
};

// The blocked kernels (wf, set up by the caller) against the plain ones at
// queries q of N tokens x: the forward to 1e-13, the reverse to 1e-12, both
// adding to what their outputs held. The reverse finds its keys' gradients
// NaN: it sets them as its blocks reach them, so what they held must not
// matter.
void expect_blocked_equals_plain(const HeadShape &s, const AttentionOptions &o, const std::vector<double> &theta,
                                 const std::vector<double> &x, const std::vector<double> &lam, PetscInt N, Range q,
                                 double scale, AttentionWork &wf, const std::string &what) {
  const PetscInt d = s.d;
  AttentionWork wr;
  wr.reserve(s, N);
  std::vector<double> of(q.size() * d, 0.1), orf(q.size() * d, 0.1);
  attention(s, theta.data(), o, x.data(), N, q, scale, of.data(), wf);
  attention_plain(s, theta.data(), o, x.data(), N, q, scale, orf.data(), wr);
  EXPECT_LT(relative_error(of, orf), 1e-13) << what;
  std::vector<double> dxf(N * d, 0.2), dxr(N * d, 0.2), dtf(s.size, 0.3), dtr(s.size, 0.3);
  std::fill(wf.dkappa.begin(), wf.dkappa.end(), NAN), std::fill(wf.dw.begin(), wf.dw.end(), NAN);
  attention_reverse(s, theta.data(), o, x.data(), N, q, scale, lam.data() + q.begin * d, dxf.data(), dtf.data(), wf);
  attention_plain_reverse(s, theta.data(), o, x.data(), N, q, scale, lam.data() + q.begin * d, dxr.data(), dtr.data(),
                          wr);
  EXPECT_LT(relative_error(dxf, dxr), 1e-12) << what;
  EXPECT_LT(relative_error(dtf, dtr), 1e-12) << what;
}

// At beta = 0.9 a row's shift comes from the bound on its scores (beta |q|
// max |kappa| ~ 10 here); at 40 from its maximum (the bound ~ 400), with
// scores more than 708 / beta below it (the clamp).
TEST_P(Kernels, FastEqualsPlain) {
  const PetscInt N = 150; // 150 queries: blocks of 128 and 22
  Inputs in(GetParam(), 5, 3, N, 99);
  const AttentionWork defaults;
  for (double beta : {0.9, 40.0})
    for (auto [at_once, tile] : {std::pair{defaults.keys_at_once, defaults.key_tile}, {(PetscInt)40, (PetscInt)40},
         {(PetscInt)100, (PetscInt)13}})
      for (Range q : {Range{0, N}, Range{37, 140}, Range{64, 65}}) {
        AttentionWork wf;
        wf.keys_at_once = at_once, wf.key_tile = tile;
        wf.reserve(in.s, N);
        in.o.beta = beta;
        expect_blocked_equals_plain(in.s, in.o, in.theta, in.x, in.lam, N, q, 0.7, wf,
                                    "beta " + std::to_string(beta) + " from " + std::to_string(q.begin) + " tile " +
                                        std::to_string(tile));
      }
}

// Many keys at once: blocks of fewer queries (AttentionWork::rows: 64 at 600
// keys, 32 at 1100), so that a block's scores stay in L2; the same results.
TEST_P(Kernels, SmallerBlocksForManyKeysEqualPlain) {
  for (PetscInt N : {(PetscInt)600, (PetscInt)1100}) {
    Inputs in(GetParam(), 5, 3, N, 98);
    AttentionWork wf;
    EXPECT_EQ(wf.rows(N), N == 600 ? AttentionWork::block / 2 : AttentionWork::block / 4);
    wf.reserve(in.s, N);
    expect_blocked_equals_plain(in.s, in.o, in.theta, in.x, in.lam, N, Range{37, N - 5}, 0.7, wf, std::to_string(N));
  }
}

// A sequence cut into three token groups, as a cut sequence is computed across
// ranks: each part projects its own keys (attention_project), every part's
// queries attend to all the projections (attention_projected and its
// reverse), the keys' gradients of all parts are summed and taken through
// each part's own projections (attention_project_reverse). The result must
// be the plain kernels' on the whole sequence.
TEST_P(Kernels, SplitAtTheProjectionsEqualsPlain) {
  const PetscInt d = 5, k = 3, N = 150;
  Inputs in(GetParam(), d, k, N, 98);
  const HeadShape &s = in.s;
  const AttentionOptions &o = in.o;
  const std::vector<double> &theta = in.theta, &x = in.x, &lam = in.lam;
  const PetscInt ld = 2 * (s.k + s.dv), off = s.k + s.dv; // two heads' rows side by side; this head second
  const Range parts[] = {{0, 37}, {37, 140}, {140, N}};
  for (PetscInt tile : {AttentionWork().key_tile, (PetscInt)13}) {
    AttentionWork w, wr;
    w.keys_at_once = std::min(w.keys_at_once, tile), w.key_tile = tile;
    w.reserve(s, N), wr.reserve(s, N);
    std::vector<double> kw(N * ld, 0.0), dkw(N * ld, 0.0);
    for (Range p : parts)
      attention_project(s, theta.data(), x.data() + p.begin * d, p.size(), kw.data() + p.begin * ld + off, ld, w);
    std::vector<double> out(N * d, 0.1), ref(N * d, 0.1), dx(N * d, 0.2), dxr(N * d, 0.2), dt(s.size, 0.3),
        dtr(s.size, 0.3);
    for (Range p : parts) {
      attention_projected(s, theta.data(), o, x.data() + p.begin * d, kw.data() + off, ld, N, p, 0.7,
                          out.data() + p.begin * d, w);
      attention_projected_reverse(s, theta.data(), o, x.data() + p.begin * d, kw.data() + off, ld, N, p, 0.7,
                                  lam.data() + p.begin * d, dx.data() + p.begin * d, dkw.data() + off, dt.data(), w);
    }
    for (Range p : parts)
      attention_project_reverse(s, theta.data(), x.data() + p.begin * d, p.size(), dkw.data() + p.begin * ld + off, ld,
                                dx.data() + p.begin * d, dt.data());
    attention_plain(s, theta.data(), o, x.data(), N, {0, N}, 0.7, ref.data(), wr);
    attention_plain_reverse(s, theta.data(), o, x.data(), N, {0, N}, 0.7, lam.data(), dxr.data(), dtr.data(), wr);
    EXPECT_LT(relative_error(out, ref), 1e-13);
    EXPECT_LT(relative_error(dx, dxr), 1e-12);
    EXPECT_LT(relative_error(dt, dtr), 1e-12);
    for (PetscInt j = 0; j < N; ++j) // the other head's rows are left alone
      for (PetscInt c = 0; c < off; ++c) {
        ASSERT_EQ(kw[j * ld + c], 0.0);
        ASSERT_EQ(dkw[j * ld + c], 0.0);
      }
  }
}

// Query chunks against keys projected once (threads over a sequence's
// queries): the keys projected into a store in three key chunks (for the
// forward without w^T, left NaN, then with it for the reverse), each of
// three query chunks run against the store, its key gradients set in its
// own arrays (rows it does not reach left alone), the chunks' sums taken
// through the projection in key chunks. The result must be the plain
// kernels' on the whole sequence.
TEST_P(Kernels, QueryChunksAgainstOneKeyStoreEqualPlain) {
  const PetscInt d = 5, k = 3, N = 150;
  Inputs in(GetParam(), d, k, N, 97);
  const HeadShape &s = in.s;
  const AttentionOptions &o = in.o;
  const std::vector<double> &theta = in.theta, &x = in.x, &lam = in.lam;
  const Range chunks[] = {{0, 37}, {37, 140}, {140, N}};
  for (PetscInt tile : {AttentionWork().key_tile, (PetscInt)13}) {
    AttentionWork w, wr;
    w.keys_at_once = std::min(w.keys_at_once, tile), w.key_tile = tile;
    w.reserve(s, N), wr.reserve(s, N);
    // The forward's store leaves w^T unset (NaN here): the forward must not read it.
    std::vector<double> store((size_t)attention_keys_size(s, N), NAN);
    for (Range r : chunks) attention_project_keys(s, theta.data(), x.data(), r, N, false, store.data(), w);
    std::vector<double> out(N * d, 0.1), ref(N * d, 0.1), dx(N * d, 0.2), dxr(N * d, 0.2), dt(s.size, 0.3),
        dtr(s.size, 0.3), dkappa(N * s.k, 0.0), dw(N * s.dv, 0.0);
    for (Range q : chunks)
      attention_on_keys(s, theta.data(), o, x.data() + q.begin * d, store.data(), N, N, q, 0.7,
                        out.data() + q.begin * d, w);
    for (Range r : chunks) attention_project_keys(s, theta.data(), x.data(), r, N, true, store.data(), w);
    for (Range q : chunks) {
      std::vector<double> dk(N * s.k, 7.0), dv(N * s.dv, 7.0); // 7: rows past the chunk's keys stay so
      attention_on_keys_reverse(s, theta.data(), o, x.data() + q.begin * d, store.data(), N, N, q, 0.7,
                                lam.data() + q.begin * d, dx.data() + q.begin * d, dk.data(), dv.data(), dt.data(), w);
      const PetscInt reach = o.causal ? q.end : N;
      PetscInt untouched = 0; // entries past the keys the chunk reaches, still 7
      for (PetscInt e = 0; e < N * s.k; ++e) e < reach * s.k ? dkappa[e] += dk[e] : untouched += dk[e] == 7.0;
      for (PetscInt e = 0; e < N * s.dv; ++e) e < reach * s.dv ? dw[e] += dv[e] : untouched += dv[e] == 7.0;
      EXPECT_EQ(untouched, (N - reach) * (s.k + s.dv)) << "chunk " << q.begin;
    }
    for (Range r : chunks)
      attention_project_keys_reverse(s, theta.data(), x.data() + r.begin * d, r.size(), dkappa.data() + r.begin * s.k,
                                     dw.data() + r.begin * s.dv, dx.data() + r.begin * d, dt.data());
    attention_plain(s, theta.data(), o, x.data(), N, {0, N}, 0.7, ref.data(), wr);
    attention_plain_reverse(s, theta.data(), o, x.data(), N, {0, N}, 0.7, lam.data(), dxr.data(), dtr.data(), wr);
    EXPECT_LT(relative_error(out, ref), 1e-13) << "tile " << tile;
    EXPECT_LT(relative_error(dx, dxr), 1e-12) << "tile " << tile;
    EXPECT_LT(relative_error(dt, dtr), 1e-12) << "tile " << tile;
  }
}

// The forward's statistics of tiled blocks (AttentionWork::statistics) give
// the reverse exactly what its first sweep makes: the same gradients,
// bitwise; and the reverse does read them (a changed sum changes them).
TEST_P(Kernels, KeptStatisticsAreTheSweepsBitwise) {
  const PetscInt d = 5, k = 3, N = 150;
  Inputs in(GetParam(), d, k, N, 97);
  const HeadShape &s = in.s;
  const double *theta = in.theta.data(), *x = in.x.data();
  const PetscInt width = attention_statistics_width(s);
  for (Range q : {Range{0, N}, Range{37, 140}}) {
    AttentionWork kept, swept;
    for (AttentionWork *w : {&kept, &swept}) w->keys_at_once = 100, w->key_tile = 13, w->reserve(s, N);
    std::vector<double> stats(q.size() * width, NAN), out(q.size() * d, 0.0);
    kept.statistics = stats.data();
    attention(s, theta, in.o, x, N, q, 0.7, out.data(), kept);
    PetscInt written = 0;
    for (double v : stats) written += !std::isnan(v);
    EXPECT_GT(written, 0) << "no tiled block kept its statistics";
    auto reverse = [&](AttentionWork &w) {
      std::pair<std::vector<double>, std::vector<double>> g{std::vector<double>(N * d, 0.2),
                                                            std::vector<double>(s.size, 0.3)};
      attention_reverse(s, theta, in.o, x, N, q, 0.7, in.lam.data() + q.begin * d, g.first.data(), g.second.data(), w);
      return g;
    };
    const auto a = reverse(kept), b = reverse(swept);
    EXPECT_TRUE(a.first == b.first && a.second == b.second) << q.begin << ": kept statistics differ from the sweep's";
    for (PetscInt r = 0; r < q.size(); ++r)
      if (!std::isnan(stats[r * width + 1])) stats[r * width + 1] *= 1.5; // every kept sum l
    EXPECT_FALSE(reverse(kept).first == b.first) << "the reverse did not read the kept statistics";
  }
}

// With its keys at once (the default keys_at_once) and the statistics
// paying (N >= 16 (dv + 2)), the forward keeps every query's m, l and Y; the
// reverse then knows delta = dY . Y first and makes P~ and dS in one pass
// over each row: the gradients of the reverse without them to round-off (not
// bitwise: delta is summed another way), and the plain kernels' to 1e-12;
// and the reverse does read them (a changed sum changes them).
TEST_P(Kernels, KeptStatisticsAtOnceAgreeToRoundOff) {
  const PetscInt d = 5, k = 3, N = 150;
  Inputs in(GetParam(), d, k, N, 98);
  const HeadShape &s = in.s;
  const double *theta = in.theta.data(), *x = in.x.data();
  const PetscInt width = attention_statistics_width(s);
  ASSERT_TRUE(attention_statistics_pay(s, N));
  EXPECT_FALSE(attention_statistics_pay(s, kKeysPerStatistic * width - 1));
  // With them the reverse takes the keys in tiles of key_tile (13: many,
  // some wholly or partly masked), the forward still all at once.
  for (PetscInt tile : {AttentionWork().key_tile, (PetscInt)13}) {
    for (Range q : {Range{0, N}, Range{37, 140}}) {
      AttentionWork kept, swept, plain;
      kept.key_tile = tile;
      for (AttentionWork *w : {&kept, &swept, &plain}) w->reserve(s, N);
      std::vector<double> stats(q.size() * width, NAN), out(q.size() * d, 0.0);
      kept.statistics = stats.data();
      attention(s, theta, in.o, x, N, q, 0.7, out.data(), kept);
      EXPECT_EQ(std::count_if(stats.begin(), stats.end(), [](double v) { return std::isnan(v); }), 0)
          << q.begin << ": a query kept no statistics";
      auto reverse = [&](AttentionWork &w, bool fast) {
        std::pair<std::vector<double>, std::vector<double>> g{std::vector<double>(N * d, 0.2),
                                                              std::vector<double>(s.size, 0.3)};
        const auto kernel = fast ? attention_reverse : attention_plain_reverse;
        kernel(s, theta, in.o, x, N, q, 0.7, in.lam.data() + q.begin * d, g.first.data(), g.second.data(), w);
        return g;
      };
      const auto a = reverse(kept, true), b = reverse(swept, true), c = reverse(plain, false);
      EXPECT_LT(relative_error(a.first, b.first), 1e-14) << q.begin << ", tile " << tile;
      EXPECT_LT(relative_error(a.second, b.second), 1e-14) << q.begin << ", tile " << tile;
      EXPECT_LT(relative_error(a.first, c.first), 1e-12) << q.begin << ", tile " << tile;
      EXPECT_LT(relative_error(a.second, c.second), 1e-12) << q.begin << ", tile " << tile;
      for (PetscInt r = 0; r < q.size(); ++r) stats[r * width + 1] *= 1.5; // every kept sum l
      EXPECT_GT(relative_error(reverse(kept, true).first, b.first), 1e-3)
          << "the reverse did not read the kept statistics";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, Kernels,
                         ::testing::Values(Case{HeadKind::qkv, false}, Case{HeadKind::qkv, true},
                         Case{HeadKind::qkvo, false}, Case{HeadKind::qkvo, true}),
                         [](const auto &info) {
                           return std::string(to_string(info.param.kind)) + (info.param.causal ? "_causal" : "");
                         });

// The kernels' exponential on the softmax's arguments (x <= 0): within 1.5 ulp
// of the C library's where exp(x) > 1e-300, and at most exp(-708) ~ 3.3e-308 below.
TEST(Exponentials, WithinOneAndAHalfUlpOfTheLibrary) {
  std::vector<double> x;
  for (double v = 0; v > -745; v -= 0.0137) x.push_back(v);
  for (double v : {-0.0, -1e-300, -1e-17, -0.34657359027997264, -0.34657359027997270, -708.0, -709.5, -1e4})
    x.push_back(v);
  std::vector<double> e = x;
  exponentials(e.data(), (PetscInt)e.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double ref = std::exp(x[i]);
    if (ref > 1e-300) worst = std::max(worst, std::fabs(e[i] - ref) / (std::nextafter(ref, 2.0) - ref));
    else EXPECT_LE(e[i], std::max(ref * (1 + 1e-15), 3.31e-308)) << x[i]; // exp(-708) below -708
    EXPECT_GE(e[i], 0.0) << x[i];
  }
  EXPECT_LE(worst, 1.5);
  EXPECT_EQ(e[x.size() - 8], 1.0); // exp(-0)
}

// A row's shift c scales its exps exp(beta s) 2^-c and their sum by a power
// of two, exactly (so the softmax does not depend on c); and the exps are
// within 1.5 ulp of the C library's exp(beta s - c ln 2), taken in long
// double, on rows of every length up to two vectors and a rest.
TEST(Exponentials, ARowsShiftScalesItExactly) {
  Stream r(7, 1);
  for (double beta : {1.0, 0.37})
    for (PetscInt n = 1; n <= 19; ++n) {
      std::vector<double> s(n);
      for (double &v : s) v = 6.0 * r.normal();
      const double c = shift_above(beta * 18.0);
      std::vector<double> e = s, e7 = s;
      const double sum = row_exp(e.data(), n, beta, Shift{c, false});
      const double sum7 = row_exp(e7.data(), n, beta, Shift{c + 7, false});
      EXPECT_EQ(sum, std::ldexp(sum7, 7)) << n;
      for (PetscInt j = 0; j < n; ++j) {
        EXPECT_EQ(e[j], std::ldexp(e7[j], 7)) << n << " " << j;
        const long double ref = std::exp((long double)beta * s[j] - (long double)c * 0.693147180559945309417L);
        const double ulp = std::nextafter((double)ref, 2.0) - (double)ref;
        EXPECT_LE(std::fabs((double)(e[j] - ref)), 1.5 * ulp) << "beta " << beta << ", score " << s[j];
      }
    }
}

// The shapes of the standard benchmark sizes (k = 8 and 16, blocks of 128
// queries cut at 300 keys), where the small-product kernels take over; the
// keys at once and in tiles of 64.
TEST(Kernels, FastEqualsPlainAtBenchmarkShapes) {
  for (auto [d, k] : {std::pair<PetscInt, PetscInt>{16, 8}, {32, 16}})
    for (HeadKind kind : {HeadKind::qkv, HeadKind::qkvo})
      for (bool causal : {false, true}) {
        const PetscInt N = 300;
        const HeadShape s = head_shape(kind, d, k);
        AttentionOptions o;
        o.beta = 1.0, o.causal = causal;
        Stream r(7, 3);
        std::vector<double> theta(s.size), x(N * d), lam(N * d);
        for (auto &t : theta) t = r.normal() / std::sqrt((double)d);
        for (auto &v : x) v = r.normal();
        for (auto &v : lam) v = r.normal();
        const Range q{90, 300};
        for (PetscInt tile : {AttentionWork().key_tile, (PetscInt)64}) {
          AttentionWork wf;
          wf.keys_at_once = std::min(wf.keys_at_once, tile), wf.key_tile = tile;
          wf.reserve(s, N);
          expect_blocked_equals_plain(s, o, theta, x, lam, N, q, 1.0, wf,
                                      std::to_string(d) + " " + std::to_string(causal) + " tile " + std::to_string(tile));
        }
      }
}

// The works' arrays (attention.hpp): each as long as the kernels need, each
// from a cache line of its own, none overlapping another, in this work or in
// another work of a vector of works (one a thread, velocity.cpp), after the
// vector has moved them.
TEST(Kernels, EachWorkArrayOnLinesOfItsOwn) {
  const HeadShape s = head_shape(HeadKind::qkvo, 16, 8);
  for (PetscInt N : {(PetscInt)1, (PetscInt)7, (PetscInt)300, (PetscInt)5000}) {
    std::vector<AttentionWork> works(1);
    works[0].reserve(s, N);
    works.resize(3); // moves the first
    for (size_t t = 1; t < works.size(); ++t) works[t].reserve(s, N);
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> lines; // [first, past last) byte of each array
    for (AttentionWork &w : works) {
      const PetscInt B = std::min(AttentionWork::block, N), T = std::min(w.keys_at_once, N);
      const PetscInt ldt = row_stride(N), ldp = row_stride(T); // (rows apart by odd lines)
      const std::pair<const Scratch *, PetscInt> arrays[] = {
          {&w.q, N * s.k},      {&w.kappa, N * s.k},  {&w.w, N * s.dv},      {&w.p, B * ldp},     {&w.dp, B * ldp},
          {&w.m, B},            {&w.l, B},            {&w.delta, B},         {&w.y, B * s.dv},    {&w.dy, B * s.dv},
          {&w.dyl, B * s.dv},   {&w.dq, s.k},         {&w.dqs, N * s.k},     {&w.dkappa, N * s.k}, {&w.dw, N * s.dv},
          {&w.qt, s.d * s.k},   {&w.kt, s.d * s.k},   {&w.vt, s.d * s.dv},   {&w.kappat, ldt * s.k},
          {&w.wt, ldt * s.dv}};
      for (const auto &[a, n] : arrays) {
        EXPECT_EQ(a->size(), (size_t)n) << "N " << N;
        const auto first = reinterpret_cast<std::uintptr_t>(a->data());
        EXPECT_EQ(first % 64, 0u) << "N " << N;
        lines.push_back({first, (first + 8 * (std::uintptr_t)n + 63) / 64 * 64});
        std::fill(a->begin(), a->end(), 1.0); // each array writable to its end (ASan, valgrind)
      }
    }
    std::sort(lines.begin(), lines.end());
    for (size_t a = 1; a < lines.size(); ++a) EXPECT_LE(lines[a - 1].second, lines[a].first) << "N " << N;
  }
}

} // namespace
