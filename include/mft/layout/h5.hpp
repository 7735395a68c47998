// Parallel HDF5 plumbing shared by run files and checkpoints.
//
// Datasets are row-major float64; the first `lead` dimensions (1 or 2) are
// rows, distributed over ranks as contiguous row ranges (tokens, heads). Every
// write adds to a checksum that depends only on the dataset's name, the flat
// index of each entry and its bits: a sum mod 2^64, so that it is the same for
// any split over ranks, and a file can be verified by reading it back on any
// number of ranks.
#pragma once

#include "mft/settings/options.hpp"

#include "mft/layout/grid.hpp"

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mft::h5 {

struct File {
  MPI_Comm comm = MPI_COMM_NULL;
  std::string path;
  hid_t id = -1, dxpl = -1;
  std::uint64_t sum = 0;             // this rank's part of the checksum of what was written or read
  std::vector<std::string> datasets; // names written, in order
  // Reads refuse a NaN or Inf entry, naming the file, the dataset and the
  // entry (the model's inputs: tokens, targets, readout, weights, heads).
  bool finite = false;
  // A counting file writes nothing: it adds up the bytes its writes would
  // take (with HDF5's overhead), so that a file's room can be reserved first.
  bool counting = false;
  mutable std::uint64_t bytes = 0;
};

// Collective on comm (HDF5's file open).
PetscErrorCode Open(MPI_Comm comm, const std::string &path, bool create, File *f);


// Closes the file. Collective on f->comm.
PetscErrorCode Close(File *f);
// Reserves `bytes` (a counting file's figure) for a file being written, so
// that a full disk is found before the first write and not inside a
// collective one, where HDF5 may fail on some ranks only and leave the others
// waiting. Fails, on every rank, naming the file, the size and the cause.
// Collective on f.comm (rank 0 reserves, and broadcasts the outcome).
PetscErrorCode Reserve(File &f, std::uint64_t bytes);
// Closes a file whose writing failed, ignoring further errors, and removes it.
// Collective on f->comm (HDF5's close; rank 0 removes the file).
void Discard(File *f);

// Writes rows r of a new dataset `name` of shape dims (buf holds them contiguously).
// Collective on f.comm, as the other writes and reads: every rank takes part,
// with its own rows (possibly none).
PetscErrorCode WriteRows(File &f, const std::string &name, const std::vector<hsize_t> &dims, int lead, Range r,
                         const double *buf);
// Writes a new dataset `name` of shape (slices.size(), dims...): slice k holds
// rows r of dims (its first `lead` dimensions flattened) from slices[k].
// Collective on f.comm.
PetscErrorCode WriteSlices(File &f, const std::string &name, const std::vector<hsize_t> &dims, int lead, Range r,
                           const std::vector<const double *> &slices);
// Reads rows r of dataset `name` (whose shape the caller has checked to be dims).
// Collective on f.comm.
PetscErrorCode ReadRows(File &f, const std::string &name, const std::vector<hsize_t> &dims, int lead, Range r,
                        double *buf);

// Shape of a dataset, empty when it does not exist.
// Collective on f.comm (every rank asks HDF5 the same).
std::vector<hsize_t> Shape(const File &f, const std::string &name);
// The shape as text, "(2, 3)". Not collective.
std::string ShapeText(const std::vector<hsize_t> &dims);

// Root attributes: integers and reals are stored as numbers, other values as
// text; with as_text, always as text (a checksum such as "4542e204" is not a number).
// Collective on f.comm.
void WriteAttribute(const File &f, const std::string &key, const std::string &value, bool as_text = false);
// Reads a root attribute as text (numbers printed with 17 digits); false when absent.
// Collective on f.comm.
bool ReadAttribute(const File &f, const std::string &key, std::string *value);

// The checksum of all that f has written or read so far, over all ranks.
// Collective on f.comm.
PetscErrorCode Checksum(File &f, std::uint64_t *sum);
// The checksum as text (16 hex digits). Not collective.
std::string ChecksumText(std::uint64_t sum);

// Reads every dataset a file lists in its `datasets` attribute (rows split
// over the ranks of comm) and returns the stored and the recomputed checksum.
// A file that cannot be read as one of ours is PETSC_ERR_FILE_UNEXPECTED.
// Collective on comm.
PetscErrorCode Verify(MPI_Comm comm, const std::string &path, std::uint64_t *stored, std::uint64_t *computed);

} // namespace mft::h5
