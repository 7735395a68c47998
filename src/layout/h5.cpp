// Parallel HDF5: row-range hyperslabs, typed attributes, checksums.
#include "mft/layout/h5.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace mft::h5 {

#define H5Check(expr, comm)                                                                                    \
  do {                                                                                                         \
    if ((expr) < 0) SETERRQ(comm, PETSC_ERR_FILE_WRITE, "HDF5 call failed: %s", #expr);                        \
  } while (0)

namespace {

// HDF5's bytes beside the data, as a counting file estimates them: more than
// a dataset's object header and link, an attribute and a file's superblock
// and root group take.
constexpr std::uint64_t kFileOverhead = 16384, kDatasetOverhead = 2048, kAttributeOverhead = 256;

// The innermost message of HDF5's error stack (where a failed write names
// the system's reason), or, when it has none, a full disk seen directly.
herr_t innermost(unsigned n, const H5E_error2_t *e, void *out) {
  if (e->desc && *e->desc) *static_cast<std::string *>(out) = e->desc;
  return 0;
}

std::string Cause(const std::string &path) {
  std::string desc;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, &desc);
  const size_t slash = path.rfind('/');
  struct statvfs fs;
  if (statvfs(slash == std::string::npos ? "." : path.substr(0, slash + 1).c_str(), &fs) == 0 && fs.f_bavail == 0)
    return "no space left on the device";
  return desc.empty() ? "HDF5 gives no reason" : desc;
}

// A collective call's outcome as every rank of comm sees it: failed if it
// failed on any rank (a full disk may fail one rank's part of a collective
// write alone, and a rank that went on alone would wait forever).
herr_t Agreed(MPI_Comm comm, herr_t err) {
  int mine = err < 0 ? 1 : 0, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm);
  return any ? -1 : 0;
}

std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t name_salt(const std::string &name) {
  std::uint64_t h = 1469598103934665603ULL; // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// Checksum contribution of entries [first, first + n) of a dataset.
std::uint64_t entries_sum(const std::string &name, std::uint64_t first, const double *buf, std::uint64_t n) {
  const std::uint64_t salt = name_salt(name);
  std::uint64_t sum = 0;
  for (std::uint64_t e = 0; e < n; ++e) {
    std::uint64_t bits;
    std::memcpy(&bits, &buf[e], sizeof bits);
    sum += mix(mix(salt + 0x9e3779b97f4a7c15ULL * (first + e)) ^ bits);
  }
  return sum;
}

hsize_t RowSize(const std::vector<hsize_t> &dims, int lead) {
  hsize_t count = 1;
  for (size_t i = (size_t)lead; i < dims.size(); ++i) count *= dims[i];
  return count;
}

// Selects rows [r.begin, r.end) of a dataset whose first `lead` dimensions
// are flattened into rows: at most three hyperslabs. With slice >= 0 the
// dataset has one more, leading, dimension, and the rows are those of slice.
void SelectRows(hid_t space, const std::vector<hsize_t> &dims, int lead, Range r, hssize_t slice = -1) {
  H5Sselect_none(space);
  const size_t o = slice >= 0 ? 1 : 0; // the rows' first dimension in the dataset
  const hsize_t B = lead == 2 ? dims[1] : 1;
  std::vector<hsize_t> start(dims.size() + o, 0), count(dims.size() + o, 1);
  for (size_t i = 0; i < dims.size(); ++i) count[i + o] = dims[i];
  if (o) start[0] = (hsize_t)slice, count[0] = 1;
  hsize_t cur = (hsize_t)r.begin, end = (hsize_t)r.end;
  while (cur < end) {
    const hsize_t a = cur / B, b = cur % B;
    hsize_t n;
    if (lead == 1 || (b == 0 && end - cur >= B)) {
      const hsize_t rows = lead == 1 ? end - cur : (end - cur) / B;
      start[o] = a;
      count[o] = rows;
      if (lead == 2) start[o + 1] = 0, count[o + 1] = B;
      n = rows * B;
    } else {
      n = std::min(B - b, end - cur);
      start[o] = a, count[o] = 1, start[o + 1] = b, count[o + 1] = n;
    }
    H5Sselect_hyperslab(space, H5S_SELECT_OR, start.data(), nullptr, count.data(), nullptr);
    cur += n;
  }
}

// Writes or reads (collectively) rows r (of slice, if >= 0) of an open dataset from or to buf.
herr_t TransferRows(const File &f, hid_t dset, hid_t fspace, const std::vector<hsize_t> &dims, int lead, Range r,
                    double *buf, bool write, hssize_t slice = -1) {
  SelectRows(fspace, dims, lead, r, slice);
  const hsize_t n = (hsize_t)r.size() * RowSize(dims, lead);
  const hsize_t extent = n ? n : 1; // a rank with no rows selects nothing of a 1-entry space
  hid_t mspace = H5Screate_simple(1, &extent, nullptr);
  if (n == 0) H5Sselect_none(mspace);
  double dummy = 0;
  herr_t err = write ? H5Dwrite(dset, H5T_NATIVE_DOUBLE, mspace, fspace, f.dxpl, n ? buf : &dummy)
                     : H5Dread(dset, H5T_NATIVE_DOUBLE, mspace, fspace, f.dxpl, n ? buf : &dummy);
  H5Sclose(mspace);
  return err;
}

} // namespace


