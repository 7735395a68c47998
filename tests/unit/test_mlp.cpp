// MLP sublayers: the activations' kernels against Monte Carlo and their
// closed forms, the block's forward against a hand-written loop, its
// gradients against central finite differences (on every rank count).
#include "helpers.hpp"
#include "mft/flow/limit.hpp"
#include "mft/flow/plain.hpp"
#include "mft/kernels/activation.hpp"
#include "mft/layout/random.hpp"

#include <cmath>

using namespace mft;
using namespace mft::test;

namespace {

const Activation kAll[] = {Activation::identity, Activation::relu, Activation::gelu, Activation::tanh,
                           Activation::erf};

// The closed forms (identity, relu, erf) against the quadrature that gelu and
// tanh use: exact for the smooth ones, to the kink's slow convergence for relu.
TEST(MlpKernel, ClosedFormsMatchQuadrature) {
  for (const double pq : {-0.7, 0.0, 0.4, 1.1}) {
    const double pp = 1.3, qq = 1.2;
    EXPECT_NEAR(ActivationKernel(Activation::identity, pp, pq, qq, true), pq, 1e-12);
    EXPECT_NEAR(ActivationKernel(Activation::erf, pp, pq, qq, true), ActivationKernel(Activation::erf, pp, pq, qq), 1e-10);
    EXPECT_NEAR(ActivationKernel(Activation::relu, pp, pq, qq, true), ActivationKernel(Activation::relu, pp, pq, qq),
                2e-3);
  }
  // relu at equal tokens: E[relu(p)^2] = pp / 2.
  EXPECT_NEAR(ActivationKernel(Activation::relu, 1.7, 1.7, 1.7), 0.85, 1e-12);
}

// E[sigma(p) sigma(q)] and E[sigma(p)] against 400000 draws of (p, q), within 4.5 standard errors.
TEST(MlpKernel, EveryActivationMatchesMonteCarlo) {
  const double pp = 1.4, pq = 0.6, qq = 0.9;
  const double c = pq / std::sqrt(pp), r = std::sqrt(qq - c * c);
  for (const Activation a : kAll) {
    Stream s(17, kLawDraw, (std::uint64_t)a);
    const int n = 400000;
    double sum = 0, sum2 = 0, mean = 0, mean2 = 0;
    for (int i = 0; i < n; ++i) {
      const double z1 = s.normal(), z2 = s.normal(), p = std::sqrt(pp) * z1, q = c * z1 + r * z2;
      const double k = Activate(a, p) * Activate(a, q), m = Activate(a, p);
      sum += k, sum2 += k * k, mean += m, mean2 += m * m;
    }
    const double kbar = sum / n, kse = std::sqrt((sum2 / n - kbar * kbar) / n);
    const double mbar = mean / n, mse = std::sqrt((mean2 / n - mbar * mbar) / n);
    EXPECT_LT(std::fabs(kbar - ActivationKernel(a, pp, pq, qq)), 4.5 * kse) << to_string(a);
    EXPECT_LT(std::fabs(mbar - ActivationMean(a, pp)), 4.5 * mse) << to_string(a);
    EXPECT_GT(std::fabs(kbar), 10 * kse) << to_string(a); // the kernel is not zero here
  }
}

TEST(MlpKernel, SlopesMatchDifferences) {
  for (const Activation a : kAll) {
    for (const double z : {-1.3, -0.2, 0.35, 2.1})
      EXPECT_NEAR(ActivateSlope(a, z), (Activate(a, z + 1e-6) - Activate(a, z - 1e-6)) / 2e-6, 1e-8) << to_string(a);
    for (const double pp : {0.3, 1.7})
      EXPECT_NEAR(ActivationMeanSlope(a, pp), (ActivationMean(a, pp + 1e-6) - ActivationMean(a, pp - 1e-6)) / 2e-6,
                  1e-8) << to_string(a);
  }
  EXPECT_GT(ActivationMeanSlope(Activation::gelu, 1.0), 0.1); // not zero where it is checked
}

// The mean-field ODE's expected drift (mft limit, scheme rk): the adjoint
// p(0) of the adaptive solve against central differences of the risk in x(0),
// bare, pre-LN and on the sphere, for targets of 0.4 (on the sphere the
// zero-target risk |x(1)|^2 / 2 is constant; there the difference moves x(0)
// along the sphere, and p(0) is the tangent part).
TEST(MlpLimit, ExpectedDriftAdjointMatchesFiniteDifferences) {
  for (const char *norm : {"none", "pre", "sphere"}) {
    const Settings ls = LimitSettingsFor(settings(
        tiny({"--model.mlp_width", "4", "--model.mlp_activation", "gelu", "--init.mlp_w_mean", "0.7",
              "--init.mlp_b_gain", "0.5", "--init.v_mean", "0.3", "--limit.heads", "16", "--model.norm", norm}),
        "limit"));
    const bool sphere = std::string(norm) == "sphere";
    auto p = std::make_unique<Problem>();
    ASSERT_EQ(ProblemCreate(PETSC_COMM_WORLD, ls, p.get()), 0);
    ASSERT_EQ(VecSet(p->targets.y, 0.4), 0); // on the sphere 1/2 |x(1)|^2 is constant: a target other than 0
    ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_TRUE), 0);
    const std::vector<double> p0 = gather(p->adjoint), x0 = gather(p->x0);
    const size_t d = (size_t)p->tokens.d;
    double diff = 0, norm2 = 0;
    for (size_t i = 0; i < x0.size(); ++i) {
      double r[2];
      const size_t o = i / d * d;
      for (int side = 0; side < 2; ++side) {
        std::vector<double> token(x0.begin() + (long)o, x0.begin() + (long)(o + d));
        token[i - o] += side ? -1e-6 : 1e-6;
        double n = 0;
        for (double t : token) n += t * t;
        for (size_t c = 0; c < d; ++c) set_entry(p->x0, (PetscInt)(o + c), sphere ? token[c] / std::sqrt(n) : token[c]);
        EXPECT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
        r[side] = p->risk;
      }
      for (size_t c = 0; c < d; ++c) set_entry(p->x0, (PetscInt)(o + c), x0[o + c]);
      const double fd = (r[0] - r[1]) / 2e-6;
      diff += (fd - p0[i]) * (fd - p0[i]), norm2 += fd * fd;
    }
    EXPECT_LT(std::sqrt(diff / norm2), 1e-5) << norm;
    EXPECT_GT(std::sqrt(norm2), 1e-4) << norm;
    EXPECT_EQ(ProblemDestroy(p.get()), 0);
  }
}

