// NTK against finite-difference Jacobians; symmetry, positivity, rank
// independence, singularity for repeated sequences.
#include "helpers.hpp"
#include "mft/analyses/ntk.hpp"

#include <cmath>

using namespace mft;
using namespace mft::test;

namespace {

std::vector<std::string> small(std::vector<std::string> extra) {
  std::vector<std::string> a = {"--model.L", "2", "--model.H", "3", "--data.M", "2", "--data.N", "3", "--loss.c", "2",
                                "--model.beta", "1.2"};
  for (auto &e : extra) a.push_back(e);
  return tiny(a);
}

// The output map F at the current heads: W xbar (pooled) or x(1) (token), on every rank.
std::vector<double> outputs(Problem *p) {
  EXPECT_EQ(ProblemEvaluate(p, PETSC_FALSE), 0);
  if (p->targets.kind == LossKind::token) return gather(p->x1);
  std::vector<double> out;
  PooledOutputs(p->tokens, p->targets.W, p->targets.c, p->x1, out);
  return out;
}

struct Case {
  const char *kind, *loss;
  NtkPart part;
  const char *activation = nullptr; // MLP sublayers of this activation; null: none
};
class NtkCases : public ::testing::TestWithParam<Case> {};

// Adds scale J J^T into fd, J from central differences of F in the entries
// of v (heads or neurons, units of `unit` entries) that `part` counts: every
// one, or from `linear` on in a unit.
void AddDifferences(Problem *p, Vec v, PetscInt unit, PetscInt linear, NtkPart part, double scale, PetscInt n,
                    std::vector<double> *fd) {
  const std::vector<double> theta = gather(v);
  const double eps = 1e-6;
  auto at = [&](size_t e, double value) {
    set_entry(v, (PetscInt)e, value);
    EXPECT_EQ(ProblemSetHeads(p), 0);
    return outputs(p);
  };
  for (size_t e = 0; e < theta.size(); ++e) {
    if (part == NtkPart::value && (PetscInt)(e % unit) < linear) continue;
    const auto plus = at(e, theta[e] + eps), minus = at(e, theta[e] - eps);
    at(e, theta[e]);
    for (PetscInt o = 0; o < n; ++o)
      for (PetscInt q = 0; q < n; ++q)
        (*fd)[o * n + q] += scale * (plus[o] - minus[o]) * (plus[q] - minus[q]) / (4 * eps * eps);
  }
}

// NTK = L H J J^T (+ L m J' J'^T of the neurons) with J, J' from central
// differences of F in every parameter entry the part counts.
TEST_P(NtkCases, MatchesFiniteDifferenceJacobian) {
  const Case c = GetParam();
  std::vector<std::string> extra = {"--model.head_kind", c.kind, "--loss.kind", c.loss};
  if (c.activation)
    for (const char *e : {"--model.mlp_width", "3", "--model.mlp_activation", c.activation, "--init.mlp_b_gain", "0.5",
                          "--init.mlp_w_mean", "0.4"})
      extra.push_back(e);
  auto p = make_problem(PETSC_COMM_WORLD, small(extra));
  Ntk k;
  ASSERT_EQ(NtkCompute(p.get(), c.part, &k), 0);
  const HeadShape &s = p->heads.shape;
  const PetscInt n = k.n;
  std::vector<double> fd((size_t)(n * n), 0.0);
  AddDifferences(p.get(), p->heads.theta, s.size, s.offV, c.part, (double)(p->heads.L * p->heads.H), n, &fd);
  if (c.activation) {
    const Neurons &nn = p->neurons;
    AddDifferences(p.get(), nn.theta, nn.size(), nn.d + 1, c.part, (double)(nn.L * nn.m), n, &fd);
  }
  EXPECT_LT(relative_error(k.matrix, fd), 1e-6);
  // Symmetric and positive semidefinite to round-off.
  for (PetscInt o = 0; o < n; ++o)
    for (PetscInt q = 0; q < n; ++q) EXPECT_NEAR(k.matrix[o * n + q], k.matrix[q * n + o], 1e-14 * k.eigenvalues.back());
  EXPECT_GT(k.eigenvalues.front(), -1e-12 * k.eigenvalues.back());
}

INSTANTIATE_TEST_SUITE_P(All, NtkCases,
                         ::testing::Values(Case{"qkv", "pooled", NtkPart::full}, Case{"qkv", "pooled", NtkPart::value},
                                           Case{"qkv", "token", NtkPart::value}, Case{"qkvo", "pooled", NtkPart::full},
                                           Case{"qkvo", "token", NtkPart::value},
                                           Case{"qkv", "pooled", NtkPart::full, "tanh"},
                                           Case{"qkv", "token", NtkPart::value, "gelu"}),
                         [](const auto &info) {
                           return std::string(info.param.kind) + "_" + info.param.loss + "_" + to_string(info.param.part) +
                                  (info.param.activation ? std::string("_mlp_") + info.param.activation : "");
                         });

TEST(Ntk, SameOnEveryRankCount) {
  for (const char *hg : {"1", "0"}) {
    auto all = make_problem(PETSC_COMM_WORLD, small({"--loss.kind", "pooled", "--model.H", "5", "--parallel.head_groups", hg}));
    auto one = make_problem(PETSC_COMM_SELF, small({"--loss.kind", "pooled", "--model.H", "5"}));
    Ntk a, b;
    ASSERT_EQ(NtkCompute(all.get(), NtkPart::full, &a), 0);
    ASSERT_EQ(NtkCompute(one.get(), NtkPart::full, &b), 0);
    EXPECT_LT(relative_error(a.matrix, b.matrix), 1e-12);
  }
}

// Two identical sequences give identical rows of J: c zero eigenvalues (pooled).
TEST(Ntk, RepeatedSequenceIsSingular) {
  auto p = make_problem(PETSC_COMM_WORLD, small({"--loss.kind", "pooled", "--data.M", "3"}));
  const std::vector<double> x0 = gather(p->x0);
  const PetscInt seq = p->tokens.N * p->tokens.d;
  for (PetscInt e = 0; e < seq; ++e) set_entry(p->x0, seq + e, x0[e]); // sequence 1 := sequence 0
  for (NtkPart part : {NtkPart::full, NtkPart::value}) {
    Ntk k;
    ASSERT_EQ(NtkCompute(p.get(), part, &k), 0);
    const PetscInt c = p->targets.c;
    for (PetscInt i = 0; i < c; ++i) EXPECT_LT(std::fabs(k.eigenvalues[i]), 1e-12 * k.eigenvalues.back()) << to_string(part);
    EXPECT_GT(k.eigenvalues[c], 1e-6 * k.eigenvalues.back()) << to_string(part); // and no more
  }
}

TEST(Ntk, TooLargeIsRefused) {
  auto p = make_problem(PETSC_COMM_WORLD, small({"--ntk.max_gb", "1e-9"}));
  Ntk k;
  EXPECT_EQ(NtkCompute(p.get(), NtkPart::full, &k), PETSC_ERR_USER_INPUT);
}

} // namespace