PetscErrorCode Open(MPI_Comm comm, const std::string &path, bool create, File *f) {
  PetscFunctionBeginUser;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); // errors are reported as one line by the caller
  f->comm = comm;
  f->path = path;
  f->sum = 0;
  f->datasets.clear();
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Check(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL), comm);
  if (create) {
    f->id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    PetscCheck(f->id >= 0, comm, PETSC_ERR_FILE_OPEN, "cannot create '%s'", path.c_str());
  } else {
    const std::string why = NotReadable(path);
    if (!why.empty()) H5Pclose(fapl);
    PetscCheck(why.empty(), comm, PETSC_ERR_FILE_OPEN, "cannot open '%s': %s", path.c_str(), why.c_str());
    f->id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    PetscCheck(f->id >= 0, comm, PETSC_ERR_FILE_OPEN, "cannot open '%s' as an HDF5 file", path.c_str());
  }
  f->dxpl = H5Pcreate(H5P_DATASET_XFER);
  H5Check(H5Pset_dxpl_mpio(f->dxpl, H5FD_MPIO_COLLECTIVE), comm);
  PetscFunctionReturn(0);
}

PetscErrorCode Close(File *f) {
  PetscFunctionBeginUser;
  if (f->dxpl >= 0) H5Pclose(f->dxpl);
  const herr_t err = f->id >= 0 ? Agreed(f->comm, H5Fclose(f->id)) : 0;
  f->id = f->dxpl = -1;
  PetscCheck(err >= 0, f->comm, PETSC_ERR_FILE_WRITE, "cannot close '%s': %s", f->path.c_str(),
             Cause(f->path).c_str());
  PetscFunctionReturn(0);
}

PetscErrorCode Reserve(File &f, std::uint64_t bytes) {
  int rank, err = 0;
  PetscFunctionBeginUser;
  bytes += kFileOverhead;
  PetscCallMPI(MPI_Comm_rank(f.comm, &rank));
  if (rank == 0) {
    const int fd = open(f.path.c_str(), O_WRONLY);
    err = fd < 0 ? errno : posix_fallocate(fd, 0, (off_t)bytes);
    if (fd >= 0) close(fd);
  }
  PetscCallMPI(MPI_Bcast(&err, 1, MPI_INT, 0, f.comm));
  PetscCheck(err == 0, f.comm, PETSC_ERR_FILE_WRITE, "cannot write '%s' (%.3g MB): %s", f.path.c_str(), bytes / 1e6,
             err == ENOSPC ? "no space left on the device" : std::strerror(err));
  PetscFunctionReturn(0);
}

