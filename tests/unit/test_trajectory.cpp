// Token trajectories through depth: the end slices are the solve's input and
// output (bitwise), a middle slice is what a model of the remaining layers
// starts from and its adjoint what that model's adjoint returns, the same on
// any number of ranks; sizes that cannot work are refused before any work.
#include "helpers.hpp"
#include "mft/flow/limit.hpp"

#include <algorithm>

using namespace mft;
using namespace mft::test;

namespace {

struct Recorded {
  std::vector<double> x0, x1, p0, p1, theta, targets;
  std::vector<std::vector<double>> tokens, adjoint;
};

Recorded record(MPI_Comm comm, const std::vector<std::string> &args) {
  Recorded r;
  auto p = make_problem(comm, args);
  Trajectory t;
  EXPECT_EQ(ProblemRecordTrajectory(p.get(), &t), 0);
  EXPECT_EQ(ProblemEvaluate(p.get(), PETSC_TRUE), 0);
  EXPECT_TRUE(t.complete(t.have_tokens) && t.complete(t.have_adjoint));
  for (PetscInt k = 0; k <= t.S; ++k) {
    r.tokens.push_back(gather(t.tokens[k]));
    r.adjoint.push_back(gather(t.adjoint[k]));
  }
  r.x0 = gather(p->x0), r.x1 = gather(p->x1), r.p0 = gather(p->adjoint), r.theta = gather(p->heads.theta);
  r.targets = gather(p->targets.y);
  // dR/dx(1) from the risk alone.
  Vec p1;
  double risk;
  EXPECT_EQ(VecDuplicate(p->x1, &p1), 0);
  EXPECT_EQ(RiskEvaluate(p->tokens, p->targets, nullptr, p->x1, p1, &risk), 0);
  r.p1 = gather(p1);
  EXPECT_EQ(VecDestroy(&p1), 0);
  EXPECT_EQ(TrajectoryDestroy(&t), 0);
  return r;
}

void set_all(Vec v, const std::vector<double> &all) {
  PetscInt lo, hi;
  PetscScalar *a;
  EXPECT_EQ(VecGetOwnershipRange(v, &lo, &hi), 0);
  EXPECT_EQ(VecGetArray(v, &a), 0);
  for (PetscInt i = lo; i < hi; ++i) a[i - lo] = all[i];
  EXPECT_EQ(VecRestoreArray(v, &a), 0);
}

const std::vector<std::string> kArgs = {"--model.L", "8", "--output.trajectory", "4", "--parallel.head_groups", "1"};

TEST(Trajectory, EndSlicesAreTheSolvesInputAndOutput) {
  for (const std::string kind : {"qkv", "qkvo"}) {
    const Recorded r = record(PETSC_COMM_WORLD, tiny({"--model.L", "8", "--output.trajectory", "4", "--model.head_kind", kind}));
    ASSERT_EQ(r.tokens.size(), 5u);
    EXPECT_EQ(r.tokens.front(), r.x0) << kind;
    EXPECT_EQ(r.tokens.back(), r.x1) << kind;
    EXPECT_EQ(r.adjoint.front(), r.p0) << kind; // dR/dx(0) of the adjoint solve
    EXPECT_EQ(r.adjoint.back(), r.p1) << kind;  // dR/dx(1) of the risk
    EXPECT_GT(relative_error(r.tokens[2], r.x0), 1e-3) << kind; // the tokens move
  }
}

// Layers n..L-1 of an L-layer model are an (L - n)-layer model whose Euler
// step 1/(L - n) is turned into 1/L by scaling V by (L - n)/L (qkv heads are
// linear in V): from x(n/L) it gives x(1), and its dR/dx(0) is p(n/L).
TEST(Trajectory, MiddleSliceIsWhereTheRemainingLayersStart) {
  for (const std::string causal : {"false", "true"}) {
    std::vector<std::string> args = tiny(kArgs);
    args.insert(args.end(), {"--model.causal", causal});
    const Recorded r = record(PETSC_COMM_WORLD, args);
    const PetscInt L = 8, S = 4, k = 1, n = k * L / S, rest = L - n; // from depth 1/4: 6 layers
    std::vector<std::string> tail = args;
    for (size_t i = 0; i + 1 < tail.size(); i += 2)
      if (tail[i] == "--model.L") tail[i + 1] = std::to_string(rest);
      else if (tail[i] == "--output.trajectory") tail[i + 1] = "0";
    auto p = make_problem(PETSC_COMM_WORLD, tail);
    const HeadShape &sh = p->heads.shape;
    const size_t per_layer = (size_t)(p->heads.H * sh.size);
    std::vector<double> theta(r.theta.begin() + (long)(n * per_layer), r.theta.end());
    for (size_t h = 0; h < theta.size() / (size_t)sh.size; ++h)
      for (PetscInt e = 0; e < sh.dv * sh.d; ++e) theta[h * sh.size + sh.offV + e] *= (double)rest / (double)L;
    set_all(p->heads.theta, theta);
    EXPECT_EQ(ProblemSetHeads(p.get()), 0);
    set_all(p->x0, r.tokens[k]);
    set_all(p->targets.y, r.targets);
    ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_TRUE), 0);
    EXPECT_LT(relative_error(gather(p->x1), r.x1), 1e-12) << "causal " << causal;
    EXPECT_LT(relative_error(gather(p->adjoint), r.adjoint[k]), 1e-12) << "causal " << causal;
    EXPECT_GT(relative_error(r.adjoint[k], r.adjoint[0]), 1e-6) << "causal " << causal; // not a constant adjoint
  }
}

