// The lanes kernels (attention_seeds.hpp) against the plain kernels run on
// each lane's model alone: qkv and qkvo, causal and not, weighted keys, and
// lanes left empty. A lane's results must not depend on what the other lanes
// hold (bitwise), which is what makes a seed of an ensemble the same on any
// number of ranks.
#include "helpers.hpp"
#include "mft/kernels/attention_seeds.hpp"
#include "mft/layout/random.hpp"

#include <cmath>
#include <string>
#include <utility>

using namespace mft;
using namespace mft::test;

namespace {

struct LanesCase {
  HeadKind kind;
  bool causal, weighted;
};
class SeedsKernels : public ::testing::TestWithParam<LanesCase> {};

// kLanes models (heads, tokens, adjoints) drawn from stream `seed`, lane by
// lane, and their lanes arrays.
struct LanesInputs {
  HeadShape s;
  AttentionOptions o;
  PetscInt N;
  std::vector<std::vector<double>> theta, x, lam;
  std::vector<double> weights, theta_l, x_l, lam_l;
  LanesInputs(const LanesCase &c, PetscInt d, PetscInt k, PetscInt N_, std::uint64_t seed)
      : s(head_shape(c.kind, d, k)), N(N_), theta(kLanes), x(kLanes), lam(kLanes) {
    o.beta = 1.3, o.causal = c.causal;
    Stream r(43, seed);
    for (PetscInt w = 0; w < kLanes; ++w) {
      theta[w].resize(s.size), x[w].resize(N * d), lam[w].resize(N * d);
      for (auto &t : theta[w]) t = r.normal() / std::sqrt((double)d);
      for (auto &v : x[w]) v = 1.5 * r.normal();
      for (auto &v : lam[w]) v = r.normal();
    }
    if (c.weighted) {
      double sum = 0;
      for (PetscInt j = 0; j < N; ++j) weights.push_back(0.2 + r.uniform()), sum += weights.back();
      for (double &v : weights) v /= sum;
    }
    theta_l = lanes(theta, s.size), x_l = lanes(x, N * d), lam_l = lanes(lam, N * d);
  }
  static std::vector<double> lanes(const std::vector<std::vector<double>> &v, PetscInt n) {
    std::vector<const double *> src;
    for (auto &a : v) src.push_back(a.data());
    std::vector<double> out((size_t)(n * kLanes));
    lanes_gather(src.data(), n, out.data());
    return out;
  }
  const double *wts() const { return weights.empty() ? nullptr : weights.data(); }
};

std::vector<double> lane(const std::vector<double> &a, PetscInt n, PetscInt w) {
  std::vector<double> out((size_t)n);
  for (PetscInt e = 0; e < n; ++e) out[e] = a[e * kLanes + w];
  return out;
}

// Shapes compiled for (d = 4, k = 2 and 8) and one run with its own numbers.
void ExpectLanesEqualPlain(const LanesCase &c, PetscInt d, PetscInt k, PetscInt N) {
  LanesInputs in(c, d, k, N, 7);
  const double scale = 0.7;
  SeedsWork ws;
  ws.reserve(in.s, N);
  AttentionWork wp;
  wp.reserve(in.s, N);
  std::vector<double> out(N * d * kLanes, 0.1), dx(N * d * kLanes, 0.2), dt(in.s.size * kLanes, 0.3),
      wg(N * kLanes, 0.0);
  attention_seeds(in.s, in.theta_l.data(), in.o, in.x_l.data(), N, scale, in.wts(), out.data(), ws);
  attention_seeds_reverse(in.s, in.theta_l.data(), in.o, in.x_l.data(), N, scale, in.wts(), in.lam_l.data(), dx.data(),
                          dt.data(), in.weights.empty() ? nullptr : wg.data(), ws);
  for (PetscInt w = 0; w < kLanes; ++w) {
    std::vector<double> o(N * d, 0.1), dxp(N * d, 0.2), dtp(in.s.size, 0.3), wgp(N, 0.0);
    wp.weights = in.wts();
    wp.weight_grad = in.weights.empty() ? nullptr : wgp.data();
    attention_plain(in.s, in.theta[w].data(), in.o, in.x[w].data(), N, Range{0, N}, scale, o.data(), wp);
    attention_plain_reverse(in.s, in.theta[w].data(), in.o, in.x[w].data(), N, Range{0, N}, scale,
                            in.lam[w].data(), dxp.data(), dtp.data(), wp);
    EXPECT_LT(relative_error(lane(out, N * d, w), o), 1e-13) << "lane " << w;
    EXPECT_LT(relative_error(lane(dx, N * d, w), dxp), 1e-12) << "lane " << w;
    EXPECT_LT(relative_error(lane(dt, in.s.size, w), dtp), 1e-12) << "lane " << w;
    if (!in.weights.empty()) EXPECT_LT(relative_error(lane(wg, N, w), wgp), 1e-12) << "lane " << w;
  }
}

TEST_P(SeedsKernels, EveryLaneEqualsPlain) {
  for (auto [d, k] : {std::pair<PetscInt, PetscInt>{5, 3}, {4, 2}, {4, 8}}) {
    SCOPED_TRACE("d = " + std::to_string(d) + ", k = " + std::to_string(k));
    ExpectLanesEqualPlain(GetParam(), d, k, 11);
  }
}

// Lane 2's results with its neighbours emptied (zero heads and tokens) or
// changed are bitwise those beside the full lanes.
TEST_P(SeedsKernels, LaneAloneIsBitwiseTheSame) {
  const PetscInt d = 4, k = 2, N = 8;
  LanesInputs in(GetParam(), d, k, N, 8), other(GetParam(), d, k, N, 9);
  SeedsWork ws;
  ws.reserve(in.s, N);
  auto run = [&](const LanesInputs &a, std::vector<double> *out, std::vector<double> *dx, std::vector<double> *dt) {
    out->assign(N * d * kLanes, 0.0), dx->assign(N * d * kLanes, 0.0), dt->assign(in.s.size * kLanes, 0.0);
    attention_seeds(in.s, a.theta_l.data(), in.o, a.x_l.data(), N, 0.5, in.wts(), out->data(), ws);
    attention_seeds_reverse(in.s, a.theta_l.data(), in.o, a.x_l.data(), N, 0.5, in.wts(), a.lam_l.data(), dx->data(),
                            dt->data(), nullptr, ws);
  };
  std::vector<double> o1, dx1, dt1, o2, dx2, dt2, o3, dx3, dt3;
  run(in, &o1, &dx1, &dt1);
  LanesInputs alone = in, mixed = other; // lane 2 alone; lane 2 among other models
  for (PetscInt w = 0; w < kLanes; ++w)
    if (w != 2) std::fill(alone.theta[w].begin(), alone.theta[w].end(), 0.0), std::fill(alone.x[w].begin(), alone.x[w].end(), 0.0);
  mixed.theta[2] = in.theta[2], mixed.x[2] = in.x[2], mixed.lam[2] = in.lam[2];
  for (LanesInputs *a : {&alone, &mixed})
    a->theta_l = LanesInputs::lanes(a->theta, in.s.size), a->x_l = LanesInputs::lanes(a->x, N * d),
    a->lam_l = LanesInputs::lanes(a->lam, N * d);
  run(alone, &o2, &dx2, &dt2);
  run(mixed, &o3, &dx3, &dt3);
  for (auto [a, b, c, n] : {std::tuple{&o1, &o2, &o3, N * d}, {&dx1, &dx2, &dx3, N * d}, {&dt1, &dt2, &dt3, in.s.size}})
    for (PetscInt e = 0; e < n; ++e) {
      EXPECT_EQ((*a)[e * kLanes + 2], (*b)[e * kLanes + 2]) << "entry " << e;
      EXPECT_EQ((*a)[e * kLanes + 2], (*c)[e * kLanes + 2]) << "entry " << e;
    }
}

INSTANTIATE_TEST_SUITE_P(Lanes, SeedsKernels,
                         ::testing::Values(LanesCase{HeadKind::qkv, false, false}, LanesCase{HeadKind::qkv, true, false},
                                           LanesCase{HeadKind::qkvo, false, false}, LanesCase{HeadKind::qkvo, true, false},
                                           LanesCase{HeadKind::qkv, false, true}, LanesCase{HeadKind::qkvo, false, true}));

} // namespace