void Discard(File *f) {
  if (f->dxpl >= 0) H5Pclose(f->dxpl);
  if (f->id >= 0) H5Fclose(f->id);
  f->id = f->dxpl = -1;
  int rank = 0;
  MPI_Comm_rank(f->comm, &rank);
  if (rank == 0 && !f->path.empty()) std::remove(f->path.c_str());
}

// A new dataset of shape dims, or with `sliced`, (slices.size(), dims...):
// rows r of each slice from slices[k] (one slice, without its dimension, otherwise).
static PetscErrorCode WriteDataset(File &f, const std::string &name, const std::vector<hsize_t> &dims, int lead,
                                   Range r, const std::vector<const double *> &slices, bool sliced) {
  PetscFunctionBeginUser;
  std::vector<hsize_t> all;
  if (sliced) all.push_back((hsize_t)slices.size());
  all.insert(all.end(), dims.begin(), dims.end());
  if (f.counting) {
    f.bytes += kDatasetOverhead + sizeof(double) * RowSize(all, 0);
    PetscFunctionReturn(0);
  }
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t fspace = H5Screate_simple((int)all.size(), all.data(), nullptr);
  hid_t dset = H5Dcreate2(f.id, name.c_str(), H5T_IEEE_F64LE, fspace, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  H5Pclose(lcpl);
  if (Agreed(f.comm, dset >= 0 ? 0 : -1) < 0) {
    if (dset >= 0) H5Dclose(dset);
    H5Sclose(fspace);
    dset = -1;
  }
  PetscCheck(dset >= 0, f.comm, PETSC_ERR_FILE_WRITE, "cannot create dataset %s in '%s': %s", name.c_str(),
             f.path.c_str(), Cause(f.path).c_str());
  f.datasets.push_back(name);
  const hsize_t row = RowSize(dims, lead), slice_size = RowSize(dims, 0);
  herr_t err = 0;
  // An empty history is the dataset alone.
  for (size_t k = 0; k < slices.size() && err >= 0 && slice_size > 0; ++k) {
    f.sum += entries_sum(name, k * slice_size + (std::uint64_t)r.begin * row, slices[k], (std::uint64_t)r.size() * row);
    err = Agreed(f.comm, TransferRows(f, dset, fspace, dims, lead, r, const_cast<double *>(slices[k]), true,
                                      sliced ? (hssize_t)k : -1));
  }
  H5Sclose(fspace);
  const herr_t closed = Agreed(f.comm, H5Dclose(dset));
  PetscCheck(err >= 0 && closed >= 0, f.comm, PETSC_ERR_FILE_WRITE, "cannot write dataset %s to '%s': %s",
             name.c_str(), f.path.c_str(), Cause(f.path).c_str());
  PetscFunctionReturn(0);
}

PetscErrorCode WriteRows(File &f, const std::string &name, const std::vector<hsize_t> &dims, int lead, Range r,
                         const double *buf) {
  PetscFunctionBeginUser;
  PetscCall(WriteDataset(f, name, dims, lead, r, {buf}, false));
  PetscFunctionReturn(0);
}

PetscErrorCode WriteSlices(File &f, const std::string &name, const std::vector<hsize_t> &dims, int lead, Range r,
                           const std::vector<const double *> &slices) {
  PetscFunctionBeginUser;
  PetscCall(WriteDataset(f, name, dims, lead, r, slices, true));
  PetscFunctionReturn(0);
}

// The first entry of a dataset that is NaN or Inf, over the ranks that read
// its parts (entries [first, first + n) here), named with its index.
static PetscErrorCode RefuseNonFinite(const File &f, const std::string &name, const std::vector<hsize_t> &dims,
                                      std::uint64_t first, const double *buf, std::uint64_t n) {
  unsigned long long bad = ULLONG_MAX;
  PetscFunctionBeginUser;
  for (std::uint64_t e = 0; e < n && bad == ULLONG_MAX; ++e)
    if (!std::isfinite(buf[e])) bad = first + e;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, f.comm));
  if (bad == ULLONG_MAX) PetscFunctionReturn(0);
  std::string at;
  for (size_t k = dims.size(); k-- > 0;) { // the row-major index, last dimension first
    at = std::to_string(bad % dims[k]) + (at.empty() ? "" : ", ") + at;
    bad /= dims[k];
  }
  SETERRQ(f.comm, PETSC_ERR_FILE_UNEXPECTED, "%s: %s holds NaN or Inf at [%s]: a model's inputs must be finite",
          f.path.c_str(), name.c_str(), at.c_str());
}