// On every grid the rank count allows (15 tokens cut unevenly by the token
// groups, 7 heads by the head groups), qkv and qkvo, causal.
TEST(Trajectory, SameOnEveryRankCount) {
  int size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  for (const std::string kind : {"qkv", "qkvo"}) {
    const std::vector<std::string> args = tiny({"--model.L", "6", "--model.H", "7", "--output.trajectory", "3",
                                                "--model.causal", "true", "--model.head_kind", kind});
    const Recorded one = record(PETSC_COMM_SELF, args);
    for (int hg = 1; hg <= std::min(size, 7); ++hg) {
      if (size % hg) continue;
      std::vector<std::string> grid = args;
      grid.insert(grid.end(), {"--parallel.head_groups", std::to_string(hg)});
      const Recorded all = record(PETSC_COMM_WORLD, grid);
      for (size_t k = 0; k < one.tokens.size(); ++k) {
        EXPECT_LT(relative_error(all.tokens[k], one.tokens[k]), 1e-12) << kind << " head groups " << hg << " slice " << k;
        EXPECT_LT(relative_error(all.adjoint[k], one.adjoint[k]), 1e-12) << kind << " head groups " << hg << " slice " << k;
      }
    }
  }
}

// The adaptive reference lands on the depths: its last slice is x(1) and its
// first adjoint slice p(0), bitwise; landing moves x(1) by less than the tolerance.
TEST(Trajectory, LimitLandsOnTheDepths) {
  const Settings s = LimitSettingsFor(settings(tiny({"--limit.heads", "16", "--output.trajectory", "5"}), "limit"));
  LimitResult with, without;
  Trajectory t;
  ASSERT_EQ(LimitSolve(PETSC_COMM_WORLD, s, &with, nullptr, &t), 0);
  ASSERT_TRUE(t.complete(t.have_tokens) && t.complete(t.have_adjoint));
  EXPECT_EQ(gather(t.tokens.back()), with.tokens);
  EXPECT_EQ(gather(t.adjoint.front()), with.adjoint);
  Settings plain = s;
  plain.output.trajectory = 0;
  ASSERT_EQ(LimitSolve(PETSC_COMM_WORLD, plain, &without), 0);
  EXPECT_LT(relative_error(with.tokens, without.tokens), 1e-8);
  EXPECT_LT(relative_error(with.adjoint, without.adjoint), 1e-8);
  EXPECT_EQ(TrajectoryDestroy(&t), 0);
}

TEST(Trajectory, ImpossibleSizesRefusedBeforeWork) {
  Problem p;
  // 3 does not divide 8 layers.
  PetscErrorCode err = ProblemCreate(PETSC_COMM_WORLD, settings(tiny({"--model.L", "8", "--output.trajectory", "3"})), &p);
  EXPECT_EQ(err, PETSC_ERR_USER_INPUT);
  if (!err) ProblemDestroy(&p);
  // 4097 slices of 3e7 numbers, tokens and adjoint: 2 TB, beyond this node (checked before the data is drawn).
  err = ProblemCreate(PETSC_COMM_WORLD,
                      settings(tiny({"--model.L", "4096", "--output.trajectory", "4096", "--data.M", "10000",
                                     "--data.N", "1000"})),
                      &p);
  EXPECT_EQ(err, PETSC_ERR_USER_INPUT);
  if (!err) ProblemDestroy(&p);
}

} // namespace
