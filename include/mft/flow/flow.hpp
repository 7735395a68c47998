// The PETSc TS glue: the L-layer transformer as the explicit Euler scheme of
// the token ODE dx/ds = f_l(x), s in [0, 1], step 1/L (docs/model.md, 'Depth as time'),
// and its backward adjoint through TSAdjoint.
//
// TSRK with TSRK1FE is x_{n+1} = x_n + (1/L) f_n(x_n) exactly, and has an
// adjoint in PETSc 3.18 (TSEULER has none). The layer is the step number,
// never floor(s L): TS's accumulated time (L sums of 1/L) is inexact. The
// Jacobians are matrix-free shells of which PETSc only calls MatMultTranspose.
#pragma once

#include "mft/flow/mlp.hpp"
#include "mft/flow/norm.hpp"
#include "mft/flow/trajectory.hpp"
#include "mft/flow/velocity.hpp"

#include <petscts.h>

#include <functional>

namespace mft {

// What FlowAdjointStates shows at every step of its backward sweep: the step
// n (x_n's adjoints) and the K adjoint vectors there.
using AdjointVisit = std::function<PetscErrorCode(PetscInt step, const Vec *lam)>;

struct Flow {
  TS ts = nullptr;
  Mat J = nullptr;   // df/dx, state x state
  Mat Jp = nullptr;  // df/dtheta, as PETSc sees it: state x a one-entry stand-in per rank
  Vec sensitivity = nullptr; // the stand-in parameter sensitivity (stays zero)
  Velocity *velocity = nullptr;
  PetscInt L = 0;    // Euler steps (the layers, unless the heads are shared)
  DepthScheme scheme;
  PetscInt steps = 0, rejected = 0; // of the last forward solve
  Trajectory *trajectory = nullptr;  // slices recorded by the solves (FlowRecord)
  AdjointVisit visit;                // FlowAdjointStates's, during its solve
  // Normalized tokens (norm.hpp): the step around the velocity, and what its
  // transposes need. `read`: pre, n(x) of the current layer; sphere with the
  // adaptive solve, v at the current stage. `velocities`: sphere with L
  // steps, each step's v, kept by the forward for the adjoint. `state`: the
  // prepared step's x; `into_velocity`, `rest`: SphereStepTranspose's parts,
  // made from the adjoint vector `lam_id` in state `lam_state`.
  TokenNorm norm = TokenNorm::none;
  PetscInt d = 0, step = 0; // step: the prepared step
  Vec read = nullptr, state = nullptr, into_velocity = nullptr, rest = nullptr;
  Vec *velocities = nullptr;
  PetscObjectId lam_id = 0;
  PetscObjectState lam_state = 0;
  // Weighted tokens: dR/dw of the adjoint solve through the flow, (M, N) on
  // every rank (FlowAdjoint). Each stage's (df/dw)^T lam (the velocity's
  // layer_weight_grad) counts with the factor PETSc gives that stage's state
  // part (`stage`): 1/L for the Euler model; for the adaptive solve -h b_i
  // (-h where b_i = 0), the stage found from its depth in the tableau
  // (PETSc 3.18's own parameter sensitivity mis-sums the stages where b_i =
  // 0, which TSRK 5dp has).
  std::vector<double> weight_grad;
  double stage = 0;
  // MLP sublayers (mlp.hpp; null: attention alone): the layer's velocity is
  // F(x) = f_a(x) + f_m(y), y = x + h f_a(x), h = 1/L (the Euler step: the
  // sublayer reads attention's output) or 0 (the adaptive solve: the ODE's
  // f_a + f_m); pre-LN reads y as n(y). `mids`: each step's y, kept by the
  // forward for the adjoint (the adaptive solve's `mid` is its stage's x).
  // The transposes: mu = (d f_m(y)/dy)^T lam, then attention's with
  // lam + h mu (`lam_attention`), made once per adjoint vector (`block_id`,
  // `block_state`); neuron_grad: where FlowAdjoint puts dR/dneurons.
  // On the sphere the sublayer is a retracted step of its own from y,
  // R(y + h P_y v_m(y)): `mlp_velocities` keep each step's v_m (the adaptive
  // solve's one, its stage's), `mlp_into` and `mlp_rest` its transpose's parts.
  Mlp *mlp = nullptr;
  Vec *mlp_velocities = nullptr;
  Vec mlp_into = nullptr, mlp_rest = nullptr, mlp_step = nullptr;
  Vec *mids = nullptr;
  Vec mid = nullptr, mid_read = nullptr, mu = nullptr, mu_read = nullptr, lam_attention = nullptr;
  Vec neuron_grad = nullptr;
  PetscObjectId block_id = 0;
  PetscObjectState block_state = 0;
};

// The parameter part of each layer's reverse sweep is accumulated by the
// velocity into the heads' partial gradients (PETSc's parameter sensitivity is
// a one-entry stand-in, so that it does no work on the parameters each step)
// and reduced once per adjoint solve. With
// scheme.shared the velocity is layer 0's at every depth; with
// scheme.adaptive the solve is TSRK 5dp with TSADAPTBASIC to rtol/atol (PETSc
// options such as -ts_rk_type and -ts_rtol still apply); otherwise L steps of TSRK1FE.
// norm: the tokens' normalization (model.norm), applied around the velocity.
// FlowCreate and FlowDestroy are collective on the velocity's grid comm (the TS
// and its shells).
PetscErrorCode FlowCreate(Velocity *v, PetscInt L, TokenNorm norm, const DepthScheme &scheme, Flow *f);

// Adds MLP sublayers after each layer's attention (before the first solve);
// FlowAdjoint then also puts dR/dneurons into neuron_grad (theta's layout
// of mlp's neurons). Collective on the grid's comm (its vectors).
PetscErrorCode FlowAddMlp(Flow *f, Mlp *mlp, Vec neuron_grad);
PetscErrorCode FlowDestroy(Flow *f);

// The solves that follow record their tokens (and adjoint) at the depths of
// t (trajectory.hpp); null stops recording. The adaptive solve is made to land
// on those depths (PETSc's time span): call before its first solve.
// Collective on the grid's comm (TSSetTimeSpan).
PetscErrorCode FlowRecord(Flow *f, Trajectory *t);

// x <- x(1): the L layers (or the adaptive solve) applied to x = x(0).
// Collective on x's comm (TSSolve).
PetscErrorCode FlowForward(Flow *f, Vec x);

// After FlowForward: lam <- dR/dx(0) from lam = dR/dx(1), and
// dtheta <- dR/dtheta (overwritten; one reduction over the token groups per
// solve). The adaptive scheme (the reference) has no parameter gradient:
// dtheta <- 0. With weighted tokens, f->weight_grad <- the flow's part of
// dR/dw (both schemes; one sum over the ranks per solve).
// Collective on lam's comm (TSAdjointSolve, the gradient's reduction).
PetscErrorCode FlowAdjoint(Flow *f, Vec lam, Vec dtheta);

// After FlowForward of the Euler model: the state's adjoints of K cost
// vectors in one backward sweep (lam[k] <- J^T lam[k], no parameter part),
// `visit` called at every step from L down to 0. Unweighted tokens only.
// Collective on the grid's comm.
PetscErrorCode FlowAdjointStates(Flow *f, PetscInt K, Vec *lam, const AdjointVisit &visit);

} // namespace mft