PetscErrorCode ReadRows(File &f, const std::string &name, const std::vector<hsize_t> &dims, int lead, Range r,
                        double *buf) {
  PetscFunctionBeginUser;
  hid_t dset = H5Dopen2(f.id, name.c_str(), H5P_DEFAULT);
  PetscCheck(dset >= 0, f.comm, PETSC_ERR_FILE_UNEXPECTED, "cannot open dataset %s", name.c_str());
  hid_t fspace = H5Dget_space(dset);
  herr_t err = 0;
  if (H5Sget_simple_extent_npoints(fspace) > 0) err = TransferRows(f, dset, fspace, dims, lead, r, buf, false);
  H5Sclose(fspace);
  H5Dclose(dset);
  PetscCheck(err >= 0, f.comm, PETSC_ERR_FILE_UNEXPECTED, "cannot read dataset %s (damaged file?)", name.c_str());
  const hsize_t row = RowSize(dims, lead);
  f.sum += entries_sum(name, (std::uint64_t)r.begin * row, buf, (std::uint64_t)r.size() * row);
  if (f.finite) PetscCall(RefuseNonFinite(f, name, dims, (std::uint64_t)r.begin * row, buf, (std::uint64_t)r.size() * row));
  PetscFunctionReturn(0);
}

std::vector<hsize_t> Shape(const File &f, const std::string &name) {
  std::vector<hsize_t> dims;
  // Each parent group must exist before the link itself can be asked for.
  for (size_t slash = name.find('/', 1); slash != std::string::npos; slash = name.find('/', slash + 1))
    if (H5Lexists(f.id, name.substr(0, slash).c_str(), H5P_DEFAULT) <= 0) return dims;
  if (H5Lexists(f.id, name.c_str(), H5P_DEFAULT) <= 0) return dims;
  hid_t dset = H5Dopen2(f.id, name.c_str(), H5P_DEFAULT);
  if (dset < 0) return dims;
  hid_t space = H5Dget_space(dset);
  int rank = H5Sget_simple_extent_ndims(space);
  if (rank > 0) {
    dims.resize((size_t)rank);
    H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  }
  H5Sclose(space);
  H5Dclose(dset);
  return dims;
}

std::string ShapeText(const std::vector<hsize_t> &dims) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < dims.size(); ++i) os << (i ? ", " : "") << dims[i];
  os << (dims.size() == 1 ? ",)" : ")");
  return os.str();
}

void WriteAttribute(const File &f, const std::string &key, const std::string &value, bool as_text) {
  if (f.counting) {
    f.bytes += kAttributeOverhead + key.size() + value.size();
    return;
  }
  char *end = nullptr;
  errno = 0;
  const long long iv = std::strtoll(value.c_str(), &end, 10);
  // An integer beyond 64 bits (a seed past 2^63) stays text, exact.
  const bool digits = !value.empty() && *end == '\0';
  const bool integer = !as_text && digits && errno != ERANGE;
  const double dv = std::strtod(value.c_str(), &end);
  const bool real = !as_text && !digits && !value.empty() && *end == '\0' && std::isfinite(dv);
  if (H5Aexists(f.id, key.c_str()) > 0) H5Adelete(f.id, key.c_str());
  hid_t space = H5Screate(H5S_SCALAR), attr;
  if (integer) {
    attr = H5Acreate2(f.id, key.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, H5T_NATIVE_LLONG, &iv);
  } else if (real) {
    attr = H5Acreate2(f.id, key.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, H5T_NATIVE_DOUBLE, &dv);
  } else {
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, value.size() + 1);
    attr = H5Acreate2(f.id, key.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, type, value.c_str());
    H5Tclose(type);
  }
  H5Aclose(attr);
  H5Sclose(space);
}

