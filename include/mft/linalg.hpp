// Small dense linear algebra on one rank, through PETSc's BLAS/LAPACK.
#pragma once

#include <petscsys.h>

#include <vector>

namespace mft {

// Eigenvalues (ascending) of the symmetric n x n matrix A (row-major; only
// its upper triangle is read).
PetscErrorCode SymmetricEigenvalues(std::vector<double> A, PetscInt n, std::vector<double> *eigenvalues);

// Solves S X = B for symmetric positive definite S (n x n) and B (n x r, row-major), in place in B.
PetscErrorCode SolveSPD(std::vector<double> S, PetscInt n, PetscInt r, std::vector<double> &B);

} // namespace mft
