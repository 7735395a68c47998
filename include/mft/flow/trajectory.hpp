// Token trajectories through depth (--output.trajectory S): the tokens x(s)
// and, when the solve has an adjoint, the adjoint p(s), at the S + 1 depths
// s = 0, 1/S, ..., 1 (docs/model.md, 'Depth as time'; seed 1's mu(s) and seed 2's (x, p)).
//
// A flow given a trajectory (FlowRecord) copies its state into it from a TS
// monitor, and its adjoint from a TS adjoint monitor, whenever the solve is at
// one of the depths: for the Euler model at the steps n = k L / S (S divides L,
// so no depth falls between layers), for the adaptive solve at the steps that
// PETSc's time span (TSSetTimeSpan) makes land on them. The slices are kept in
// the state's layout (each rank its owned tokens) and written as
// /trajectory/tokens (S+1, M, N, d), /trajectory/adjoint likewise, and
// /trajectory/depth (S+1,).
#pragma once

#include "mft/layout/h5.hpp"
#include "mft/settings/settings.hpp"

#include <petscvec.h>

#include <vector>

namespace mft {

struct Trajectory {
  PetscInt S = 0;                // depths 0, 1/S, ..., 1
  PetscInt M = 0, N = 0, d = 0;  // sizes of one slice
  Range owned;                   // tokens (flat m*N+i) of this rank's rows
  std::vector<Vec> tokens;       // S + 1 slices, state layout
  std::vector<Vec> adjoint;      // S + 1 slices, filled by an adjoint solve
  std::vector<char> have_tokens, have_adjoint;

  double depth(PetscInt k) const { return (double)k / (double)S; }
  bool complete(const std::vector<char> &have) const;
};

// Checks --output.trajectory against the sizes before any work starts: S
// divides model.L for the Euler model, and the slices (tokens, and adjoint for
// `with_adjoint`) fit in the memory of the node (summed over its ranks).
// Collective on comm (the memory's reduction over the ranks).
PetscErrorCode TrajectoryCheck(MPI_Comm comm, const Settings &s, bool with_adjoint);

// Slices of S + 1 depths for tokens laid out like `state`.
// Create and Destroy are collective on state's comm.
PetscErrorCode TrajectoryCreate(Vec state, PetscInt M, PetscInt N, PetscInt d, PetscInt S, Trajectory *t);
PetscErrorCode TrajectoryDestroy(Trajectory *t);

// Records slice k of the tokens (forward) or of the adjoint.
// Collective on x's comm (the first record of a slice duplicates x).
PetscErrorCode TrajectoryRecord(Trajectory *t, PetscInt k, Vec x, bool adjoint);

// Writes /trajectory/depth, /trajectory/tokens and, when every slice was
// recorded, /trajectory/adjoint. Collective on f.comm.
PetscErrorCode TrajectoryWrite(h5::File &f, const Trajectory &t);

} // namespace mft
