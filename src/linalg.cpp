// LAPACK dsyev and dpotrf/dpotrs on row-major data.
#include "mft/linalg.hpp"

#include <petscblaslapack.h>

namespace mft {

PetscErrorCode SymmetricEigenvalues(std::vector<double> A, PetscInt n, std::vector<double> *w) {
  PetscBLASInt bn, lwork, info;
  PetscFunctionBeginUser;
  w->assign((size_t)n, 0.0);
  if (n == 0) PetscFunctionReturn(0);
  PetscCall(PetscBLASIntCast(n, &bn));
  PetscCall(PetscBLASIntCast(8 * n, &lwork));
  std::vector<double> work((size_t)lwork);
  // Row-major upper = column-major lower: ask LAPACK for "L".
  LAPACKsyev_("N", "L", &bn, A.data(), &bn, w->data(), work.data(), &lwork, &info);
  PetscCheck(info == 0, PETSC_COMM_SELF, PETSC_ERR_LIB, "LAPACK dsyev failed (info %d)", (int)info);
  PetscFunctionReturn(0);
}

PetscErrorCode SolveSPD(std::vector<double> S, PetscInt n, PetscInt r, std::vector<double> &B) {
  PetscBLASInt bn, br, info;
  PetscFunctionBeginUser;
  PetscCall(PetscBLASIntCast(n, &bn));
  PetscCall(PetscBLASIntCast(r, &br));
  // Column-major B^T is row-major B: solve with B's columns as LAPACK's rows.
  std::vector<double> Bt((size_t)(n * r));
  for (PetscInt i = 0; i < n; ++i)
    for (PetscInt j = 0; j < r; ++j) Bt[j * n + i] = B[i * r + j];
  LAPACKpotrf_("L", &bn, S.data(), &bn, &info);
  PetscCheck(info == 0, PETSC_COMM_SELF, PETSC_ERR_LIB, "the normal equations are singular (dpotrf info %d)", (int)info);
  LAPACKpotrs_("L", &bn, &br, S.data(), &bn, Bt.data(), &bn, &info);
  PetscCheck(info == 0, PETSC_COMM_SELF, PETSC_ERR_LIB, "LAPACK dpotrs failed (info %d)", (int)info);
  for (PetscInt i = 0; i < n; ++i)
    for (PetscInt j = 0; j < r; ++j) B[i * r + j] = Bt[j * n + i];
  PetscFunctionReturn(0);
}

} // namespace mft
