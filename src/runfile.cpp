// Parallel HDF5: row-range hyperslabs, data files, run files.
#include "mft/runfile.hpp"

#include <hdf5.h>

#include <cmath>
#include <cstdio>
#include <sstream>

namespace mft {

namespace {

#define H5Check(expr, comm)                                                                                    \
  do {                                                                                                         \
    if ((expr) < 0) SETERRQ(comm, PETSC_ERR_LIB, "HDF5 call failed: %s", #expr);                               \
  } while (0)

// An open file with MPI-IO access and collective transfers.
struct File {
  hid_t id = -1, dxpl = -1;
};

PetscErrorCode FileOpen(MPI_Comm comm, const std::string &path, bool create, File *f) {
  PetscFunctionBeginUser;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); // errors are reported as one line by us
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Check(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL), comm);
  if (create) {
    f->id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    PetscCheck(f->id >= 0, comm, PETSC_ERR_FILE_OPEN, "cannot create '%s'", path.c_str());
  } else {
    f->id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    PetscCheck(f->id >= 0, comm, PETSC_ERR_FILE_OPEN, "cannot open '%s' as an HDF5 file", path.c_str());
  }
  f->dxpl = H5Pcreate(H5P_DATASET_XFER);
  H5Check(H5Pset_dxpl_mpio(f->dxpl, H5FD_MPIO_COLLECTIVE), comm);
  PetscFunctionReturn(0);
}

PetscErrorCode FileClose(MPI_Comm comm, File *f) {
  PetscFunctionBeginUser;
  if (f->dxpl >= 0) H5Pclose(f->dxpl);
  if (f->id >= 0) H5Check(H5Fclose(f->id), comm);
  f->id = f->dxpl = -1;
  PetscFunctionReturn(0);
}

// Selects, in a dataset of shape dims whose first `lead` dimensions are
// flattened into rows, the rows [r.begin, r.end): at most three hyperslabs.
void SelectRows(hid_t space, const std::vector<hsize_t> &dims, int lead, Range r) {
  H5Sselect_none(space);
  const hsize_t B = lead == 2 ? dims[1] : 1;
  std::vector<hsize_t> start(dims.size(), 0), count(dims);
  hsize_t cur = (hsize_t)r.begin, end = (hsize_t)r.end;
  while (cur < end) {
    const hsize_t a = cur / B, b = cur % B;
    hsize_t n;
    if (lead == 1 || (b == 0 && end - cur >= B)) {
      const hsize_t rows = lead == 1 ? end - cur : (end - cur) / B;
      start[0] = a;
      count[0] = rows;
      if (lead == 2) start[1] = 0, count[1] = B;
      n = rows * B;
    } else {
      n = std::min(B - b, end - cur);
      start[0] = a, count[0] = 1, start[1] = b, count[1] = n;
    }
    H5Sselect_hyperslab(space, H5S_SELECT_OR, start.data(), nullptr, count.data(), nullptr);
    cur += n;
  }
}

hsize_t RowSize(const std::vector<hsize_t> &dims, int lead) {
  hsize_t s = 1;
  for (size_t i = (size_t)lead; i < dims.size(); ++i) s *= dims[i];
  return s;
}

// Writes or reads (collectively) rows r of an open dataset from or to buf.
herr_t TransferRows(const File &f, hid_t dset, hid_t fspace, const std::vector<hsize_t> &dims, int lead, Range r,
                    double *buf, bool write) {
  SelectRows(fspace, dims, lead, r);
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

// Writes rows r (buf holds them contiguously) of a new dataset `name`.
PetscErrorCode WriteRows(MPI_Comm comm, const File &f, const std::string &name, const std::vector<hsize_t> &dims,
                         int lead, Range r, const double *buf) {
  PetscFunctionBeginUser;
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t fspace = H5Screate_simple((int)dims.size(), dims.data(), nullptr);
  hid_t dset = H5Dcreate2(f.id, name.c_str(), H5T_IEEE_F64LE, fspace, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  H5Pclose(lcpl);
  PetscCheck(dset >= 0, comm, PETSC_ERR_FILE_WRITE, "cannot create dataset %s", name.c_str());
  if (H5Sget_simple_extent_npoints(fspace) == 0) { // an empty history: the dataset alone
    H5Sclose(fspace);
    H5Dclose(dset);
    PetscFunctionReturn(0);
  }
  H5Check(TransferRows(f, dset, fspace, dims, lead, r, const_cast<double *>(buf), true), comm);
  H5Sclose(fspace);
  H5Dclose(dset);
  PetscFunctionReturn(0);
}

// Shape of dataset `name`, empty when it does not exist.
std::vector<hsize_t> Shape(const File &f, const std::string &name) {
  std::vector<hsize_t> dims;
  if (H5Lexists(f.id, "/data", H5P_DEFAULT) <= 0 || H5Lexists(f.id, name.c_str(), H5P_DEFAULT) <= 0) return dims;
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

PetscErrorCode ReadRows(MPI_Comm comm, const File &f, const std::string &name, const std::vector<hsize_t> &dims,
                        int lead, Range r, double *buf) {
  PetscFunctionBeginUser;
  hid_t dset = H5Dopen2(f.id, name.c_str(), H5P_DEFAULT);
  PetscCheck(dset >= 0, comm, PETSC_ERR_FILE_READ, "cannot open dataset %s", name.c_str());
  hid_t fspace = H5Dget_space(dset);
  herr_t err = TransferRows(f, dset, fspace, dims, lead, r, buf, false);
  H5Sclose(fspace);
  H5Dclose(dset);
  PetscCheck(err >= 0, comm, PETSC_ERR_FILE_READ, "cannot read dataset %s (damaged file?)", name.c_str());
  PetscFunctionReturn(0);
}

std::string ShapeText(const std::vector<hsize_t> &dims) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < dims.size(); ++i) os << (i ? ", " : "") << dims[i];
  os << (dims.size() == 1 ? ",)" : ")");
  return os.str();
}

void Attribute(hid_t obj, const std::string &key, const std::string &value) {
  // Integers and reals are stored as numbers, everything else as text.
  char *end = nullptr;
  long long iv = std::strtoll(value.c_str(), &end, 10);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr;
  if (!value.empty() && *end == '\0') {
    attr = H5Acreate2(obj, key.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, H5T_NATIVE_LLONG, &iv);
  } else {
    double dv = std::strtod(value.c_str(), &end);
    if (!value.empty() && *end == '\0') {
      attr = H5Acreate2(obj, key.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT);
      H5Awrite(attr, H5T_NATIVE_DOUBLE, &dv);
    } else {
      hid_t type = H5Tcopy(H5T_C_S1);
      H5Tset_size(type, value.size() + 1);
      attr = H5Acreate2(obj, key.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
      H5Awrite(attr, type, value.c_str());
      H5Tclose(type);
    }
  }
  H5Aclose(attr);
  H5Sclose(space);
}

// The owned rows of a distributed Vec whose entries are rows of a dataset.
PetscErrorCode WriteVec(MPI_Comm comm, const File &f, const std::string &name, const std::vector<hsize_t> &dims,
                        Range rows, Vec v) {
  const PetscScalar *a;
  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(v, &a));
  PetscCall(WriteRows(comm, f, name, dims, 2, rows, a));
  PetscCall(VecRestoreArrayRead(v, &a));
  PetscFunctionReturn(0);
}

// A small array known on every rank: rank 0 writes it.
PetscErrorCode WriteReplicated(MPI_Comm comm, const File &f, const std::string &name,
                               const std::vector<hsize_t> &dims, const double *buf) {
  PetscMPIInt rank;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  Range all;
  all.end = rank == 0 ? (PetscInt)dims[0] : 0;
  PetscCall(WriteRows(comm, f, name, dims, 1, all, buf));
  PetscFunctionReturn(0);
}

// Every block of the owned heads of theta, as /group/Q, /group/K, ...
PetscErrorCode WriteHeads(MPI_Comm comm, const File &f, const std::string &group, const Heads &h, Vec theta) {
  const HeadShape &s = h.shape;
  const PetscScalar *t;
  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(theta, &t));
  for (PetscInt b = 0; b < s.blocks(); ++b) {
    const PetscInt rows = s.block_rows(b), cols = s.block_cols(b), n = rows * cols;
    std::vector<double> buf((size_t)(h.owned.size() * n));
    for (PetscInt g = 0; g < h.owned.size(); ++g)
      for (PetscInt e = 0; e < n; ++e) buf[g * n + e] = t[g * s.size + s.block_offset(b) + e];
    std::vector<hsize_t> dims = {(hsize_t)h.L, (hsize_t)h.H, (hsize_t)rows, (hsize_t)cols};
    PetscCall(WriteRows(comm, f, group + "/" + block_name(b), dims, 2, h.owned, buf.data()));
  }
  PetscCall(VecRestoreArrayRead(theta, &t));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode DataFileConform(MPI_Comm comm, Settings *s) {
  const std::string &path = s->data.file;
  File f;
  PetscFunctionBeginUser;
  PetscCall(FileOpen(comm, path, false, &f));
  const auto tokens = Shape(f, "/data/tokens"), targets = Shape(f, "/data/targets"),
             readout = Shape(f, "/data/readout");
  PetscCall(FileClose(comm, &f));
  const char *p = path.c_str();
  PetscCheck(tokens.size() == 3, comm, PETSC_ERR_FILE_UNEXPECTED,
             "data file %s: /data/tokens %s, expected a dataset of shape (M, N, d)", p,
             tokens.empty() ? "is missing" : ("has shape " + ShapeText(tokens)).c_str());
  PetscCheck(!targets.empty(), comm, PETSC_ERR_FILE_UNEXPECTED, "data file %s: /data/targets is missing", p);
  const PetscInt M = (PetscInt)tokens[0], N = (PetscInt)tokens[1], d = (PetscInt)tokens[2];
  PetscCheck(M > 0 && N > 0 && d > 0, comm, PETSC_ERR_FILE_UNEXPECTED, "data file %s: /data/tokens is empty %s", p,
             ShapeText(tokens).c_str());
  struct Given { const char *key; PetscInt *value; PetscInt file; };
  for (Given g : {Given{"data.M", &s->data.M, M}, Given{"data.N", &s->data.N, N}, Given{"model.d", &s->model.d, d}}) {
    PetscCheck(!s->is_explicit(g.key) || *g.value == g.file, comm, PETSC_ERR_USER_INPUT,
               "%s = %" PetscInt_FMT " but data file %s has %" PetscInt_FMT, g.key, *g.value, p, g.file);
    *g.value = g.file;
    s->update(g.key, std::to_string(g.file));
  }
  if (s->loss.kind == LossKind::token) {
    PetscCheck(targets == tokens, comm, PETSC_ERR_FILE_UNEXPECTED,
               "data file %s: /data/targets has shape %s, but loss.kind = token needs (M, N, d) = %s", p,
               ShapeText(targets).c_str(), ShapeText(tokens).c_str());
  } else {
    PetscCheck(targets.size() == 2 && targets[0] == tokens[0], comm, PETSC_ERR_FILE_UNEXPECTED,
               "data file %s: /data/targets has shape %s, but loss.kind = pooled needs (M, c) with M = %" PetscInt_FMT,
               p, ShapeText(targets).c_str(), M);
    const PetscInt c = (PetscInt)targets[1];
    PetscCheck(readout.size() == 2 && (PetscInt)readout[0] == c && (PetscInt)readout[1] == d, comm,
               PETSC_ERR_FILE_UNEXPECTED, "data file %s: /data/readout %s, loss.kind = pooled needs (c, d) = (%" PetscInt_FMT ", %" PetscInt_FMT ")",
               p, readout.empty() ? "is missing" : ("has shape " + ShapeText(readout)).c_str(), c, d);
    PetscCheck(!s->is_explicit("loss.c") || s->loss.c == c, comm, PETSC_ERR_USER_INPUT,
               "loss.c = %" PetscInt_FMT " but data file %s has c = %" PetscInt_FMT, s->loss.c, p, c);
    s->loss.c = c;
    s->update("loss.c", std::to_string(c));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode DataFileRead(MPI_Comm comm, const std::string &path, const TokenLayout &t, Vec x0, Targets *y) {
  File f;
  PetscScalar *a;
  PetscFunctionBeginUser;
  PetscCall(FileOpen(comm, path, false, &f));
  const std::vector<hsize_t> dims = {(hsize_t)t.M, (hsize_t)t.N, (hsize_t)t.d};
  PetscCall(VecGetArray(x0, &a));
  PetscCall(ReadRows(comm, f, "/data/tokens", dims, 2, t.owned, a));
  PetscCall(VecRestoreArray(x0, &a));
  if (y->kind == LossKind::token) {
    PetscCall(VecDuplicate(x0, &y->y));
    PetscCall(VecGetArray(y->y, &a));
    PetscCall(ReadRows(comm, f, "/data/targets", dims, 2, t.owned, a));
    PetscCall(VecRestoreArray(y->y, &a));
  } else {
    const auto zdims = Shape(f, "/data/targets");
    y->c = (PetscInt)zdims[1];
    y->z.resize((size_t)(t.M * y->c));
    y->W.resize((size_t)(y->c * t.d));
    Range all;
    all.end = t.M;
    PetscCall(ReadRows(comm, f, "/data/targets", zdims, 1, all, y->z.data()));
    all.end = y->c;
    PetscCall(ReadRows(comm, f, "/data/readout", {(hsize_t)y->c, (hsize_t)t.d}, 1, all, y->W.data()));
  }
  PetscCall(FileClose(comm, &f));
  // A NaN in the data would poison every result: refuse it here.
  PetscReal nx;
  PetscCall(VecNorm(x0, NORM_INFINITY, &nx));
  PetscCheck(std::isfinite(nx), comm, PETSC_ERR_FILE_UNEXPECTED, "data file %s: /data/tokens holds NaN or Inf", path.c_str());
  PetscFunctionReturn(0);
}

PetscErrorCode RunFileWrite(const Problem &p, const History &h, PetscInt step, PetscBool with_grad,
                            const std::string &path) {
  MPI_Comm comm = p.grid.comm;
  const Settings &s = p.settings;
  const TokenLayout &t = p.tokens;
  const std::string tmp = path + ".tmp";
  File f;
  PetscFunctionBeginUser;
  PetscCall(FileOpen(comm, tmp, true, &f));
  const std::vector<hsize_t> tdims = {(hsize_t)t.M, (hsize_t)t.N, (hsize_t)t.d};
  PetscCall(WriteVec(comm, f, "/data/tokens", tdims, t.owned, p.x0));
  if (p.targets.kind == LossKind::token) {
    PetscCall(WriteVec(comm, f, "/data/targets", tdims, t.owned, p.targets.y));
  } else {
    PetscCall(WriteReplicated(comm, f, "/data/targets", {(hsize_t)t.M, (hsize_t)p.targets.c}, p.targets.z.data()));
    PetscCall(WriteReplicated(comm, f, "/data/readout", {(hsize_t)p.targets.c, (hsize_t)t.d}, p.targets.W.data()));
  }
  PetscCall(WriteHeads(comm, f, "/params", p.heads, p.heads.theta));
  if (with_grad) PetscCall(WriteHeads(comm, f, "/grad", p.heads, p.grad));
  PetscCall(WriteVec(comm, f, "/output/tokens", tdims, t.owned, p.x1));
  const hsize_t n = h.loss.size();
  PetscCall(WriteReplicated(comm, f, "/history/loss", {n}, h.loss.data()));
  PetscCall(WriteReplicated(comm, f, "/history/max_param_norm", {n}, h.max_param_norm.data()));

  hid_t root = H5Gopen2(f.id, "/", H5P_DEFAULT);
  for (auto &kv : s.record) Attribute(root, kv.first, kv.second);
  const std::pair<const char *, const char *> short_names[] = {
      {"L", "model.L"}, {"H", "model.H"}, {"d", "model.d"}, {"k", "model.k"}, {"M", "data.M"}, {"N", "data.N"},
      {"beta", "model.beta"}, {"head_kind", "model.head_kind"}, {"causal", "model.causal"}, {"loss", "loss.kind"},
      {"optimizer", "train.optimizer"}, {"lr", "train.lr"}, {"seed", "init.seed"}};
  for (auto &sn : short_names)
    for (auto &kv : s.record)
      if (kv.first == sn.second) Attribute(root, sn.first, kv.second);
  Attribute(root, "step", std::to_string(step));
  Attribute(root, "risk", [&] { std::ostringstream os; os.precision(17); os << p.risk; return os.str(); }());
  Attribute(root, "command", s.command);
  Attribute(root, "ranks", std::to_string(p.grid.size));
  Attribute(root, "grid", std::to_string(p.grid.Ph) + "x" + std::to_string(p.grid.Pt));
  H5Gclose(root);
  PetscCall(FileClose(comm, &f));
  PetscCallMPI(MPI_Barrier(comm));
  if (p.grid.rank == 0)
    PetscCheck(std::rename(tmp.c_str(), path.c_str()) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE,
               "cannot rename %s to %s", tmp.c_str(), path.c_str());
  PetscCallMPI(MPI_Barrier(comm));
  PetscFunctionReturn(0);
}

} // namespace mft
