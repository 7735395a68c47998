// Small dense linear algebra on one rank, through PETSc's BLAS/LAPACK.
// Every routine here is not collective: each works on this rank's arrays.
#pragma once

#include <petscsys.h>

#include <string>
#include <vector>

namespace mft {

// The BLAS as mft wants it, called first thing in main (before MPI starts):
// one thread per rank (ranks are the parallelism; MFT_BLAS_THREADS overrides),
// and OpenBLAS's SkylakeX kernels (AVX-512) or Haswell kernels (AVX2 and FMA)
// where it would fall back to Prescott's on a CPU model it does not know
// (common on virtual machines, where Prescott's SSE3 kernels are several
// times slower).
// For that the process runs itself again, once, with OPENBLAS_CORETYPE set
// (and MFT_BLAS_CHOSEN=1); an OPENBLAS_CORETYPE or MFT_KEEP_BLAS already set
// is left alone. Likewise, when threads are asked for (--parallel.threads T
// or OMP_NUM_THREADS above 1) and OMP_WAIT_POLICY is not set, it runs again
// with OMP_WAIT_POLICY=passive: OpenMP's spinning wait takes cores from the
// other ranks and threads that share them.
void BlasSetup(char **argv);

// Which path the small products take: "LIBXSMM (target <arch>)", or "BLAS"
// with the reason (MFT_NO_LIBXSMM=1, or a build without LIBXSMM).
std::string SmallProductPath();

// The library whose dgemm_ the BLAS products call (its file, found with
// dladdr, links resolved): with several BLAS installed, the linker's choice is not always the
// one Debian's alternatives point to (mft bench prints it).
std::string BlasLibrary();

// C (m x n) = alpha op(A) op(B) + beta C on row-major arrays (op: transpose
// when ta / tb), through BLAS dgemm.
void gemm(bool ta, bool tb, PetscInt m, PetscInt n, PetscInt k, double alpha, const double *A, PetscInt lda,
          const double *B, PetscInt ldb, double beta, double *C, PetscInt ldc);

// A leading dimension for rows of n doubles: whole cache lines (rows start
// on a line), and an odd count of them past 128 doubles. A stride of a
// power of two puts a long column's entries in one cache set, so a product
// whose operand or result has such rows (the score blocks, kappa^T and w^T at
// N = 1024) loses them from L1 as it walks the column (docs/performance.md,
// "Choices in the kernels, measured").
PetscInt row_stride(PetscInt n);

// B (rows x cols, row-major) -> Bt (cols x rows, leading dimension ld, rows by default).
void transpose(const double *B, PetscInt rows, PetscInt cols, double *Bt, PetscInt ld = -1);

// Eigenvalues (ascending) of the symmetric n x n matrix A (row-major; only
// its upper triangle is read); with `vectors`, their unit eigenvectors too,
// eigenvector k at [k n, (k + 1) n).
PetscErrorCode SymmetricEigenvalues(std::vector<double> A, PetscInt n, std::vector<double> *eigenvalues,
                                    std::vector<double> *vectors = nullptr);

// Solves S X = B for symmetric positive definite S (n x n) and B (n x r, row-major), in place in B.
PetscErrorCode SolveSPD(std::vector<double> S, PetscInt n, PetscInt r, std::vector<double> &B);

} // namespace mft
