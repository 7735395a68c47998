/* Replays, under SimGrid's SMPI (tests/bench/simgrid/check.py), one share
 * of a cut sequence's rows as tokens (mft's tokens form, identical rows: see
 * include/mft/tokens.hpp): rank (a, b) = b Ph + a sends share a of its token
 * group's rows to rank (a, b') of every other group b' and receives share a
 * of theirs, all posted at once, then waits. Prints the simulated time (the
 * slowest rank's) and the most bytes a rank sent off its node.
 *   share N d Ph ranks_a_node */
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>
#include <stdlib.h>

static long part(long n, long parts, long i) { return n / parts + (i < n % parts ? 1 : 0); }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int P, r;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  const long N = atol(argv[1]), d = atol(argv[2]), Ph = atol(argv[3]), node = atol(argv[4]);
  const long Pt = P / Ph, a = r % Ph, b = r / Ph;
  const long mine = part(part(N, Pt, b), Ph, a);
  double *buf = SMPI_SHARED_MALLOC(sizeof(double) * N * d);
  MPI_Request *req = malloc(sizeof(MPI_Request) * 2 * Pt);
  int n = 0;
  long off = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (long g = 0; g < Pt; ++g) {
    if (g == b) continue;
    const long theirs = part(part(N, Pt, g), Ph, a);
    const int peer = (int)(g * Ph + a);
    MPI_Irecv(buf, (int)(theirs * d), MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, &req[n++]);
    MPI_Isend(buf, (int)(mine * d), MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, &req[n++]);
    if (peer / node != r / node) off += mine * d * 8;
  }
  MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
  double t = MPI_Wtime() - t0, tmax, offmax;
  double offd = (double)off;
  MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&offd, &offmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (r == 0) printf("simulated %.6g s; messages a rank %ld; bytes off node a rank %.6g\n", tmax, Pt - 1, offmax);
  SMPI_SHARED_FREE(buf);
  free(req);
  MPI_Finalize();
  return 0;
}
