// One learning problem for models of every shape: a teacher of its own shape
// (data.teacher_L x data.teacher_H) gives the same targets to every student.
#include "helpers.hpp"

using namespace mft;
using namespace mft::test;

namespace {

std::vector<double> targets(const ProblemPtr &p) {
  return p->targets.kind == LossKind::token ? gather(p->targets.y) : p->targets.z;
}

TEST(Teacher, OwnShapeGivesTheSameTargetsToEveryStudent) {
  const std::vector<std::string> teacher = {"--data.teacher_L", "4", "--data.teacher_H", "5"};
  auto small = make_problem(PETSC_COMM_WORLD, tiny({"--model.L", "2", "--model.H", "3", teacher[0], teacher[1], teacher[2], teacher[3]}));
  auto large = make_problem(PETSC_COMM_WORLD, tiny({"--model.L", "6", "--model.H", "2", teacher[0], teacher[1], teacher[2], teacher[3]}));
  // The teacher itself: a model of that shape whose heads come from data.teacher_seed (default 2).
  auto self = make_problem(PETSC_COMM_WORLD, tiny({"--model.L", "4", "--model.H", "5", "--init.seed", "2"}));
  ASSERT_EQ(ProblemEvaluate(self.get(), PETSC_FALSE), 0);
  const std::vector<double> expect = gather(self->x1);
  EXPECT_LT(relative_error(targets(small), expect), 1e-12);
  EXPECT_LT(relative_error(targets(large), expect), 1e-12);
  // A student of the teacher's shape: the same targets again (its own-shape path).
  auto same = make_problem(PETSC_COMM_WORLD, tiny({"--model.L", "4", "--model.H", "5"}));
  EXPECT_LT(relative_error(targets(same), expect), 1e-12);
}

// data.teacher_*_exponent: one teacher for students of either regime. A
// student at a = c = 1/2 of any shape, the teacher's own included, gets the
// targets of the a = c = 1 teacher; without them its teacher takes its own
// exponents, and the targets differ.
TEST(Teacher, OwnExponentsGiveTheSameTargetsToEveryRegime) {
  auto self = make_problem(PETSC_COMM_WORLD, tiny({"--model.L", "4", "--model.H", "5", "--init.seed", "2"}));
  ASSERT_EQ(ProblemEvaluate(self.get(), PETSC_FALSE), 0);
  const std::vector<double> expect = gather(self->x1);
  auto student = [](const char *L, const char *H, bool exponents) {
    std::vector<std::string> a = {"--model.L", L, "--model.H", H, "--model.depth_exponent", "0.5",
                                  "--model.head_exponent", "0.5", "--data.teacher_L", "4", "--data.teacher_H", "5"};
    if (exponents) a.insert(a.end(), {"--data.teacher_depth_exponent", "1", "--data.teacher_head_exponent", "1"});
    return make_problem(PETSC_COMM_WORLD, tiny(a));
  };
  EXPECT_LT(relative_error(targets(student("2", "3", true)), expect), 1e-12);
  EXPECT_LT(relative_error(targets(student("4", "5", true)), expect), 1e-12);
  EXPECT_GT(relative_error(targets(student("4", "5", false)), expect), 1e-3);
  EXPECT_GT(relative_error(targets(student("2", "3", false)), expect), 1e-3);
}

// data.embed: one task at every d. A student in R^7 sees the tokens of R^3
// padded with zeros and the targets of the teacher in R^3 padded likewise:
// both the R^3 student's, entry by entry, and zero beyond.
TEST(Teacher, EmbeddedTaskIsTheSmallOnePadded) {
  const std::vector<std::string> teacher = {"--data.teacher_L", "4", "--data.teacher_H", "5", "--data.embed", "3"};
  auto small = make_problem(PETSC_COMM_WORLD, tiny({"--model.L", "2", "--model.H", "3", teacher[0], teacher[1],
                                                    teacher[2], teacher[3], teacher[4], teacher[5]}));
  auto wide = make_problem(PETSC_COMM_WORLD, tiny({"--model.L", "2", "--model.H", "3", "--model.d", "7", teacher[0],
                                                   teacher[1], teacher[2], teacher[3], teacher[4], teacher[5]}));
  const std::vector<double> ys = targets(small), yw = targets(wide), xs = gather(small->x0), xw = gather(wide->x0);
  ASSERT_EQ(yw.size(), ys.size() / 3 * 7);
  double far = 0;
  for (size_t t = 0; t < ys.size() / 3; ++t)
    for (size_t c = 0; c < 7; ++c) {
      EXPECT_EQ(yw[t * 7 + c], c < 3 ? ys[t * 3 + c] : 0.0) << "token " << t << ", coordinate " << c;
      EXPECT_EQ(xw[t * 7 + c], c < 3 ? xs[t * 3 + c] : 0.0) << "token " << t << ", coordinate " << c;
      far = std::fmax(far, std::fabs(ys[t * 3 + c % 3]));
    }
  EXPECT_GT(far, 0.1); // targets that are not zero
}

TEST(Teacher, PooledLossAndPerturbationRefused) {
  auto pooled = make_problem(PETSC_COMM_WORLD, tiny({"--loss.kind", "pooled", "--data.teacher_L", "5"}));
  auto reference = make_problem(PETSC_COMM_WORLD, tiny({"--loss.kind", "pooled", "--model.L", "5"}));
  EXPECT_LT(relative_error(targets(pooled), targets(reference)), 1e-12);
  Problem p;
  const PetscErrorCode err =
      ProblemCreate(PETSC_COMM_WORLD, settings(tiny({"--data.teacher_L", "5", "--data.teacher_perturbation", "0.1"})), &p);
  EXPECT_EQ(err, PETSC_ERR_USER_INPUT);
  if (!err) EXPECT_EQ(ProblemDestroy(&p), 0);
}

} // namespace
