// Gradients from the backward adjoint against central finite differences of the risk.
#include "helpers.hpp"

#include <cmath>
#include <numeric>

using namespace mft;
using namespace mft::test;

namespace {

struct Variant {
  const char *head_kind, *loss, *causal, *norm = "none";
  const char *a = "1", *c = "1"; // depth and head exponents
  const char *g = "0";           // the logit exponent
  const char *k = nullptr;       // the key dimension (tiny's d is 3): 2, or 3 with a logit exponent
};

std::string VariantName(const Variant &v) {
  const std::string norm = v.norm, a = v.a, c = v.c, g = v.g;
  auto digits = [](std::string x) { return x.erase(std::min(x.find('.'), x.size()), 1); };
  return std::string(v.head_kind) + "_" + v.loss + (std::string(v.causal) == "true" ? "_causal" : "") +
         (norm == "none" ? "" : "_" + norm) + (a == "1" && c == "1" ? "" : "_a" + digits(a) + "_c" + digits(c)) +
         (g == "0" ? "" : "_g" + digits(g)) + (v.k ? std::string("_k") + v.k : "");
}

class GradientVariants : public ::testing::TestWithParam<Variant> {
protected:
  ProblemPtr problem() {
    const Variant v = GetParam();
    return make_problem(PETSC_COMM_WORLD, tiny({"--model.head_kind", v.head_kind, "--loss.kind", v.loss,
                                                "--model.causal", v.causal, "--loss.c", "2", "--init.seed", "11",
                                                "--model.beta", "1.3", "--model.norm", v.norm,
                                                "--model.depth_exponent", v.a, "--model.head_exponent", v.c,
                                                "--model.logit_exponent", v.g,
                                                "--model.k", v.k ? v.k : std::string(v.g) == "0" ? "2" : "3"}));
  }
};

double risk(Problem *p) {
  EXPECT_EQ(ProblemEvaluate(p, PETSC_FALSE), 0);
  return p->risk;
}

// Central difference of the risk in entry i of vector v (theta or x0).
double central_difference(Problem *p, Vec v, PetscInt i, double value, double eps, bool heads) {
  set_entry(v, i, value + eps);
  if (heads) ProblemSetHeads(p);
  const double plus = risk(p);
  set_entry(v, i, value - eps);
  if (heads) ProblemSetHeads(p);
  const double minus = risk(p);
  set_entry(v, i, value);
  if (heads) ProblemSetHeads(p);
  return (plus - minus) / (2 * eps);
}

double norm_relative_error(const std::vector<double> &a, const std::vector<double> &b) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    ref += b[i] * b[i];
  }
  return std::sqrt(diff / ref);
}

// g = L^a H^c dR/dtheta (L H at a = c = 1) for every parameter entry of every head.
void expect_heads_match_finite_differences(Problem *p, const std::string &what) {
  ASSERT_EQ(ProblemEvaluate(p, PETSC_TRUE), 0);
  const std::vector<double> g = gather(p->grad), theta = gather(p->heads.theta);
  const ModelSettings &m = p->settings.model;
  const double LH = std::pow((double)m.L, m.depth_exponent) * std::pow((double)m.H, m.head_exponent);
  std::vector<double> fd(theta.size()), adj(theta.size());
  for (size_t i = 0; i < theta.size(); ++i) {
    fd[i] = central_difference(p, p->heads.theta, (PetscInt)i, theta[i], 1e-6, true);
    adj[i] = g[i] / LH;
  }
  EXPECT_LT(norm_relative_error(adj, fd), 1e-6) << what;
  EXPECT_GT(std::sqrt(std::inner_product(fd.begin(), fd.end(), fd.begin(), 0.0)), 1e-4) << what; // not zero
}

TEST_P(GradientVariants, HeadsMatchFiniteDifferences) {
  auto p = problem();
  expect_heads_match_finite_differences(p.get(), "");
}

// The risk at x0 with entry i moved by eps, its token put back on the
// sphere; p->x0 is x0 again after.
double risk_on_sphere(Problem *p, const std::vector<double> &x0, size_t i, double eps) {
  const size_t d = (size_t)p->tokens.d, o = i / d * d;
  std::vector<double> token(x0.begin() + (long)o, x0.begin() + (long)(o + d));
  token[i - o] += eps;
  double r = 0;
  for (double t : token) r += t * t;
  for (size_t c = 0; c < d; ++c) set_entry(p->x0, (PetscInt)(o + c), token[c] / std::sqrt(r));
  const double risk_there = risk(p);
  for (size_t c = 0; c < d; ++c) set_entry(p->x0, (PetscInt)(o + c), x0[o + c]);
  return risk_there;
}

