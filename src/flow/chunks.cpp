// The cut of a rank's work into chunks for its threads, and what the
// forward keeps for the adjoint (chunks.hpp).
#include "mft/flow/chunks.hpp"

#include "mft/settings/settings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace mft {

PetscInt RankThreads(PetscInt setting) {
  if (setting > 0) return setting;
  const char *env = std::getenv("OMP_NUM_THREADS");
  return env && std::atoi(env) > 0 ? std::min<PetscInt>(std::atoi(env), kMaxThreads) : 1; // problem.cpp warns of a cap
}

PetscInt QueryChunks(PetscInt units, PetscInt queries, double chunk_bytes) {
  if (units >= kHeadUnits || units < 1) return 1;
  const double copies = chunk_bytes > 0 ? std::floor(kQueryCopyBytes / chunk_bytes) : (double)queries;
  return std::max<PetscInt>(1, std::min({(kHeadUnits + units - 1) / units, queries / kQueryRows,
                                         (PetscInt)std::min(copies, (double)queries)}));
}

PetscInt HeadChunks(PetscInt sequences, PetscInt heads, double copy_bytes) {
  if (sequences >= kHeadUnits || sequences < 1) return 1;
  const double copies = copy_bytes > 0 ? std::floor(kHeadCopyBytes / copy_bytes) : (double)heads;
  return std::max<PetscInt>(
      1, std::min({heads, (kHeadUnits + sequences - 1) / sequences, (PetscInt)std::min(copies + 1.0, (double)heads)}));
}

double KeptBytes(double bytes, double room) {
  return bytes <= kStatisticsBytes && (room < 0 || bytes <= 0.5 * room) ? bytes : 0; // half: the rest has a margin
}

double StatisticsBytes(PetscInt L, PetscInt Hl, PetscInt n, const HeadShape &shape, PetscInt N, double room) {
  if (!attention_statistics_pay(shape, N)) return 0;
  return KeptBytes(8.0 * (double)L * (double)Hl * (double)n * (double)attention_statistics_width(shape), room);
}

KeptForAdjoint KeptForTheAdjoint(PetscInt L, double rows, PetscInt Hl, PetscInt n, const HeadShape &shape, PetscInt N,
                                 double room) {
  KeptForAdjoint k;
  k.rows = KeptBytes(8.0 * (double)L * rows, room);
  k.statistics = StatisticsBytes(L, Hl, n, shape, N, room < 0 ? room : std::max(0.0, room - k.rows));
  return k;
}

} // namespace mft
