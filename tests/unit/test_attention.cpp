// The fast attention kernels (blocked, BLAS, vectorised exp) against the
// plain reference kernels, forward and reverse, on query ranges that cross
// block boundaries, with and without the causal mask.
#include "helpers.hpp"
#include "mft/attention.hpp"
#include "mft/random.hpp"

using namespace mft;
using namespace mft::test;

namespace {

struct Case {
  HeadKind kind;
  bool causal;
};
class Kernels : public ::testing::TestWithParam<Case> {};

TEST_P(Kernels, FastEqualsReference) {
  const PetscInt d = 5, k = 3, N = 150; // 150 queries: blocks of 64, 64, 22
  const HeadShape s = head_shape(GetParam().kind, d, k);
  AttentionOptions o;
  o.beta = 0.9, o.causal = GetParam().causal;
  Stream r(42, 99);
  std::vector<double> theta(s.size), x(N * d), lam(N * d);
  for (auto &t : theta) t = r.normal() / std::sqrt((double)d);
  for (auto &v : x) v = 1.5 * r.normal();
  for (auto &v : lam) v = r.normal();
  for (Range q : {Range{0, N}, Range{37, 140}, Range{64, 65}}) {
    AttentionWork wf, wr;
    wf.reserve(s, N), wr.reserve(s, N);
    std::vector<double> of(q.size() * d, 0.1), orf(q.size() * d, 0.1);
    attention_forward(s, theta.data(), o, x.data(), N, q, 0.7, of.data(), wf);
    attention_forward_reference(s, theta.data(), o, x.data(), N, q, 0.7, orf.data(), wr);
    EXPECT_LT(relative_error(of, orf), 1e-13) << q.begin;
    std::vector<double> dxf(N * d, 0.2), dxr(N * d, 0.2), dtf(s.size, 0.3), dtr(s.size, 0.3);
    attention_reverse(s, theta.data(), o, x.data(), N, q, 0.7, lam.data() + q.begin * d, dxf.data(), dtf.data(), wf);
    attention_reverse_reference(s, theta.data(), o, x.data(), N, q, 0.7, lam.data() + q.begin * d, dxr.data(),
                                dtr.data(), wr);
    EXPECT_LT(relative_error(dxf, dxr), 1e-12) << q.begin;
    EXPECT_LT(relative_error(dtf, dtr), 1e-12) << q.begin;
  }
}

INSTANTIATE_TEST_SUITE_P(All, Kernels,
                         ::testing::Values(Case{HeadKind::qkv, false}, Case{HeadKind::qkv, true},
                                           Case{HeadKind::qkvo, false}, Case{HeadKind::qkvo, true}),
                         [](const auto &info) {
                           return std::string(to_string(info.param.kind)) + (info.param.causal ? "_causal" : "");
                         });

} // namespace