struct MlpVariant {
  const char *activation, *norm, *causal;
  const char *a = "1", *c = "1"; // the MLP's depth and width exponents
};

std::vector<std::string> mlp_settings(const MlpVariant &v) {
  return tiny({"--model.mlp_width", "6", "--model.mlp_activation", v.activation, "--model.norm", v.norm,
               "--model.causal", v.causal, "--model.mlp_depth_exponent", v.a, "--model.mlp_width_exponent", v.c,
               "--init.mlp_b_gain", "0.5", "--init.mlp_w_mean", "0.3", "--init.mlp_u_gain", "1.5",
               "--model.beta", "1.7", "--data.N", "7", "--init.seed", "11"});
}

std::string MlpVariantName(const MlpVariant &v) {
  const std::string norm = v.norm, a = v.a;
  return std::string(v.activation) + (norm == "none" ? "" : "_" + norm) +
         (std::string(v.causal) == "true" ? "_causal" : "") + (a == "1" ? "" : "_half");
}

class MlpVariants : public ::testing::TestWithParam<MlpVariant> {};

// x(1) of the TS solve equals plain_forward's attention with the MLP
// sublayer written here after each layer: every token, every neuron, a loop.
TEST_P(MlpVariants, ForwardMatchesReferenceLoop) {
  auto p = make_problem(PETSC_COMM_WORLD, mlp_settings(GetParam()), "forward");
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
  const ModelSettings &m = p->settings.model;
  const std::vector<double> neurons = gather(p->neurons.theta);
  const PetscInt d = m.d, E = 2 * d + 1;
  const double scale = std::pow((double)m.L, -m.mlp_depth_exponent) * std::pow((double)m.mlp_width, -m.mlp_width_exponent);
  // The sublayer's step, and on the sphere its projection and retraction.
  auto mlp = [&](PetscInt l, std::vector<double> &x) {
    const std::vector<double> read = plain_read(m, x);
    for (size_t o = 0; o < x.size(); o += (size_t)d) {
      std::vector<double> step((size_t)d, 0.0);
      for (PetscInt j = 0; j < m.mlp_width; ++j) {
        const double *n = neurons.data() + (l * m.mlp_width + j) * E;
        double z = n[d];
        for (PetscInt c = 0; c < d; ++c) z += n[c] * read[o + (size_t)c];
        for (PetscInt c = 0; c < d; ++c) step[(size_t)c] += scale * n[d + 1 + c] * Activate(m.mlp_activation, z);
      }
      double xs = 0, norm = 0;
      for (PetscInt c = 0; c < d; ++c) xs += x[o + (size_t)c] * step[(size_t)c];
      for (PetscInt c = 0; c < d; ++c) {
        x[o + (size_t)c] += step[(size_t)c] - (m.norm == TokenNorm::sphere ? xs * x[o + (size_t)c] : 0.0);
        norm += x[o + (size_t)c] * x[o + (size_t)c];
      }
      for (PetscInt c = 0; c < d && m.norm == TokenNorm::sphere; ++c) x[o + (size_t)c] /= std::sqrt(norm);
    }
  };
  std::vector<double> x = gather(p->x0), attention = x;
  plain_forward(m, gather(p->heads.theta), p->tokens.M, p->tokens.N, x, {}, mlp);
  plain_forward(m, gather(p->heads.theta), p->tokens.M, p->tokens.N, attention);
  const std::vector<double> x1 = gather(p->x1);
  EXPECT_LT(relative_error(x1, x), 1e-12);
  EXPECT_GT(relative_error(x1, attention), 1e-3); // the MLP did move the tokens
}

