// Options: INI + command line, overrides, and each kind of bad value refused.
#include "helpers.hpp"

#include <cstdio>
#include <fstream>

using namespace mft;
using namespace mft::test;

namespace {

PetscErrorCode parse(const std::vector<std::string> &args, Settings *s) {
  PetscBool help;
  return SettingsParse(PETSC_COMM_WORLD, "train", args, s, &help);
}

std::string write_config(const std::string &name, const std::string &text) {
  int rank;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  const std::string path = "test_settings_" + name + ".cfg";
  if (rank == 0) std::ofstream(path) << text;
  MPI_Barrier(PETSC_COMM_WORLD);
  return path;
}

TEST(Settings, ConfigFileThenCommandLineOverrides) {
  const std::string cfg = write_config("ok", "[model]\nL = 12\nhead_kind = qkvo\n[train]\nlr = 0.05\n");
  Settings s;
  ASSERT_EQ(parse({"--config", cfg, "--model.L", "7"}, &s), 0);
  EXPECT_EQ(s.model.L, 7);  // command line wins
  EXPECT_EQ(s.model.head_kind, HeadKind::qkvo);
  EXPECT_DOUBLE_EQ(s.train.lr, 0.05);
  EXPECT_TRUE(s.is_explicit("model.L"));
  EXPECT_FALSE(s.is_explicit("model.H"));
  ASSERT_EQ(parse({"--model.L", "3", "--model.H=2", "--model.L", "4", "--model.H=5"}, &s), 0);
  EXPECT_EQ(s.model.L, 4); // a repeated key: the last one wins
  EXPECT_EQ(s.model.H, 5);
}

TEST(Settings, BadValuesAreRefused) {
  const std::vector<std::vector<std::string>> bad = {
      {"--model.Lx", "3"},          {"--model.L", "-1"},           {"--model.L", "abc"},
      {"--model.L", "0"},           {"--train.lr", "0"},           {"--train.lr", "-0.1"},
      {"--data.family", "cauchy"},  {"--model.head_kind", "qkvv"}, {"--model.causal", "maybe"},
      {"--config", "no/such.cfg"},  {"--data.param_min", "2", "--data.param_max", "1"},
      {"--model.beta", "nan"}};
  for (auto &args : bad) {
    Settings s;
    EXPECT_EQ(parse(args, &s), PETSC_ERR_USER_INPUT) << args[0];
  }
  Settings s;
  ASSERT_EQ(parse({"--config", write_config("bad", "[model]\nLL = 3\n")}, &s), PETSC_ERR_USER_INPUT);
}

TEST(Settings, SizesAreChecked) {
  Settings s;
  ASSERT_EQ(parse({"--model.k", "5", "--model.d", "3"}, &s), 0); // k is a sum index: wider keys are a model
  EXPECT_EQ(SettingsCheck(PETSC_COMM_WORLD, s), 0);
  ASSERT_EQ(parse({"--data.M", "100000", "--data.N", "100000", "--model.d", "100"}, &s), 0);
  EXPECT_EQ(SettingsCheck(PETSC_COMM_WORLD, s), PETSC_ERR_USER_INPUT);
  ASSERT_EQ(parse({"--model.H", "3", "--model.d", "3"}, &s), 0);
  EXPECT_EQ(SettingsCheck(PETSC_COMM_WORLD, s), 0);
}

TEST(Settings, PetscArgumentsAreSplitOff) {
  const char *argv[] = {"mft", "--model.L", "4", "-ts_monitor", "-ts_rtol", "1e-8", "--train.lr", "-0.5", "-log_view"};
  std::vector<std::string> petsc;
  auto mine = split_arguments(9, const_cast<char **>(argv), petsc);
  EXPECT_EQ(mine, (std::vector<std::string>{"--model.L", "4", "--train.lr", "-0.5"}));
  EXPECT_EQ(petsc, (std::vector<std::string>{"mft", "-ts_monitor", "-ts_rtol", "1e-8", "-log_view"}));
}

} // namespace

// format_real: the shortest text that reads back, for subnormal numbers too
// (a p-value of 1e-320 once threw std::out_of_range from stod).
TEST(Settings, RealsReadBackEvenSubnormal) {
  for (double x : {0.1, 1.0 / 3.0, 7.76e-55, 4.9406564584124654e-324, 1e-320, -2.5e-310, 1.7976931348623157e308}) {
    const std::string s = format_real(x);
    EXPECT_EQ(std::strtod(s.c_str(), nullptr), x) << s;
  }
  EXPECT_EQ(format_real(0.1), "0.1");
}
