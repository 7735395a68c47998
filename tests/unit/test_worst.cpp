// The worst-input search (worst.hpp): its objective's gradient against
// finite differences, and models searched in one batch against each alone.
#include "helpers.hpp"
#include "mft/worst.hpp"

#include <cmath>

using namespace mft;
using namespace mft::test;

namespace {

// A discrete model of L x H heads drawn from `seed` (its initial heads), d = 3.
WorstSide model(const char *L, const char *H, const char *seed, std::vector<std::string> extra = {}) {
  extra.insert(extra.end(), {"--model.L", L, "--model.H", H, "--init.seed", seed, "--model.d", "3", "--model.k", "2",
                             "--init.v_mean", "0.5", "--init.q_gain", "2", "--init.k_gain", "2", "--model.beta", "1.5"});
  return WorstSide{settings(extra), "", nullptr};
}

// The search's own settings (a study's: it reads worst.* and the probes).
Settings search(std::vector<std::string> extra) {
  extra.insert(extra.end(), {"--data.N", "5", "--model.d", "3", "--model.k", "2", "--study.probes", "discrete",
                             "--study.probe_M", "2", "--worst.starts", "3"});
  return settings(extra, "study");
}

std::vector<WorstSide> references(const char *causal = "false") {
  return {model("6", "8", "21", {"--model.causal", causal}), model("6", "8", "22", {"--model.causal", causal}),
          model("6", "8", "23", {"--model.causal", causal})};
}

} // namespace

// dF/dx from the adjoint solves (one for the model, one per search reference)
// against central differences of F, on every coordinate of two starts of two
// models, causal or not.
TEST(Worst, ObjectiveGradientMatchesFiniteDifferences) {
  for (const char *causal : {"false", "true"}) {
    const Settings s = search({});
    const std::vector<WorstSide> models = {model("3", "4", "11", {"--model.causal", causal}),
                                           model("2", "3", "12", {"--model.causal", causal})};
    const std::vector<WorstSide> refs = references(causal);
    std::vector<std::string> names;
    std::vector<double> x = WorstStarts(s, 5, 3, &names); // 5 starts: 2 probes, 3 random
    x.resize(2 * 5 * 3);                                   // two starts
    x.insert(x.end(), x.begin(), x.end());                 // each model's
    std::vector<double> F, G, unused;
    ASSERT_EQ(WorstObjective(PETSC_COMM_WORLD, s, models, refs, x, &F, &G), 0);
    ASSERT_EQ(F.size(), 4u);
    auto at = [&](size_t i, double step) { // F at x + step e_i
      std::vector<double> xs = x, Fs;
      xs[i] += step;
      EXPECT_EQ(WorstObjective(PETSC_COMM_WORLD, s, models, refs, xs, &Fs, &unused), 0);
      for (size_t o = 0; o < F.size(); ++o) // a start's objective depends on its own tokens only
        if (o != i / 15) EXPECT_EQ(Fs[o], F[o]) << "start " << o << " moved with a token of start " << i / 15;
      return Fs[i / 15];
    };
    double worst = 0;
    const double h = 1e-4;
    for (size_t i = 0; i < x.size(); ++i) { // fourth-order central differences
      const double fd = (8 * (at(i, h) - at(i, -h)) - (at(i, 2 * h) - at(i, -2 * h))) / (12 * h);
      worst = std::fmax(worst, std::fabs(fd - G[i]) / std::fmax(std::fabs(G[i]), 1e-3));
    }
    EXPECT_LT(worst, 1e-8) << "causal " << causal;
  }
}

// Models searched together (the references run every model's starts in one
// batch, with worst.keep leaving some inactive) find what each finds alone.
TEST(Worst, ModelsInOneBatchEqualEachAlone) {
  const Settings s = search({"--worst.keep", "2", "--worst.steps", "12"});
  const std::vector<WorstSide> models = {model("3", "4", "11"), model("2", "3", "12")}, refs = references();
  std::vector<WorstResult> both, one;
  ASSERT_EQ(WorstSearch(PETSC_COMM_WORLD, s, models, refs, "", &both), 0);
  ASSERT_EQ(both.size(), 2u);
  for (size_t j = 0; j < 2; ++j) {
    ASSERT_EQ(WorstSearch(PETSC_COMM_WORLD, s, {models[j]}, refs, "", &one), 0);
    EXPECT_LT(relative_error(both[j].tokens, one[0].tokens), 1e-12) << j;
    EXPECT_NEAR(both[j].err, one[0].err, 1e-12 * one[0].err) << j;
    EXPECT_EQ(both[j].best, one[0].best) << j;
    EXPECT_EQ(both[j].estimator, "cross-fit corrected"); // 3 references: 1 searched, 2 held out
    EXPECT_EQ(both[j].heldout_e2.size(), 2u);
    EXPECT_GT(both[j].raw, both[j].initial) << "the ascent did not move model " << j;
    size_t ascended = 0;
    for (double e : both[j].start_err) ascended += std::isfinite(e);
    EXPECT_EQ(ascended, 2u) << "worst.keep = 2";
  }
}