// dR/dx(0) left by the adjoint solve: includes the mean-field (key) term;
// on the sphere, through the input's normalization.
TEST_P(GradientVariants, InputTokensMatchFiniteDifferences) {
  auto p = problem();
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_TRUE), 0);
  const std::vector<double> p0 = gather(p->adjoint), x0 = gather(p->x0);
  const bool sphere = std::string(GetParam().norm) == "sphere";
  std::vector<double> fd(x0.size());
  for (size_t i = 0; i < x0.size(); ++i)
    fd[i] = sphere ? (risk_on_sphere(p.get(), x0, i, 1e-6) - risk_on_sphere(p.get(), x0, i, -1e-6)) / 2e-6
                   : central_difference(p.get(), p->x0, (PetscInt)i, x0[i], 1e-6, false);
  EXPECT_LT(norm_relative_error(p0, fd), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(All, GradientVariants,
                         ::testing::Values(Variant{"qkv", "token", "false"}, Variant{"qkv", "token", "true"},
                                           Variant{"qkv", "pooled", "false"}, Variant{"qkv", "pooled", "true"},
                                           Variant{"qkvo", "token", "false"}, Variant{"qkvo", "token", "true"},
                                           Variant{"qkvo", "pooled", "false"}, Variant{"qkvo", "pooled", "true"},
                                           Variant{"qkv", "token", "false", "sphere"},
                                           Variant{"qkvo", "pooled", "true", "sphere"},
                                           Variant{"qkv", "pooled", "true", "pre"},
                                           Variant{"qkvo", "token", "false", "pre"}),
                         [](const auto &info) { return VariantName(info.param); });

// Depth and head exponents: the diffusive model (a = c = 1/2) and others,
// every head kind, loss, mask and norm (ctest diffusive_np1, diffusive_np3).
INSTANTIATE_TEST_SUITE_P(Diffusive, GradientVariants,
                         ::testing::Values(Variant{"qkv", "token", "false", "none", "0.5", "0.5"},
                                           Variant{"qkvo", "pooled", "true", "none", "0.5", "0.5"},
                                           Variant{"qkv", "pooled", "false", "sphere", "0.5", "0.5"},
                                           Variant{"qkvo", "token", "true", "pre", "0.75", "1"},
                                           Variant{"qkv", "token", "true", "none", "1", "0.5"}),
                         [](const auto &info) { return VariantName(info.param); });

// The logit exponent (beta k^-g, k = 3) at g = 1/2 and 1: every head kind,
// mask and norm, and with depth and head exponents; and keys wider than the
// tokens (k = 5 > d = 3).
INSTANTIATE_TEST_SUITE_P(Logit, GradientVariants,
                         ::testing::Values(Variant{"qkv", "token", "true", "none", "1", "1", "0.5"},
                                           Variant{"qkvo", "pooled", "true", "pre", "1", "1", "1"},
                                           Variant{"qkvo", "token", "false", "sphere", "1", "1", "0.5"},
                                           Variant{"qkv", "pooled", "false", "none", "1", "1", "1"},
                                           Variant{"qkvo", "token", "true", "none", "0.5", "0.5", "0.5"},
                                           Variant{"qkvo", "pooled", "false", "none", "1", "1", "0.5", "5"},
                                           Variant{"qkv", "token", "true", "pre", "1", "1", "1", "5"}),
                         [](const auto &info) { return VariantName(info.param); });

// Threads over a sequence's queries (Velocity::query_chunks): one sequence
// of 2100 tokens on one rank is cut into 8 query chunks, its keys projected
// once and their gradients summed over the chunks; the head gradient matches
// finite differences (through two layers, so the key gradients count).
TEST(Gradient, QueryChunksMatchFiniteDifferences) {
  for (const char *kind : {"qkv", "qkvo"}) {
    auto p = make_problem(PETSC_COMM_SELF, tiny({"--model.head_kind", kind, "--model.causal",
                                                 std::string(kind) == "qkv" ? "true" : "false", "--data.M", "1",
                                                 "--data.N", "2100", "--model.L", "2", "--model.H", "2", "--model.d",
                                                 "2", "--model.k", "1", "--init.seed", "5", "--model.beta", "1.3"}));
    ASSERT_EQ(p->velocity.query_chunks, 2100 / kQueryRows) << kind;
    expect_heads_match_finite_differences(p.get(), kind);
  }
}

// PETSc asks for (df/dx)^T and (df/dtheta)^T separately; the solver answers
// both from one reverse sweep per layer.
TEST(Gradient, OneReverseSweepPerLayer) {
  auto p = make_problem(PETSC_COMM_WORLD, tiny());
  const PetscInt before = p->velocity.sweeps;
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_TRUE), 0);
  EXPECT_EQ(p->velocity.sweeps - before, p->settings.model.L);
}

