// Means of samples and the covariance of those means: S samples (rows) of
// `width` numbers each, the rows blocked over the ranks. The covariance
// matters wherever one set of samples is read at several points (a
// trajectory's depths): the points' errors are then correlated, and a fit
// through them needs the whole matrix (gls.hpp), not its diagonal.
#pragma once

#include <petscsys.h>

#include <vector>

namespace mft {

// Over the S rows (this rank's in `values`, row-major, `width` a row): the
// means (width) and their covariance (width x width, row-major: the rows'
// sample covariance over S; NaN with one row). Two passes, the means then
// the products about them, each summed over comm. Collective on comm.
PetscErrorCode MeansAndCovariance(MPI_Comm comm, const std::vector<double> &values, size_t width, PetscInt S,
                                  std::vector<double> *mean, std::vector<double> *cov);

} // namespace mft