bool ReadAttribute(const File &f, const std::string &key, std::string *value) {
  if (H5Aexists(f.id, key.c_str()) <= 0) return false;
  hid_t attr = H5Aopen(f.id, key.c_str(), H5P_DEFAULT);
  if (attr < 0) return false;
  hid_t type = H5Aget_type(attr);
  const H5T_class_t cls = H5Tget_class(type);
  bool ok = true;
  std::ostringstream os;
  os.precision(17);
  if (cls == H5T_INTEGER) {
    long long v = 0;
    ok = H5Aread(attr, H5T_NATIVE_LLONG, &v) >= 0;
    os << v;
  } else if (cls == H5T_FLOAT) {
    double v = 0;
    ok = H5Aread(attr, H5T_NATIVE_DOUBLE, &v) >= 0;
    os << v;
  } else if (cls == H5T_STRING && !H5Tis_variable_str(type)) {
    std::vector<char> buf(H5Tget_size(type) + 1, '\0');
    ok = H5Aread(attr, type, buf.data()) >= 0;
    os << buf.data();
  } else if (cls == H5T_STRING) { // variable length: how h5py writes a Python str
    char *text = nullptr;
    hid_t memtype = H5Tcopy(H5T_C_S1);
    H5Tset_size(memtype, H5T_VARIABLE);
    H5Tset_cset(memtype, H5Tget_cset(type));
    ok = H5Aread(attr, memtype, &text) >= 0 && text;
    if (ok) os << text;
    if (text) H5free_memory(text);
    H5Tclose(memtype);
  } else if (cls == H5T_ENUM && H5Tget_size(type) == 1) { // h5py's bool (numpy.bool_): FALSE = 0, TRUE = 1
    signed char v = 0;
    hid_t memtype = H5Tcopy(type);
    ok = H5Aread(attr, memtype, &v) >= 0;
    os << (v ? "true" : "false");
    H5Tclose(memtype);
  } else {
    ok = false;
  }
  H5Tclose(type);
  H5Aclose(attr);
  *value = os.str();
  return ok;
}

PetscErrorCode Checksum(File &f, std::uint64_t *sum) {
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Allreduce(&f.sum, sum, 1, MPI_UINT64_T, MPI_SUM, f.comm));
  PetscFunctionReturn(0);
}

std::string ChecksumText(std::uint64_t sum) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", (unsigned long long)sum);
  return text;
}

PetscErrorCode Verify(MPI_Comm comm, const std::string &path, std::uint64_t *stored, std::uint64_t *computed) {
  File f;
  std::string list, sum;
  PetscMPIInt rank, size;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(Open(comm, path, false, &f));
  const bool ours = ReadAttribute(f, "datasets", &list) && ReadAttribute(f, "checksum", &sum);
  if (!ours) PetscCall(Close(&f));
  PetscCheck(ours, comm, PETSC_ERR_FILE_UNEXPECTED, "%s is not an mft run file or checkpoint (no checksum)",
             path.c_str());
  *stored = std::strtoull(sum.c_str(), nullptr, 16);
  std::istringstream names(list);
  for (std::string name; std::getline(names, name, ';');) {
    const std::vector<hsize_t> dims = Shape(f, name);
    if (dims.empty()) PetscCall(Close(&f));
    PetscCheck(!dims.empty(), comm, PETSC_ERR_FILE_UNEXPECTED, "%s: dataset %s is missing", path.c_str(), name.c_str());
    const Range rows = split((PetscInt)dims[0], size, rank);
    std::vector<double> buf((size_t)(rows.size() * RowSize(dims, 1)));
    PetscCall(ReadRows(f, name, dims, 1, rows, buf.data()));
  }
  PetscCall(Checksum(f, computed));
  PetscCall(Close(&f));
  PetscFunctionReturn(0);
}

} // namespace mft::h5
