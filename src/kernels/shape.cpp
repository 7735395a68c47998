// The shape of one head.
#include "mft/kernels/shape.hpp"

namespace mft {

HeadShape head_shape(HeadKind kind, PetscInt d, PetscInt k) {
  HeadShape shape;
  shape.kind = kind;
  shape.d = d;
  shape.k = k;
  shape.dv = kind == HeadKind::qkv ? d : k;
  shape.offQ = 0;
  shape.offK = k * d;
  shape.offV = 2 * k * d;
  shape.offO = shape.offV + shape.dv * d;
  shape.size = shape.offO + (kind == HeadKind::qkvo ? d * k : 0);
  return shape;
}

const char *block_name(PetscInt b) { return b == 0 ? "Q" : b == 1 ? "K" : b == 2 ? "V" : "O"; }

} // namespace mft
