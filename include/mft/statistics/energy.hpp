// The energy distance between two laws in R^n from samples of each, sliced
// (docs/guide.md, 'Studies in law'):
//   D^2 = 2 E|X - Y| - E|X - X'| - E|Y - Y'|,
// zero exactly when the laws are equal. For theta uniform on the unit
// sphere of R^n, E_theta |theta . z| = c_n |z| with
//   c_n = Gamma(n/2) / (sqrt(pi) Gamma((n + 1)/2)),
// so D^2 = E_theta D_theta^2 / c_n, D_theta^2 the 1-D energy distance of the
// projections theta . X and theta . Y. Along one direction that distance's
// U-statistic is exact from the sorted values in O(S log S): with the
// merged values sorted, sum_j |v - w_j| over one side is v c - s + (T - s)
// - v (n - c), c and s the count and sum of that side's values before v.
// The mean over K directions, over c_n, estimates D^2 without bias (the
// directions random, the U-statistic unbiased given them).
//
// Its standard error adds the two sources in squares: the samples' own
// noise to first order (Hoeffding: 4 var(u_X)/S + 4 var(u_Y)/P, u a
// sample's mean distance to the other side less that to its own, each
// sample's u averaged over the directions and over c_n), and the
// directions' (the variance of D_theta^2 / c_n over the K directions, over
// K). Each part also holds a little of the other's noise (of order 1/(S K)):
// the error is slightly wide, never narrow (tests/unit/test_energy.cpp
// measures its calibration by simulation).
//
// The samples stay where they are: each rank holds its rows of each side,
// and the projections are sorted over the ranks (a sample sort: regular
// splitters, one all-to-all, a local sort, the counts and sums before each
// rank's part by a prefix scan), so that a rank holds O((S + P) / ranks)
// numbers. The directions are drawn from a seed alone: the same on any
// number of ranks, and the result the same to round-off.
#pragma once

#include <petscsys.h>

#include <cstdint>
#include <vector>

namespace mft {

// Directions a distance is the mean over.
constexpr PetscInt kEnergyDirections = 128;
// The bytes a rank holds for one row of its share of either side while a
// direction is sorted (its projection, its place in the local order, the
// values and sides it receives and their order, the terms sent back, the
// row's mean term); regular sampling gives a rank at most about twice the
// mean share, (S + P) / ranks rows.
constexpr double kEnergyBytesPerRow = 64;

struct Energy {
  double value = 0;         // the estimate of D^2 (a squared distance)
  double se = 0;            // its standard error: sqrt(samples^2 + directions^2)
  double se_samples = 0;    // the samples' part (first-order Hoeffding)
  double se_directions = 0; // the directions' part
  double floor = 0;         // what the V-statistic would add: E|X - X'|/S + E|Y - Y'|/P
  PetscInt S = 0, P = 0;    // the samples of each side, over every rank
  std::vector<double> along; // D_theta^2 / c_n along each direction
};

// c_n = E|theta_1| for theta uniform on the unit sphere of R^n.
// Not collective.
double SphereMeanAbs(PetscInt n);

// K unit directions of R^n, (K, n) row-major, drawn from `seed` alone.
// Not collective.
std::vector<double> EnergyDirections(PetscInt n, PetscInt K, std::uint64_t seed);

// The sliced energy distance between the rows of X (x_rows on this rank)
// and of Y (y_rows), n numbers a row, row r at X + r stride, along K
// directions of EnergyDirections(n, K, seed). Each side needs two samples
// or more over the ranks. Collective on comm.
PetscErrorCode EnergyOf(MPI_Comm comm, const double *X, PetscInt x_rows, const double *Y, PetscInt y_rows,
                        PetscInt n, PetscInt stride, PetscInt K, std::uint64_t seed, Energy *e);

} // namespace mft
