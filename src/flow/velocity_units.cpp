// The units a rank's kernels run over (velocity_units.hpp): what is not a template.
#include "mft/flow/velocity_units.hpp"

namespace mft {

// The cut sequences' rows are in (the second pass of the kernels needs them).
PetscErrorCode units::RowsArrived(Velocity *v) {
  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MFT_EXCHANGE, 0, 0, 0, 0));
  PetscCall(TokensShareCutRowsEnd(*v->tokens, &v->sharing));
  PetscCall(PetscLogEventEnd(MFT_EXCHANGE, 0, 0, 0, 0));
  PetscFunctionReturn(0);
}

} // namespace mft