double mlp_risk(Problem *p) {
  EXPECT_EQ(ProblemEvaluate(p, PETSC_FALSE), 0);
  return p->risk;
}

// The adjoint's g_m = L^a' m^c' dR/dneurons and g = L H dR/dheads against
// central differences of the risk in every entry.
TEST_P(MlpVariants, GradientsMatchFiniteDifferences) {
  auto p = make_problem(PETSC_COMM_WORLD, mlp_settings(GetParam()), "forward");
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_TRUE), 0);
  const ModelSettings &m = p->settings.model;
  const double gm = NeuronGradientScale(m, m.L), gh = GradientScale(m, m.L, m.H);
  for (auto [v, g, scale] : {std::make_tuple(p->neurons.theta, gather(p->neuron_grad), gm),
                             std::make_tuple(p->heads.theta, gather(p->grad), gh)}) {
    const std::vector<double> theta = gather(v);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < theta.size(); ++i) {
      double r[2];
      for (int side = 0; side < 2; ++side) {
        set_entry(v, (PetscInt)i, theta[i] + (side ? -1e-6 : 1e-6));
        ProblemSetHeads(p.get());
        r[side] = mlp_risk(p.get());
      }
      set_entry(v, (PetscInt)i, theta[i]);
      const double fd = (r[0] - r[1]) / 2e-6, adj = g[i] / scale;
      diff += (fd - adj) * (fd - adj), norm += fd * fd;
    }
    ProblemSetHeads(p.get());
    EXPECT_LT(std::sqrt(diff / norm), 1e-6);
    EXPECT_GT(std::sqrt(norm), 1e-4); // not zero
  }
}

INSTANTIATE_TEST_SUITE_P(All, MlpVariants,
                         ::testing::Values(MlpVariant{"relu", "none", "false"}, MlpVariant{"gelu", "none", "true"},
                                           MlpVariant{"tanh", "pre", "false"}, MlpVariant{"erf", "pre", "true"},
                                           MlpVariant{"identity", "none", "false", "0.5", "0.5"},
                                           MlpVariant{"tanh", "sphere", "true"}, MlpVariant{"relu", "sphere", "false", "0.5", "0.5"},
                                           MlpVariant{"gelu", "pre", "true", "0.5", "0.5"}),
                         [](const auto &info) { return MlpVariantName(info.param); });

} // namespace
