// The error's law at initialisation (docs/model.md, 'The error's law'):
// an L-layer, H-head model whose heads are drawn i.i.d. from the initial law
// is the mean-field limit plus two small perturbations, the Euler error of L
// steps and the head-sampling noise, so that to first order in 1/H
//
//   E err^2(L, H) = E(L)^2 + F_L^2 / (L H),
//
// for one probe sequence of N tokens, with X_L the L-step Euler scheme of the
// limit velocity (the reference's shared ensemble at every layer), X the
// adaptive limit, and
//
//   E(L)^2 = (1/N) sum_i |X_L(1)_i - X(1)_i|^2,
//   F_L^2  = (1/N) (1/L) sum_l E_theta |J_L(l) D_l dv_theta(l)|^2,
//
// dv_theta(l) one head's velocity at X_L(l/L) minus the ensemble's mean
// (at n(X_L) under model.norm = pre), D_l the step's derivative in its
// velocity (the identity, or the sphere's retraction), J_L(l) the tangent map
// of the layers after l. F_L^2 is taken by adjoints: with u a probe vector of
// R^{N d} and q_l = D_l^T J_L(l)^T u the velocity's part of the discrete
// adjoint started from u (one solve gives every layer's),
// E_u (u . J D dv)^2 = |J D dv|^2 for u standard normal (Hutchinson) or
// summed over the N d unit vectors (exact), and E_theta over a sample of the
// ensemble's heads. Every sequence's estimate carries its Monte Carlo
// standard error (probe vectors and heads).
#pragma once

#include "mft/settings/settings.hpp"

#include <vector>

namespace mft {

struct FluctuationResult {
  PetscInt M = 0, N = 0, L = 0;        // probe sequences, their tokens; the model's layers
  PetscInt probes = 0, heads = 0;      // probe vectors (N d when exact) and heads taken
  bool exact = false;                  // every unit vector: no Monte Carlo error from the probes
  std::vector<double> euler2;          // per sequence: E(L)^2
  std::vector<double> fluctuation2;    // per sequence: F_L^2
  std::vector<double> fluctuation2_se; // per sequence: the standard error of F_L^2
  // The exact trace only, N d entries per sequence: the eigenvalues of the
  // fluctuation's covariance G (F_L^2 = tr G / N; the L x H model's X(1) is
  // X_L(1) + a Gaussian of covariance G / (L H) to first order) and the Euler
  // error X_L(1) - X(1) in its eigenvectors: the law of err^2 of the sequence,
  // (1/N) sum_i (c_i + (lambda_i / (L H))^(1/2) z_i)^2.
  std::vector<double> spectrum, euler_coords;
  // err_predicted of H heads a layer: (mean over the sequences of E^2 + F^2 / (L H))^(1/2), and its standard error.
  double predicted(PetscInt H) const;
  double predicted_se(PetscInt H) const;
};

// What LimitFluctuation takes on P ranks, priced before it starts: the
// bytes a rank holds at once (K probe vectors' adjoints, each gathered whole
// on every rank, the per-probe sums and, for the exact trace, the M K^2
// covariance) and the seconds at parallel.rate (the probes' backward sweep
// through L layers of the adjoint heads, every sampled head's velocity
// against every probe, the spectra). K = N d for the exact trace: both grow
// like (N d)^2 and faster.
// Not collective.
struct FluctuationCost {
  PetscInt probes = 0;
  double bytes = 0, seconds = 0;
};
FluctuationCost FluctuationPrice(const Settings &s, PetscInt M, PetscInt N, PetscInt P);

// Collective on comm. Says the price of LimitFluctuation for the data of s
// on rank 0, and refuses, in one line naming what to set instead, a request
// that would hold more than a rank's share of its node's memory. Called
// before any work (mft limit before its solve, a study's law before it starts).
PetscErrorCode FluctuationPriceCheck(MPI_Comm comm, const Settings &s);

// The law of the model.L x model.H model of s for the probes of its data
// settings, against the limit of limit.heads shared heads (the settings
// mft limit takes; limit.probes, limit.sample_heads). `limit`: X(1) of the
// probes, (M, N, d), when the caller has solved it (mft limit, a study's
// reference 0); else it is solved here. Every probe vector's adjoint comes
// from one backward sweep (FlowAdjointStates). Weighted tokens are refused.
// Collective on comm.
PetscErrorCode LimitFluctuation(MPI_Comm comm, const Settings &s, FluctuationResult *r,
                                const std::vector<double> *limit = nullptr);

} // namespace mft
