// Means of samples and their covariance (moments.hpp).
#include "mft/statistics/moments.hpp"

#include <cmath>

namespace mft {

PetscErrorCode MeansAndCovariance(MPI_Comm comm, const std::vector<double> &values, size_t width, PetscInt S,
                                  std::vector<double> *mean, std::vector<double> *cov) {
  PetscFunctionBeginUser;
  mean->assign(width, 0.0), cov->assign(width * width, 0.0);
  const size_t rows = width ? values.size() / width : 0;
  for (size_t r = 0; r < rows; ++r)
    for (size_t e = 0; e < width; ++e) (*mean)[e] += values[r * width + e];
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, mean->data(), (int)width, MPI_DOUBLE, MPI_SUM, comm));
  for (double &x : *mean) x /= (double)S;
  std::vector<double> c(width);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t e = 0; e < width; ++e) c[e] = values[r * width + e] - (*mean)[e];
    for (size_t e = 0; e < width; ++e)
      for (size_t f = e; f < width; ++f) (*cov)[e * width + f] += c[e] * c[f];
  }
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, cov->data(), (int)(width * width), MPI_DOUBLE, MPI_SUM, comm));
  const double scale = S > 1 ? 1 / ((double)(S - 1) * (double)S) : NAN;
  for (size_t e = 0; e < width; ++e)
    for (size_t f = e; f < width; ++f) (*cov)[f * width + e] = (*cov)[e * width + f] *= scale;
  PetscFunctionReturn(0);
}

} // namespace mft
