// A study's plan (study_plan.hpp) on synthetic prices: its makespan against
// closed forms and an independent replay, its groups, its Slurm tasks.
#include "helpers.hpp"
#include "mft/studies/study_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

using namespace mft;

namespace {

// Prices of a case of `work` core-seconds spread at parallel efficiency e
// per doubling of ranks (1: perfect), on each size of PlanSizes(P).
std::vector<double> spread(double work, double e, PetscInt P) {
  std::vector<double> t;
  double eff = 1;
  for (PetscInt g : PlanSizes(P)) {
    t.push_back(work / (g * eff));
    eff *= e;
  }
  return t;
}

// The plan replayed, independently of its simulation, as one stream of
// events over all groups: the group free first takes the next case of its
// size in PlanOrder, or, with none left, splits (SplitGroup) at that time.
double replay(const StudyPlan &plan, const std::vector<std::vector<double>> &t) {
  struct Group {
    PetscInt size;
    double free;
  };
  std::vector<Group> groups;
  for (PetscInt g : plan.groups) groups.push_back({g, 0.0});
  std::map<PetscInt, std::vector<size_t>> left; // per size: its cases still to take, in order
  for (size_t j = 0; j < plan.sizes.size(); ++j) left[plan.sizes[j]] = PlanOrder(plan, t, j);
  double makespan = 0;
  size_t taken = 0;
  while (!groups.empty()) {
    auto first = std::min_element(groups.begin(), groups.end(), [](const Group &a, const Group &b) {
      return a.free < b.free || (a.free == b.free && a.size > b.size);
    });
    Group g = *first;
    groups.erase(first);
    auto &mine = left[g.size];
    if (!mine.empty()) {
      const size_t j = (size_t)(std::find(plan.sizes.begin(), plan.sizes.end(), g.size) - plan.sizes.begin());
      g.free += t[mine.front()][j];
      mine.erase(mine.begin());
      makespan = std::max(makespan, g.free);
      groups.push_back(g);
      ++taken;
    } else {
      for (PetscInt piece : SplitGroup(g.size, plan.sizes)) groups.push_back({piece, g.free});
    }
  }
  return taken == t.size() ? makespan : INFINITY;
}

void expect_consistent(const StudyPlan &plan, const std::vector<std::vector<double>> &t) {
  PetscInt ranks = 0;
  for (PetscInt g : plan.groups) ranks += g;
  EXPECT_EQ(ranks, plan.P) << "every rank is in a group";
  EXPECT_TRUE(std::is_sorted(plan.groups.rbegin(), plan.groups.rend())) << "groups not largest first";
  ASSERT_EQ(plan.size_of.size(), t.size());
  double serial = 0, fastest = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_TRUE(std::isfinite(t[i][plan.size_of[i]])) << "case " << i << " on a size it cannot run on";
    EXPECT_NEAR(plan.end[i] - plan.start[i], t[i][plan.size_of[i]], 1e-12);
    serial += t[i][0];
    fastest = std::max(fastest, *std::min_element(t[i].begin(), t[i].end()));
  }
  EXPECT_NEAR(plan.serial_work, serial, 1e-9 * serial);
  EXPECT_DOUBLE_EQ(plan.makespan, replay(plan, t));
  EXPECT_GE(plan.makespan, fastest * (1 - 1e-12));
}

} // namespace

TEST(StudyPlan, GroupsSplitIntoTheNextSizes) {
  EXPECT_EQ(SplitGroup(8, PlanSizes(8)), std::vector<PetscInt>({4, 4}));
  EXPECT_EQ(SplitGroup(6, PlanSizes(6)), std::vector<PetscInt>({4, 2}));
  EXPECT_EQ(SplitGroup(3, PlanSizes(3)), std::vector<PetscInt>({2, 1}));
  EXPECT_TRUE(SplitGroup(1, PlanSizes(8)).empty());
}

TEST(StudyPlan, SizesArePowersOfTwo) {
  EXPECT_EQ(PlanSizes(1), std::vector<PetscInt>({1}));
  EXPECT_EQ(PlanSizes(6), std::vector<PetscInt>({1, 2, 4, 6}));
  EXPECT_EQ(PlanSizes(64).back(), 64);
}

// Equal cases with perfect scaling: every core busy, one case a rank.
TEST(StudyPlan, EqualCasesFillEveryCore) {
  std::vector<std::vector<double>> t(8, spread(1.0, 1.0, 4));
  const StudyPlan plan = PlanStudy(t, 4);
  expect_consistent(plan, t);
  EXPECT_DOUBLE_EQ(plan.makespan, 2.0);
  EXPECT_DOUBLE_EQ(plan.efficiency(), 1.0);
}

// One case of 8 core-seconds that spreads perfectly beside 8 of 1 s that do
// not spread at all: the bound 16 / 4 = 4 s is met by putting the large case
// on a group of its own while the small ones run a rank each.
TEST(StudyPlan, ALargeCaseGetsRanksAndTheSmallOnesFillTheRest) {
  std::vector<std::vector<double>> t = {spread(8.0, 1.0, 4)};
  for (int i = 0; i < 8; ++i) t.push_back({1.0, 1.0, 1.0});
  const StudyPlan plan = PlanStudy(t, 4);
  expect_consistent(plan, t);
  EXPECT_DOUBLE_EQ(plan.makespan, 4.0);
  EXPECT_GT(plan.sizes[plan.size_of[0]], 1) << "the large case runs on one rank";
  for (size_t i = 1; i < t.size(); ++i) EXPECT_EQ(plan.sizes[plan.size_of[i]], 1);
}

