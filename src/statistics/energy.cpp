// The sliced energy distance over the ranks (energy.hpp).
#include "mft/statistics/energy.hpp"

#include "mft/layout/random.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mft {

double SphereMeanAbs(PetscInt n) {
  return std::exp(std::lgamma(0.5 * (double)n) - std::lgamma(0.5 * (double)(n + 1))) / std::sqrt(M_PI);
}

std::vector<double> EnergyDirections(PetscInt n, PetscInt K, std::uint64_t seed) {
  std::vector<double> theta((size_t)(K * n));
  for (PetscInt k = 0; k < K; ++k) {
    Stream st(seed, kEnergyDirection, (std::uint64_t)k);
    double *t = theta.data() + k * n, norm = 0;
    st.normals(t, (long)n);
    for (PetscInt c = 0; c < n; ++c) norm += t[c] * t[c];
    for (PetscInt c = 0; c < n; ++c) t[c] /= std::sqrt(norm);
  }
  return theta;
}

namespace {

// One direction's projections sorted over the ranks, and the way back. This
// rank's own values (its X rows, then its Y rows) in ascending order are
// `mine` (own[i] the row of the i-th), sent to the ranks in runs of `sent`;
// it receives the runs of `received` into `value` and `side` (0: X, 1: Y),
// whose ascending order is `order`.
struct SortedLine {
  std::vector<PetscInt> own, order;
  std::vector<int> sent, sent_at, received, received_at;
  std::vector<double> value;
  std::vector<char> side;
};

// Regular sampling: each rank's q = size - 1 evenly spaced values (an empty
// rank's at +inf), gathered; the (i + 1) q-th of them, i < q, split the line
// into size parts of about (S + P) / size values each.
PetscErrorCode Splitters(MPI_Comm comm, const std::vector<double> &sorted, std::vector<double> *splitters) {
  PetscMPIInt size;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  const size_t q = (size_t)size - 1, n = sorted.size();
  std::vector<double> mine(q, HUGE_VAL), all(q * (size_t)size);
  for (size_t i = 0; i < q && n > 0; ++i) mine[i] = sorted[(i + 1) * n / (size_t)size];
  PetscCallMPI(MPI_Allgather(mine.data(), (int)q, MPI_DOUBLE, all.data(), (int)q, MPI_DOUBLE, comm));
  std::sort(all.begin(), all.end());
  splitters->resize(q);
  for (size_t i = 0; i < q; ++i) (*splitters)[i] = all[(i + 1) * q];
  PetscFunctionReturn(0);
}

// Sorts the projections p (this rank's rows: x_rows of X, then Y's) over
// the ranks.
PetscErrorCode SortLine(MPI_Comm comm, const std::vector<double> &p, PetscInt x_rows, SortedLine *line) {
  PetscMPIInt size;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  line->own.resize(p.size());
  std::iota(line->own.begin(), line->own.end(), 0);
  std::sort(line->own.begin(), line->own.end(), [&](PetscInt a, PetscInt b) { return p[a] < p[b]; });
  std::vector<double> mine(p.size()), splitters;
  std::vector<char> side(p.size());
  for (size_t i = 0; i < p.size(); ++i) mine[i] = p[line->own[i]], side[i] = line->own[i] >= x_rows;
  PetscCall(Splitters(comm, mine, &splitters));
  line->sent.assign((size_t)size, 0), line->received.assign((size_t)size, 0);
  for (double v : mine) ++line->sent[std::upper_bound(splitters.begin(), splitters.end(), v) - splitters.begin()];
  PetscCallMPI(MPI_Alltoall(line->sent.data(), 1, MPI_INT, line->received.data(), 1, MPI_INT, comm));
  line->sent_at.assign((size_t)size, 0), line->received_at.assign((size_t)size, 0);
  std::exclusive_scan(line->sent.begin(), line->sent.end(), line->sent_at.begin(), 0);
  std::exclusive_scan(line->received.begin(), line->received.end(), line->received_at.begin(), 0);
  const size_t n = (size_t)(line->received_at.back() + line->received.back());
  line->value.resize(n), line->side.resize(n);
  PetscCallMPI(MPI_Alltoallv(mine.data(), line->sent.data(), line->sent_at.data(), MPI_DOUBLE, line->value.data(),
                             line->received.data(), line->received_at.data(), MPI_DOUBLE, comm));
  PetscCallMPI(MPI_Alltoallv(side.data(), line->sent.data(), line->sent_at.data(), MPI_CHAR, line->side.data(),
                             line->received.data(), line->received_at.data(), MPI_CHAR, comm));
  line->order.resize(n);
  std::iota(line->order.begin(), line->order.end(), 0);
  std::sort(line->order.begin(), line->order.end(),
            [&](PetscInt a, PetscInt b) { return line->value[a] < line->value[b]; });
  PetscFunctionReturn(0);
}

// Along one sorted line: every received value's u (its mean distance to the
// other side less that to its own side, itself left out), in received
// order, and this rank's part of D_theta^2 (sum u/S over X, u/P over Y) and
// of the floor (the within-side means over S^2 and P^2).
PetscErrorCode LineTerms(MPI_Comm comm, const SortedLine &line, std::vector<double> *u, double *part,
                         double *floor) {
  double mine[4] = {0, 0, 0, 0}, before[4] = {0, 0, 0, 0}, total[4]; // count and sum of X, of Y
  PetscMPIInt rank;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  for (size_t i = 0; i < line.value.size(); ++i) mine[2 * line.side[i]] += 1, mine[2 * line.side[i] + 1] += line.value[i];
  PetscCallMPI(MPI_Exscan(mine, before, 4, MPI_DOUBLE, MPI_SUM, comm));
  if (rank == 0) std::fill(before, before + 4, 0.0); // (MPI_Exscan leaves rank 0's undefined)
  PetscCallMPI(MPI_Allreduce(mine, total, 4, MPI_DOUBLE, MPI_SUM, comm));
  u->assign(line.value.size(), 0.0);
  *part = 0, *floor = 0;
  for (PetscInt i : line.order) {
    const int a = line.side[i], b = 1 - a;
    const double v = line.value[i], n_a = total[2 * a], n_b = total[2 * b];
    const double c_a = before[2 * a], s_a = before[2 * a + 1], c_b = before[2 * b], s_b = before[2 * b + 1];
    const double own = v * c_a - s_a + (total[2 * a + 1] - s_a - v) - v * (n_a - c_a - 1);
    const double other = v * c_b - s_b + (total[2 * b + 1] - s_b) - v * (n_b - c_b);
    (*u)[i] = other / n_b - own / (n_a - 1);
    *part += (*u)[i] / n_a, *floor += own / (n_a - 1) / n_a / n_a;
    before[2 * a] += 1, before[2 * a + 1] += v;
  }
  PetscFunctionReturn(0);
}

// The received values' u back to the ranks that own their rows, added to
// ubar (this rank's rows).
PetscErrorCode ReturnTerms(MPI_Comm comm, const SortedLine &line, const std::vector<double> &u,
                           std::vector<double> *ubar) {
  std::vector<double> back(line.own.size());
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Alltoallv(u.data(), line.received.data(), line.received_at.data(), MPI_DOUBLE, back.data(),
                             line.sent.data(), line.sent_at.data(), MPI_DOUBLE, comm));
  for (size_t i = 0; i < back.size(); ++i) (*ubar)[(size_t)line.own[i]] += back[i];
  PetscFunctionReturn(0);
}

