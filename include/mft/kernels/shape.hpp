// The small types the kernels take: a range of rows, the shape of one head,
// an MLP neuron's activation. Every routine here is not collective: plain
// arithmetic on integers.
#pragma once

#include <petscsys.h>

namespace mft {

// Even split of n items into parts; part p gets [begin, end).
struct Range {
  PetscInt begin = 0, end = 0;
  PetscInt size() const { return end - begin; }
};

enum class HeadKind { qkv, qkvo }; // model.head_kind
enum class Activation { identity, relu, gelu, tanh, erf }; // model.mlp_activation (activation.hpp)

// One head's entries: blocks Q (k x d), K (k x d), V (dv x d) and, for qkvo,
// O (d x k), row-major, in that order (docs/model.md, 'A head').
struct HeadShape {
  HeadKind kind = HeadKind::qkv;
  PetscInt d = 0, k = 0, dv = 0;          // dv: rows of V (d for qkv, k for qkvo)
  PetscInt size = 0;                      // entries of one head
  PetscInt offQ = 0, offK = 0, offV = 0, offO = 0;
  PetscInt blocks() const { return kind == HeadKind::qkv ? 3 : 4; }
  PetscInt block_offset(PetscInt b) const { return b == 0 ? offQ : b == 1 ? offK : b == 2 ? offV : offO; }
  PetscInt block_rows(PetscInt b) const { return b < 2 ? k : b == 2 ? dv : d; }
  PetscInt block_cols(PetscInt b) const { return b < 3 ? d : k; }
};
HeadShape head_shape(HeadKind kind, PetscInt d, PetscInt k);
const char *block_name(PetscInt b); // "Q", "K", "V", "O"

} // namespace mft
