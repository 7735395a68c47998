// The plain L-layer transformer (HPCG-style): one process,
// no TS, no streaming, every N x N attention matrix formed as docs/model.md writes
// it, with A = V or O V and B = beta Q^T K multiplied out:
//   a[i,j] = x_i^T B x_j,  P = softmax rows,  m_i = sum_j P[i,j] x_j,
//   x^{l+1}_i = x^l_i + (1/L)(1/H) sum_h A_h m_i
// and with model.norm the same formulas as docs/model.md writes them: pre
// reads sqrt(d) x_j / |x_j| in the attention, sphere puts the input on the
// sphere and retracts x_i + (1/L) P_{x_i} v_i to it.
// It is slow and simple on purpose: the fast path is checked against it.
#pragma once

#include "mft/layout/heads.hpp"

#include <functional>
#include <vector>

namespace mft {

// theta: all heads in the natural (l, h, entries) order; x: (M, N, d), in
// place; weights: (M, N), each key's mass in the softmax, P[i,j] = w_j
// exp(a[i,j]) / sum_j' w_j' exp(a[i,j']) (empty: unweighted).
// after_layer (when set) is called with l and x after layer l's attention
// step: a sublayer the caller writes (the MLP's reference, in its tests).
// Not collective: one rank, the whole model.
void plain_forward(const ModelSettings &m, const std::vector<double> &theta, PetscInt M, PetscInt N,
                   std::vector<double> &x, const std::vector<double> &weights = {},
                   const std::function<void(PetscInt, std::vector<double> &)> &after_layer = {});

// What attention reads of tokens x (M, N, d): x, or sqrt(d) x_j / |x_j| under
// model.norm pre. Not collective.
std::vector<double> plain_read(const ModelSettings &m, const std::vector<double> &x);

// One head's N x N attention matrix over one sequence: P[i,j] = w_j
// exp(a[i,j]) / sum_j' w_j' exp(a[i,j']), a[i,j] = xs_i^T B xs_j with B =
// beta k^-g Q^T K of the head's entries th; under the causal mask row i
// sees j <= i and is 0 beyond. xs: (N, d) as attention reads it
// (plain_read); w: the sequence's N key masses, or nullptr (1 each).
// Not collective.
void plain_attention(const ModelSettings &m, const double *th, const double *xs, PetscInt N, const double *w,
                     double *P);

} // namespace mft