// The mean and variance of the rows' ubar of each side, over every rank
// (two passes).
PetscErrorCode SideVariances(MPI_Comm comm, const std::vector<double> &ubar, PetscInt x_rows, double n[2],
                             double var[2]) {
  double sums[4] = {0, 0, (double)x_rows, (double)(ubar.size() - (size_t)x_rows)}, dev[2] = {0, 0};
  PetscFunctionBeginUser;
  for (size_t r = 0; r < ubar.size(); ++r) sums[(PetscInt)r >= x_rows] += ubar[r];
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, sums, 4, MPI_DOUBLE, MPI_SUM, comm));
  n[0] = sums[2], n[1] = sums[3];
  for (size_t r = 0; r < ubar.size(); ++r) {
    const int side = (PetscInt)r >= x_rows;
    dev[side] += std::pow(ubar[r] - sums[side] / n[side], 2);
  }
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, dev, 2, MPI_DOUBLE, MPI_SUM, comm));
  for (int side = 0; side < 2; ++side) var[side] = dev[side] / (n[side] - 1);
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode EnergyOf(MPI_Comm comm, const double *X, PetscInt x_rows, const double *Y, PetscInt y_rows,
                        PetscInt n, PetscInt stride, PetscInt K, std::uint64_t seed, Energy *e) {
  const std::vector<double> theta = EnergyDirections(n, K, seed);
  const double c = SphereMeanAbs(n);
  std::vector<double> p((size_t)(x_rows + y_rows)), ubar(p.size(), 0.0), u, along((size_t)K, 0.0), floor((size_t)K);
  PetscInt rows[2] = {x_rows, y_rows};
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, rows, 2, MPIU_INT, MPI_SUM, comm));
  PetscCheck(rows[0] >= 2 && rows[1] >= 2, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "the energy distance needs two samples or more of each side (given %" PetscInt_FMT " and %" PetscInt_FMT
             ")", rows[0], rows[1]);
  for (PetscInt k = 0; k < K; ++k) {
    const double *t = theta.data() + k * n;
    for (PetscInt r = 0; r < x_rows + y_rows; ++r) {
      const double *row = r < x_rows ? X + (size_t)r * stride : Y + (size_t)(r - x_rows) * stride;
      p[(size_t)r] = std::inner_product(row, row + n, t, 0.0);
    }
    SortedLine line;
    PetscCall(SortLine(comm, p, x_rows, &line));
    PetscCall(LineTerms(comm, line, &u, &along[(size_t)k], &floor[(size_t)k]));
    PetscCall(ReturnTerms(comm, line, u, &ubar));
  }
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, along.data(), (int)K, MPI_DOUBLE, MPI_SUM, comm));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, floor.data(), (int)K, MPI_DOUBLE, MPI_SUM, comm));
  for (double &v : ubar) v /= (double)K * c;
  double count[2] = {0, 0}, var[2] = {0, 0};
  PetscCall(SideVariances(comm, ubar, x_rows, count, var));
  *e = Energy();
  e->S = rows[0], e->P = rows[1];
  for (double &a : along) a /= c, e->value += a / (double)K;
  for (double f : floor) e->floor += f / c / (double)K;
  double spread = 0;
  for (double a : along) spread += std::pow(a - e->value, 2);
  e->se_directions = K > 1 ? std::sqrt(spread / (double)(K - 1) / (double)K) : 0.0;
  e->se_samples = std::sqrt(4 * var[0] / count[0] + 4 * var[1] / count[1]);
  e->se = std::hypot(e->se_samples, e->se_directions);
  e->along = std::move(along);
  PetscFunctionReturn(0);
}

} // namespace mft
