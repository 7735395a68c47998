// User data files: a round trip through the docs/model.md layout, and bad files refused.
#include "helpers.hpp"
#include "mft/files/runfile.hpp"

#include <hdf5.h>

#include <fstream>

using namespace mft;
using namespace mft::test;

namespace {

int rank() {
  int r;
  MPI_Comm_rank(PETSC_COMM_WORLD, &r);
  return r;
}

// A file written by rank 0 alone with the given datasets of the given shapes.
std::string write_file(const std::string &name, const std::vector<std::pair<std::string, std::vector<hsize_t>>> &sets) {
  const std::string path = "test_datafile_" + name + ".h5";
  if (rank() == 0) {
    hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    for (auto &ds : sets) {
      hsize_t n = 1;
      for (auto x : ds.second) n *= x;
      std::vector<double> v(n, 0.5);
      hid_t sp = H5Screate_simple((int)ds.second.size(), ds.second.data(), nullptr);
      hid_t d = H5Dcreate2(f, ds.first.c_str(), H5T_IEEE_F64LE, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT);
      H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
      H5Dclose(d);
      H5Sclose(sp);
    }
    H5Pclose(lcpl);
    H5Fclose(f);
  }
  MPI_Barrier(PETSC_COMM_WORLD);
  return path;
}

PetscErrorCode create(const std::vector<std::string> &args) {
  Problem p;
  PetscErrorCode err = ProblemCreate(PETSC_COMM_WORLD, settings(args), &p);
  if (!err) ProblemDestroy(&p);
  return err;
}

// A run file is a data file: reading it back gives the same data and risk.
TEST(DataFile, RunFileRoundTrip) {
  for (const char *loss : {"token", "pooled"}) {
    const std::string path = std::string("test_datafile_roundtrip_") + loss + ".h5";
    auto a = make_problem(PETSC_COMM_WORLD, tiny({"--loss.kind", loss, "--loss.c", "2", "--data.family", "laplace"}));
    ASSERT_EQ(ProblemEvaluate(a.get(), PETSC_FALSE), 0);
    ASSERT_EQ(RunFileWrite(*a, History(), nullptr, 0, Content::run, path), 0);
    // Sizes come from the file: the defaults M = 4, N = 8, d = 4 are replaced.
    auto b = make_problem(PETSC_COMM_WORLD, {"--data.file", path, "--loss.kind", loss, "--model.L", "3", "--model.H",
                                             "5", "--model.k", "2", "--init.v_mean", "0.5"});
    EXPECT_EQ(b->tokens.M, 3);
    EXPECT_EQ(b->tokens.d, 3);
    ASSERT_EQ(ProblemEvaluate(b.get(), PETSC_FALSE), 0);
    EXPECT_EQ(relative_error(gather(b->x0), gather(a->x0)), 0.0);
    EXPECT_DOUBLE_EQ(b->risk, a->risk) << loss;
    EXPECT_GT(a->risk, 0.0);
  }
}

// data.M below the file's takes its first data.M sequences (tokens and
// targets); the risk is that of those sequences alone.
TEST(DataFile, FirstSequencesOfAFile) {
  for (const char *loss : {"token", "pooled"}) {
    const std::string all = std::string("test_datafile_all_") + loss + ".h5",
                      two = std::string("test_datafile_two_") + loss + ".h5";
    auto a = make_problem(PETSC_COMM_WORLD, tiny({"--loss.kind", loss, "--loss.c", "2", "--data.family", "gaussian"}));
    ASSERT_EQ(a->tokens.M, 3);
    ASSERT_EQ(RunFileWrite(*a, History(), nullptr, 0, Content::run, all), 0);
    auto c = make_problem(PETSC_COMM_WORLD, tiny({"--data.file", all, "--data.M", "2", "--loss.kind", loss}));
    EXPECT_EQ(c->tokens.M, 2);
    const std::vector<double> xa = gather(a->x0), xc = gather(c->x0);
    ASSERT_EQ(xc.size() * 3, xa.size() * 2);
    EXPECT_TRUE(std::equal(xc.begin(), xc.end(), xa.begin())) << loss;
    if (std::string(loss) == "pooled")
      EXPECT_TRUE(std::equal(c->targets.z.begin(), c->targets.z.end(), a->targets.z.begin())) << "targets";
    // Against a run file of those two sequences alone: the same risk.
    ASSERT_EQ(ProblemEvaluate(c.get(), PETSC_FALSE), 0);
    ASSERT_EQ(RunFileWrite(*c, History(), nullptr, 0, Content::run, two), 0);
    auto d = make_problem(PETSC_COMM_WORLD, tiny({"--data.file", two, "--data.M", "2", "--loss.kind", loss}));
    ASSERT_EQ(ProblemEvaluate(d.get(), PETSC_FALSE), 0);
    EXPECT_DOUBLE_EQ(c->risk, d->risk) << loss;
    EXPECT_GT(c->risk, 0.0);
  }
}

TEST(DataFile, BadFilesAreRefused) {
  const std::vector<std::string> model = {"--model.L", "2", "--model.H", "2", "--model.k", "2"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), model.begin(), model.end());
    return extra;
  };
  const std::string missing = write_file("missing", {{"/data/tokens", {2, 3, 4}}});
  EXPECT_EQ(create(with({"--data.file", missing})), PETSC_ERR_FILE_UNEXPECTED);
  const std::string shape = write_file("shape", {{"/data/tokens", {2, 3, 4}}, {"/data/targets", {2, 3, 5}}});
  EXPECT_EQ(create(with({"--data.file", shape})), PETSC_ERR_FILE_UNEXPECTED);
  const std::string flat = write_file("flat", {{"/data/tokens", {6, 4}}, {"/data/targets", {6, 4}}});
  EXPECT_EQ(create(with({"--data.file", flat})), PETSC_ERR_FILE_UNEXPECTED);
  const std::string noreadout = write_file("noreadout", {{"/data/tokens", {2, 3, 4}}, {"/data/targets", {2, 1}}});
  EXPECT_EQ(create(with({"--data.file", noreadout, "--loss.kind", "pooled"})), PETSC_ERR_FILE_UNEXPECTED);
  const std::string good = write_file("good", {{"/data/tokens", {2, 3, 4}}, {"/data/targets", {2, 3, 4}}});
  EXPECT_EQ(create(with({"--data.file", good})), 0);
  EXPECT_EQ(create(with({"--data.file", good, "--data.M", "5"})), PETSC_ERR_USER_INPUT);
  if (rank() == 0) std::ofstream("test_datafile_text.h5") << "not an HDF5 file\n";
  MPI_Barrier(PETSC_COMM_WORLD);
  EXPECT_EQ(create(with({"--data.file", "test_datafile_text.h5"})), PETSC_ERR_FILE_OPEN);
  // A missing file is refused with the options, before any work.
  Settings s;
  PetscBool help;
  EXPECT_EQ(SettingsParse(PETSC_COMM_WORLD, "forward", with({"--data.file", "no_such_file.h5"}), &s, &help),
            PETSC_ERR_FILE_OPEN);
}

} // namespace
