// The worst-input search (worst.hpp): its objective's gradient against
// finite differences, and models searched in one batch against each alone.
#include "helpers.hpp"
#include "mft/worst/worst.hpp"

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
    std::vector<double> none, unused_weights;
    std::vector<double> x = WorstStarts(s, 5, 3, false, &names, &none); // 5 starts: 2 probes, 3 random
    x.resize(2 * 5 * 3);                                                 // two starts
    x.insert(x.end(), x.begin(), x.end());                               // each model's
    std::vector<double> F, G, unused;
    ASSERT_EQ(WorstObjective(PETSC_COMM_WORLD, s, models, refs, x, none, &F, &G, &unused_weights), 0);
    ASSERT_EQ(F.size(), 4u);
    auto at = [&](size_t i, double step) { // F at x + step e_i
      std::vector<double> xs = x, Fs;
      xs[i] += step;
      EXPECT_EQ(WorstObjective(PETSC_COMM_WORLD, s, models, refs, xs, none, &Fs, &unused, &unused_weights), 0);
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
  size_t moved = 0; // models whose ascent beat their best start (the collapsed start, a fixed point, may be it)
  for (size_t j = 0; j < 2; ++j) {
    ASSERT_EQ(WorstSearch(PETSC_COMM_WORLD, s, {models[j]}, refs, "", &one), 0);
    EXPECT_LT(relative_error(both[j].tokens, one[0].tokens), 1e-12) << j;
    EXPECT_NEAR(both[j].err, one[0].err, 1e-12 * one[0].err) << j;
    EXPECT_EQ(both[j].best, one[0].best) << j;
    EXPECT_EQ(both[j].estimator, "cross-fit corrected"); // 3 references: 1 searched, 2 held out
    EXPECT_EQ(both[j].heldout_e2.size(), 2u);
    EXPECT_GE(both[j].raw, both[j].initial * (1 - 1e-12)) << "the ascent lost ground on model " << j;
    moved += both[j].raw > both[j].initial * (1 + 1e-9);
    size_t ascended = 0;
    for (double e : both[j].start_err) ascended += std::isfinite(e);
    EXPECT_EQ(ascended, 3u) << "worst.keep = 2, and the collapsed start";
    EXPECT_GE(both[j].raw, both[j].collapsed) << "the collapsed start is one of the starts";
  }
  EXPECT_GE(moved, 1u) << "the ascent moved no model";
}

// A measure search's objective (worst.atoms): dF/dx and dF/dw from the
// adjoint solves against fourth-order central differences of F on every atom
// coordinate and weight of one start of each of two models (the references
// run both), with the plain risk and with normalized tokens on the sphere
// (F's derivative in the ambient coordinates of the atoms). ctest runs it
// under weights_np1 and weights_np3.
TEST(Measure, ObjectiveGradientMatchesFiniteDifferences) {
  for (const char *norm : {"none", "sphere"}) {
    const Settings s = search({"--worst.atoms", "4", "--model.norm", norm});
    const std::vector<WorstSide> models = {model("3", "4", "11", {"--model.norm", norm}),
                                           model("2", "3", "12", {"--model.norm", norm})};
    const std::vector<WorstSide> refs = {model("6", "8", "21", {"--model.norm", norm}),
                                         model("6", "8", "22", {"--model.norm", norm})};
    std::vector<std::string> names;
    std::vector<double> w;
    std::vector<double> x = WorstStarts(s, 4, 3, true, &names, &w); // 2 probes, 3 random starts of 4 atoms
    x.erase(x.begin(), x.begin() + 3 * 4 * 3), w.erase(w.begin(), w.begin() + 3 * 4); // one random start
    x.resize(4 * 3), w.resize(4);
    x.insert(x.end(), x.begin(), x.end()), w.insert(w.end(), w.begin(), w.end()); // each model's
    std::vector<double> F, G, GW, unused, unused_weights;
    ASSERT_EQ(WorstObjective(PETSC_COMM_WORLD, s, models, refs, x, w, &F, &G, &GW), 0);
    ASSERT_EQ(F.size(), 2u);
    ASSERT_EQ(GW.size(), w.size());
    auto at = [&](std::vector<double> xs, std::vector<double> ws, size_t start) {
      std::vector<double> Fs;
      EXPECT_EQ(WorstObjective(PETSC_COMM_WORLD, s, models, refs, xs, ws, &Fs, &unused, &unused_weights), 0);
      return Fs[start];
    };
    const double h = 1e-4;
    auto fd = [&](auto moved) { return (8 * (moved(h) - moved(-h)) - (moved(2 * h) - moved(-2 * h))) / (12 * h); };
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double g = fd([&](double step) { std::vector<double> xs = x; xs[i] += step; return at(xs, w, i / 12); });
      worst = std::fmax(worst, std::fabs(g - G[i]) / std::fmax(std::fabs(G[i]), 1e-3));
    }
    for (size_t i = 0; i < w.size(); ++i) {
      const double g = fd([&](double step) { std::vector<double> ws = w; ws[i] += step; return at(x, ws, i / 4); });
      worst = std::fmax(worst, std::fabs(g - GW[i]) / std::fmax(std::fabs(GW[i]), 1e-3));
    }
    EXPECT_LT(worst, 1e-8) << norm;
  }
}

// Integer multiplicities in the search: a measure of K atoms with weights
// n_j / N has the objective of the N-token sequence that repeats atom j n_j
// times (1e-12): what lets a measure search start from a sequence's input.
TEST(Measure, MultiplicitiesGiveTheSequencesObjective) {
  const std::vector<WorstSide> models = {model("3", "4", "11")}, refs = references();
  std::vector<std::string> names;
  std::vector<double> none, w;
  Settings seq = search({});
  seq.data.N = 6;
  const Settings measure = search({"--worst.atoms", "3"});
  std::vector<double> atoms = WorstStarts(measure, 3, 3, true, &names, &w);
  atoms.resize(9);
  const std::vector<double> counts = {1.0 / 6, 3.0 / 6, 2.0 / 6};
  std::vector<double> repeated;
  for (size_t j = 0; j < 3; ++j)
    for (int c = 0; c < (int)std::lround(counts[j] * 6); ++c)
      repeated.insert(repeated.end(), atoms.begin() + (long)(3 * j), atoms.begin() + (long)(3 * j + 3));
  std::vector<double> Fm, Fs, G, GW;
  ASSERT_EQ(WorstObjective(PETSC_COMM_WORLD, measure, models, refs, atoms, counts, &Fm, &G, &GW), 0);
  ASSERT_EQ(WorstObjective(PETSC_COMM_WORLD, seq, models, refs, repeated, none, &Fs, &G, &GW), 0);
  EXPECT_NEAR(Fm[0], Fs[0], 1e-12 * Fs[0]);
  EXPECT_GT(Fs[0], 0.0);
}
