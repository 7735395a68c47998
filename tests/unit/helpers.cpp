#include "helpers.hpp"

#include <algorithm>
#include <cmath>

namespace mft::test {

Settings settings(const std::vector<std::string> &args, const std::string &command) {
  Settings s;
  PetscBool help;
  PetscErrorCode err = SettingsParse(PETSC_COMM_WORLD, command, args, &s, &help);
  EXPECT_EQ(err, 0);
  return s;
}

void ProblemDeleter::operator()(Problem *p) const {
  EXPECT_EQ(ProblemDestroy(p), 0);
  delete p;
}

ProblemPtr make_problem(MPI_Comm comm, const std::vector<std::string> &args, const std::string &command) {
  ProblemPtr p(new Problem);
  PetscErrorCode err = ProblemCreate(comm, settings(args, command), p.get());
  EXPECT_EQ(err, 0);
  return p;
}

std::vector<double> gather(Vec v) {
  std::vector<double> out;
  EXPECT_EQ(GatherAll(v, &out), 0);
  return out;
}

void set_entry(Vec v, PetscInt i, double value) {
  PetscInt lo, hi;
  EXPECT_EQ(VecGetOwnershipRange(v, &lo, &hi), 0);
  if (i >= lo && i < hi) EXPECT_EQ(VecSetValue(v, i, value, INSERT_VALUES), 0);
  EXPECT_EQ(VecAssemblyBegin(v), 0);
  EXPECT_EQ(VecAssemblyEnd(v), 0);
}

double relative_error(const std::vector<double> &a, const std::vector<double> &b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (std::isnan(a[i] - b[i])) return INFINITY; // fmax would pass over a NaN
    diff = std::fmax(diff, std::fabs(a[i] - b[i]));
    scale = std::fmax(scale, std::fabs(b[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

std::vector<std::string> tiny(std::vector<std::string> extra) {
  std::vector<std::string> a = {"--model.L", "3", "--model.H", "5", "--model.d", "3", "--model.k", "2",
                                "--data.M",  "3", "--data.N",  "5", "--init.v_mean", "0.5"};
  for (size_t e = 0; e + 1 < extra.size(); e += 2) { // an override replaces the default pair
    auto it = std::find(a.begin(), a.end(), extra[e]);
    if (it != a.end()) *(it + 1) = extra[e + 1];
    else a.insert(a.end(), {extra[e], extra[e + 1]});
  }
  return a;
}

bool several_ranks() {
  int size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  return size > 1;
}

} // namespace mft::test