// Against serial on P ranks (every case on all of them in turn), on cases of
// costs four orders of magnitude apart with the small ones scaling badly.
TEST(StudyPlan, NeverSlowerThanSerialAndWithinTheBound) {
  for (PetscInt P : {2, 3, 8, 64, 512}) {
    std::vector<std::vector<double>> t;
    for (int i = 0; i < 8; ++i) t.push_back(spread(1000.0 * (1 + i % 3), 0.95, P));
    for (int i = 0; i < 240; ++i) t.push_back(spread(0.1 + 0.01 * i, 0.6, P));
    const StudyPlan plan = PlanStudy(t, P);
    expect_consistent(plan, t);
    double serial = 0;
    for (const auto &c : t) serial += c.back();
    EXPECT_LE(plan.makespan, serial * (1 + 1e-12)) << P << " ranks";
    EXPECT_LE(plan.efficiency(), 1.0 + 1e-12) << P << " ranks";
  }
}

// Ranks that no size's share takes (6 ranks, one case best on 4) still form
// groups, which split down and run nothing.
TEST(StudyPlan, EveryRankIsInAGroup) {
  const std::vector<std::vector<double>> t = {{400.0, 200.0, 100.0, 150.0}};
  const StudyPlan plan = PlanStudy(t, 6);
  expect_consistent(plan, t);
  EXPECT_DOUBLE_EQ(plan.makespan, 100.0);
}

// A case that cannot be spread (infinite beyond one rank) stays on one rank.
TEST(StudyPlan, CasesStayWhereTheyCanRun) {
  std::vector<std::vector<double>> t = {{50.0, INFINITY, INFINITY}, spread(10.0, 1.0, 4), spread(10.0, 1.0, 4)};
  const StudyPlan plan = PlanStudy(t, 4);
  expect_consistent(plan, t);
  EXPECT_EQ(plan.size_of[0], 0u);
  EXPECT_DOUBLE_EQ(plan.makespan, 50.0);
}

// Slurm tasks: every case in one task, of its size, within the limit unless alone.
TEST(StudyPlan, TasksHoldEveryCaseOnceWithinTheLimit) {
  std::vector<std::vector<double>> t;
  for (int i = 0; i < 6; ++i) t.push_back(spread(500.0, 0.95, 64));
  for (int i = 0; i < 300; ++i) t.push_back(spread(1.0 + i, 0.5, 64));
  const StudyPlan plan = PlanStudy(t, 64);
  const double limit = 600;
  std::map<size_t, int> seen;
  for (const PlanTask &task : PlanTasks(plan, t, limit)) {
    ASSERT_FALSE(task.cases.empty());
    double sum = 0;
    for (size_t i : task.cases) {
      ++seen[i];
      EXPECT_EQ(plan.sizes[plan.size_of[i]], task.ranks);
      sum += t[i][plan.size_of[i]];
    }
    EXPECT_NEAR(sum, task.seconds, 1e-9 * sum);
    if (task.cases.size() > 1) EXPECT_LE(task.seconds, limit);
  }
  EXPECT_EQ(seen.size(), t.size());
  for (auto [i, n] : seen) EXPECT_EQ(n, 1) << "case " << i;
}

// The margin (parallel.plan_margin): two equal cases that scale at 0.97 on
// 2 ranks are predicted 3.1% faster side by side on one rank each than one
// after the other on both; that plan is taken with a margin of 3% and the
// serial schedule with one of 5%.
TEST(StudyPlan, AGainWithinTheMarginKeepsTheSerialSchedule) {
  const std::vector<std::vector<double>> t(2, spread(2.0, 0.97, 2));
  const StudyPlan loose = PlanStudy(t, 2, 0.03), strict = PlanStudy(t, 2, 0.05);
  expect_consistent(loose, t), expect_consistent(strict, t);
  EXPECT_EQ(loose.groups, std::vector<PetscInt>({1, 1}));
  EXPECT_DOUBLE_EQ(loose.makespan, 2.0);
  EXPECT_EQ(strict.groups, std::vector<PetscInt>({2}));
  EXPECT_DOUBLE_EQ(strict.makespan, PlanSerial(t, 2).makespan);
}

// A mean-field reference on a group that shares its node with another is
// priced parallel.contention times its time alone (the case overhead aside);
// on all the node's ranks, and every discrete model anywhere, as before.
TEST(StudyPlan, ReferencesBesideOthersArePricedWithTheContention) {
  const std::vector<std::string> study = {"--study.L", "2", "--study.H", "2", "--study.seeds", "1", "--limit.heads", "64"};
  auto prices = [&](const char *contention) {
    std::vector<std::string> args = study;
    args.insert(args.end(), {"--parallel.contention", contention});
    const Settings s = mft::test::settings(args, "study");
    std::vector<std::vector<double>> t;
    EXPECT_EQ(StudyPrices(PETSC_COMM_SELF, args, s, StudyCases(s), 2, 0, &t), 0);
    return t;
  };
  const Settings s = mft::test::settings(study, "study");
  const std::vector<StudyCase> cases = StudyCases(s);
  const std::vector<std::vector<double>> alone = prices("1"), beside = prices("1.5");
  const double overhead = s.parallel.case_overhead;
  for (size_t i = 0; i < cases.size(); ++i) {
    const double factor = cases[i].reference ? 1.5 : 1.0;
    EXPECT_NEAR(beside[i][0] - overhead, factor * (alone[i][0] - overhead), 1e-12 * alone[i][0]) << i;
    EXPECT_DOUBLE_EQ(beside[i][1], alone[i][1]) << i << " on both ranks";
  }
}