// The gradient of settings `args` with the forward's statistics kept (they
// must be), then again with them dropped after the forward (the reverse
// makes them again).
void gradients_with_statistics_and_without(const std::vector<std::string> &args, std::vector<double> *kept,
                                           std::vector<double> *dropped) {
  auto p = make_problem(PETSC_COMM_WORLD, tiny(args));
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_TRUE), 0);
  ASSERT_FALSE(p->velocity.statistics.empty()) << "statistics expected";
  *kept = gather(p->grad);
  ASSERT_EQ(VecCopy(p->x0, p->x1), 0);
  ASSERT_EQ(FlowForward(&p->flow, p->x1), 0);
  p->velocity.statistics.clear();
  ASSERT_EQ(RiskEvaluate(p->tokens, p->targets, &p->active, p->x1, p->adjoint, &p->risk), 0);
  ASSERT_EQ(FlowAdjoint(&p->flow, p->adjoint, p->grad), 0);
  ASSERT_EQ(VecScale(p->grad, (PetscScalar)(p->heads.L * p->heads.H)), 0);
  *dropped = gather(p->grad);
}

// Sequences long enough for key tiles: the forward keeps its tiled queries'
// statistics for the adjoint, which then skips its first sweep; the gradient
// is bitwise the one that sweeps (statistics dropped after the forward).
TEST(Gradient, KeptStatisticsAreTheSweepsBitwise) {
  std::vector<double> kept, swept;
  gradients_with_statistics_and_without({"--model.L", "2", "--model.H", "3", "--model.d", "2", "--model.k", "1",
                                         "--data.M", "2", "--data.N", "4200", "--model.head_kind", "qkvo"},
                                        &kept, &swept);
  EXPECT_TRUE(kept == swept) << "the kept statistics change the gradient";
}

// Sequences whose keys fit at once but long enough for the statistics to
// pay (N >= 16 (dv + 2) = 64 here): the forward keeps them for every query,
// and the gradient is the one without them (dropped after the forward) to
// round-off, causal or not.
TEST(Gradient, KeptStatisticsAtOnceAgreeToRoundOff) {
  for (const char *causal : {"false", "true"}) {
    std::vector<double> kept, swept;
    gradients_with_statistics_and_without({"--model.L", "2", "--model.H", "3", "--model.d", "2", "--model.k", "1",
                                           "--data.M", "3", "--data.N", "70", "--model.causal", causal},
                                          &kept, &swept);
    EXPECT_LT(relative_error(kept, swept), 1e-13) << "causal " << causal;
    EXPECT_FALSE(kept == swept) << "causal " << causal << ": the reverse did not read the kept statistics";
  }
}

// Long sequences on all ranks, cut across token groups (shared as tokens
// and as projections), with key tiles, kept rows and kept statistics: the
// output and the gradient of the 1-rank run, to round-off.
TEST(Gradient, LongSequencesOnAllRanksEqualOneRank) {
  const std::vector<std::string> args = tiny({"--model.L", "2", "--model.H", "3", "--model.d", "2", "--model.k", "1",
                                              "--data.M", "2", "--data.N", "4200", "--model.head_kind", "qkvo",
                                              "--model.causal", "true"});
  auto one = make_problem(PETSC_COMM_SELF, args);
  ASSERT_EQ(ProblemEvaluate(one.get(), PETSC_TRUE), 0);
  const std::vector<double> x1 = gather(one->x1), grad = gather(one->grad);
  for (const char *form : {"tokens", "projections"}) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--parallel.cut_sequences", form});
    auto p = make_problem(PETSC_COMM_WORLD, a);
    ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_TRUE), 0);
    EXPECT_LT(relative_error(gather(p->x1), x1), 1e-12) << form;
    EXPECT_LT(relative_error(gather(p->grad), grad), 1e-12) << form;
  }
}

// A reused time stepper gives bitwise the gradient of its first use.
TEST(Gradient, ReusedSolverRepeatsItself) {
  auto p = make_problem(PETSC_COMM_WORLD, tiny());
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_TRUE), 0);
  const std::vector<double> g1 = gather(p->grad);
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_TRUE), 0);
  EXPECT_EQ(relative_error(gather(p->grad), g1), 0.0);
}

} // namespace
