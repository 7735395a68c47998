// The row-major products against plain loops, over more shapes than the
// small-product kernel table holds (linalg.cpp), in an order that comes back
// to each shape after others have taken its slot, and to each shape with
// other leading dimensions: every product must get the kernel of its own
// shape, leading dimensions and form (op(A), beta).
#include "helpers.hpp"
#include "mft/kernels/linalg.hpp"
#include "mft/layout/random.hpp"

#include <algorithm>
#include <utility>
#include <vector>

using namespace mft;
using mft::test::relative_error;

TEST(Products, EveryShapeGetsItsOwnKernel) {
  struct Shape {
    bool ta;
    PetscInt m, n, k, pad;
    double beta;
  };
  std::vector<Shape> shapes;
  for (PetscInt m : {1, 3, 8, 16, 33, 64})
    for (PetscInt n : {2, 8, 17, 32})
      for (PetscInt k : {1, 8, 12})
        for (bool ta : {false, true}) shapes.push_back({ta, m, n, k, (m + n + k) % 3, (m + k) % 2 ? 1.0 : 0.0});
  ASSERT_GT(shapes.size(), 128u); // past the table's slots
  Stream r(7, 0);
  // Rounds 1, 2, 3 change one leading dimension (of A, B, C), round 4 beta.
  for (int round = 0; round < 5; ++round)
    for (size_t i = 0; i < shapes.size(); ++i) {
      Shape s = shapes[(i * 37 + (size_t)round * 11) % shapes.size()];
      if (round == 4) s.beta = 1.0 - s.beta;
      const PetscInt lda = (s.ta ? s.m : s.k) + s.pad + (round == 1), ldb = s.n + s.pad + (round == 2),
                     ldc = s.n + s.pad + (round == 3);
      std::vector<double> A((size_t)((s.ta ? s.k : s.m) * lda)), B((size_t)(s.k * ldb)), C((size_t)(s.m * ldc));
      for (double &v : A) v = r.normal();
      for (double &v : B) v = r.normal();
      for (double &v : C) v = r.normal();
      std::vector<double> expect = C;
      for (PetscInt a = 0; a < s.m; ++a)
        for (PetscInt b = 0; b < s.n; ++b) {
          double sum = 0;
          for (PetscInt c = 0; c < s.k; ++c) sum += (s.ta ? A[c * lda + a] : A[a * lda + c]) * B[c * ldb + b];
          expect[a * ldc + b] = sum + s.beta * C[a * ldc + b];
        }
      gemm(s.ta, false, s.m, s.n, s.k, 1.0, A.data(), lda, B.data(), ldb, s.beta, C.data(), ldc);
      EXPECT_LT(relative_error(C, expect), 1e-14)
          << (s.ta ? "A^T B, " : "A B, ") << s.m << " x " << s.n << " x " << s.k << ", pad " << s.pad << ", beta "
          << s.beta << ", round " << round;
    }
}

// Rows row_stride(n) apart start on cache lines and hold n numbers, with
// less than a line to spare up to 128 numbers and less than two past them,
// where a column of 64 such rows meets all 64 line slots of a 4 KiB page (an
// odd count of lines apart), not a few of them as a power of two does.
TEST(Products, RowStridesSpreadAColumnOverTheCacheSets) {
  for (PetscInt n = 1; n <= 20000; ++n) {
    const PetscInt ld = row_stride(n);
    ASSERT_EQ(ld % 8, 0) << n;
    ASSERT_GE(ld, n);
    ASSERT_LT(ld - n, n > 128 ? 16 : 8) << n;
    if (n <= 128) continue;
    std::vector<bool> slot(64, false);
    for (PetscInt r = 0; r < 64; ++r) slot[(size_t)(r * ld / 8 % 64)] = true;
    ASSERT_EQ(std::count(slot.begin(), slot.end(), true), 64) << n;
  }
}

// transpose against its definition, on shapes with whole register blocks
// (8 x 8, 8 x 4) and with rows and columns left over, into a wider ld: every
// entry lands where it belongs, the padding is left alone.
TEST(Products, TransposeMovesEveryEntry) {
  for (auto [rows, cols] : {std::pair<PetscInt, PetscInt>{8, 8}, {8, 4}, {64, 16}, {13, 7}, {17, 9}, {3, 5}, {40, 12}}) {
    const PetscInt ld = row_stride(rows) + 8;
    std::vector<double> B((size_t)(rows * cols)), Bt((size_t)(cols * ld), -1.0);
    for (size_t e = 0; e < B.size(); ++e) B[e] = (double)e;
    transpose(B.data(), rows, cols, Bt.data(), ld);
    for (PetscInt c = 0; c < cols; ++c)
      for (PetscInt r = 0; r < ld; ++r)
        ASSERT_EQ(Bt[(size_t)(c * ld + r)], r < rows ? B[(size_t)(r * cols + c)] : -1.0)
            << rows << " x " << cols << ", column " << c << ", row " << r;
  }
}
