// Run files, checkpoints and data files: what goes where in the docs/model.md layout.
#include "mft/runfile.hpp"

#include "mft/checkpoint.hpp"
#include "mft/error.hpp"
#include "mft/h5.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <cmath>
#include <cstdio>
#include <fcntl.h>
#include <sstream>
#include <unistd.h>

namespace mft {

namespace {

using h5::File;

std::vector<hsize_t> token_dims(const TokenLayout &t) { return {(hsize_t)t.M, (hsize_t)t.N, (hsize_t)t.d}; }

PetscErrorCode WriteTokens(File &f, const std::string &name, const TokenLayout &t, Vec v) {
  const PetscScalar *a;
  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(v, &a));
  PetscCall(h5::WriteRows(f, name, token_dims(t), 2, t.owned, a));
  PetscCall(VecRestoreArrayRead(v, &a));
  PetscFunctionReturn(0);
}

PetscErrorCode ReadTokens(File &f, const std::string &name, const TokenLayout &t, Vec v) {
  PetscScalar *a;
  PetscFunctionBeginUser;
  PetscCall(VecGetArray(v, &a));
  PetscCall(h5::ReadRows(f, name, token_dims(t), 2, t.owned, a));
  PetscCall(VecRestoreArray(v, &a));
  PetscFunctionReturn(0);
}

// A small array known on every rank: rank 0 writes it.
PetscErrorCode WriteReplicated(File &f, const std::string &name, const std::vector<hsize_t> &dims, const double *buf) {
  PetscMPIInt rank;
  Range all;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(f.comm, &rank));
  all.end = rank == 0 ? (PetscInt)dims[0] : 0;
  PetscCall(h5::WriteRows(f, name, dims, 1, all, buf));
  PetscFunctionReturn(0);
}

// Every rank reads all of a small array.
PetscErrorCode ReadReplicated(File &f, const std::string &name, const std::vector<hsize_t> &dims, double *buf) {
  Range all;
  PetscFunctionBeginUser;
  all.end = (PetscInt)dims[0];
  PetscCall(h5::ReadRows(f, name, dims, 1, all, buf));
  PetscFunctionReturn(0);
}

std::vector<hsize_t> block_dims(const Heads &h, PetscInt b, bool scalar) {
  if (scalar) return {(hsize_t)h.L, (hsize_t)h.H};
  return {(hsize_t)h.L, (hsize_t)h.H, (hsize_t)h.shape.block_rows(b), (hsize_t)h.shape.block_cols(b)};
}

// Writes (read = false) or reads the blocks of the owned heads of v as
// group/Q, group/K, ...: whole blocks in theta's layout, or one entry per
// block (scalar: adamw-block's second moment).
PetscErrorCode TransferHeads(File &f, const std::string &group, const Heads &h, Vec v, bool scalar, bool read) {
  const HeadShape &s = h.shape;
  PetscScalar *a;
  PetscFunctionBeginUser;
  PetscCall(VecGetArray(v, &a));
  for (PetscInt b = 0; b < s.blocks(); ++b) {
    const PetscInt n = scalar ? 1 : s.block_rows(b) * s.block_cols(b);
    const PetscInt stride = scalar ? s.blocks() : s.size, offset = scalar ? b : s.block_offset(b);
    std::vector<double> buf((size_t)(h.owned.size() * n));
    const std::string name = group + "/" + block_name(b);
    if (!read) {
      for (PetscInt g = 0; g < h.owned.size(); ++g)
        for (PetscInt e = 0; e < n; ++e) buf[g * n + e] = a[g * stride + offset + e];
      PetscCall(h5::WriteRows(f, name, block_dims(h, b, scalar), 2, h.owned, buf.data()));
    } else {
      const auto dims = h5::Shape(f, name);
      PetscCheck(dims == block_dims(h, b, scalar), f.comm, PETSC_ERR_FILE_UNEXPECTED, "%s has shape %s, expected %s",
                 name.c_str(), h5::ShapeText(dims).c_str(), h5::ShapeText(block_dims(h, b, scalar)).c_str());
      PetscCall(h5::ReadRows(f, name, dims, 2, h.owned, buf.data()));
      for (PetscInt g = 0; g < h.owned.size(); ++g)
        for (PetscInt e = 0; e < n; ++e) a[g * stride + offset + e] = buf[g * n + e];
    }
  }
  PetscCall(VecRestoreArray(v, &a));
  PetscFunctionReturn(0);
}

std::string text(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// Makes a renamed file durable: fsync the file, then its folder.
void sync_path(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

// The end of every file: the list of datasets and their checksum as
// attributes, close, flush, read back and compare, rename tmp to path.
PetscErrorCode Finish(File &f, const std::string &tmp, const std::string &path) {
  MPI_Comm comm = f.comm;
  PetscMPIInt rank;
  std::uint64_t written, read_back, stored;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  std::string list;
  for (auto &name : f.datasets) list += (list.empty() ? "" : ";") + name;
  h5::WriteAttribute(f, "datasets", list, true);
  PetscCall(h5::Checksum(f, &written));
  h5::WriteAttribute(f, "checksum", h5::ChecksumText(written), true);
  PetscCall(h5::Close(&f));
  if (rank == 0) sync_path(tmp);
  // Read everything back before the file may take its final name.
  PetscCall(h5::Verify(comm, tmp, &stored, &read_back));
  PetscCheck(read_back == written && stored == written, comm, PETSC_ERR_FILE_WRITE,
             "%s did not read back as written (checksum %s, read %s): disk or file system fault", tmp.c_str(),
             h5::ChecksumText(written).c_str(), h5::ChecksumText(read_back).c_str());
  PetscCallMPI(MPI_Barrier(comm));
  if (rank == 0) {
    PetscCheck(std::rename(tmp.c_str(), path.c_str()) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE,
               "cannot rename %s to %s", tmp.c_str(), path.c_str());
    sync_path(path);
  }
  PetscCallMPI(MPI_Barrier(comm));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode DataFileConform(MPI_Comm comm, Settings *s) {
  const std::string &path = s->data.file;
  File f;
  PetscFunctionBeginUser;
  PetscCall(h5::Open(comm, path, false, &f));
  const auto tokens = h5::Shape(f, "/data/tokens"), targets = h5::Shape(f, "/data/targets"),
             readout = h5::Shape(f, "/data/readout");
  PetscCall(h5::Close(&f));
  const char *p = path.c_str();
  PetscCheck(tokens.size() == 3, comm, PETSC_ERR_FILE_UNEXPECTED,
             "data file %s: /data/tokens %s, expected a dataset of shape (M, N, d)", p,
             tokens.empty() ? "is missing" : ("has shape " + h5::ShapeText(tokens)).c_str());
  PetscCheck(s->scheme.zero_targets || !targets.empty(), comm, PETSC_ERR_FILE_UNEXPECTED,
             "data file %s: /data/targets is missing", p);
  const PetscInt M = (PetscInt)tokens[0], N = (PetscInt)tokens[1], d = (PetscInt)tokens[2];
  PetscCheck(M > 0 && N > 0 && d > 0, comm, PETSC_ERR_FILE_UNEXPECTED, "data file %s: /data/tokens is empty %s", p,
             h5::ShapeText(tokens).c_str());
  struct Given {
    const char *key;
    PetscInt *value;
    PetscInt file;
  };
  // data.M may take the first data.M sequences of the file; N and d must match it.
  PetscCheck(!s->is_explicit("data.M") || s->data.M <= M, comm, PETSC_ERR_USER_INPUT,
             "data.M = %" PetscInt_FMT " but data file %s has only %" PetscInt_FMT " sequences", s->data.M, p, M);
  if (!s->is_explicit("data.M")) s->data.M = M, s->update("data.M", std::to_string(M));
  for (Given g : {Given{"data.N", &s->data.N, N}, Given{"model.d", &s->model.d, d}}) {
    PetscCheck(!s->is_explicit(g.key) || *g.value == g.file, comm, PETSC_ERR_USER_INPUT,
               "%s = %" PetscInt_FMT " but data file %s has %" PetscInt_FMT, g.key, *g.value, p, g.file);
    *g.value = g.file;
    s->update(g.key, std::to_string(g.file));
  }
  if (s->scheme.zero_targets) PetscFunctionReturn(0); // a probe: the file's tokens only
  if (s->loss.kind == LossKind::token) {
    PetscCheck(targets == tokens, comm, PETSC_ERR_FILE_UNEXPECTED,
               "data file %s: /data/targets has shape %s, but loss.kind = token needs (M, N, d) = %s", p,
               h5::ShapeText(targets).c_str(), h5::ShapeText(tokens).c_str());
  } else {
    PetscCheck(targets.size() == 2 && targets[0] == tokens[0], comm, PETSC_ERR_FILE_UNEXPECTED,
               "data file %s: /data/targets has shape %s, but loss.kind = pooled needs (M, c) with M = %" PetscInt_FMT,
               p, h5::ShapeText(targets).c_str(), M);
    const PetscInt c = (PetscInt)targets[1];
    PetscCheck(readout.size() == 2 && (PetscInt)readout[0] == c && (PetscInt)readout[1] == d, comm,
               PETSC_ERR_FILE_UNEXPECTED,
               "data file %s: /data/readout %s, loss.kind = pooled needs (c, d) = (%" PetscInt_FMT ", %" PetscInt_FMT ")", p,
               readout.empty() ? "is missing" : ("has shape " + h5::ShapeText(readout)).c_str(), c, d);
    PetscCheck(!s->is_explicit("loss.c") || s->loss.c == c, comm, PETSC_ERR_USER_INPUT,
               "loss.c = %" PetscInt_FMT " but data file %s has c = %" PetscInt_FMT, s->loss.c, p, c);
    s->loss.c = c;
    s->update("loss.c", std::to_string(c));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode ReadTargets(File &f, const TokenLayout &t, Targets *y) {
  PetscFunctionBeginUser;
  if (y->kind == LossKind::token) {
    if (!y->y) PetscCall(VecDuplicate(t.state, &y->y));
    PetscCall(ReadTokens(f, "/data/targets", t, y->y));
  } else {
    const auto zdims = h5::Shape(f, "/data/targets");
    PetscCheck(zdims.size() == 2, f.comm, PETSC_ERR_FILE_UNEXPECTED, "/data/targets is not of shape (M, c)");
    y->c = (PetscInt)zdims[1];
    y->z.resize((size_t)(t.M * y->c));
    y->W.resize((size_t)(y->c * t.d));
    PetscCall(ReadReplicated(f, "/data/targets", {(hsize_t)t.M, zdims[1]}, y->z.data())); // the first M (data.M)
    PetscCall(ReadReplicated(f, "/data/readout", {(hsize_t)y->c, (hsize_t)t.d}, y->W.data()));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode DataFileRead(MPI_Comm comm, const std::string &path, const TokenLayout &t, Vec x0, Targets *y) {
  File f;
  PetscReal nx;
  PetscFunctionBeginUser;
  PetscCall(h5::Open(comm, path, false, &f));
  PetscCall(ReadTokens(f, "/data/tokens", t, x0));
  if (y) PetscCall(ReadTargets(f, t, y));
  PetscCall(h5::Close(&f));
  // A NaN in the data would poison every result: refuse it here.
  PetscCall(VecNorm(x0, NORM_INFINITY, &nx));
  PetscCheck(std::isfinite(nx), comm, PETSC_ERR_FILE_UNEXPECTED, "data file %s: /data/tokens holds NaN or Inf",
             path.c_str());
  if (!y) PetscFunctionReturn(0);
  // The targets too: a NaN there would read as a diverged training run.
  if (y->kind == LossKind::token) PetscCall(VecNorm(y->y, NORM_INFINITY, &nx));
  else nx = std::accumulate(y->z.begin(), y->z.end(), 0.0, [](double a, double b) { return a + std::fabs(b); });
  PetscCheck(std::isfinite(nx), comm, PETSC_ERR_FILE_UNEXPECTED, "data file %s: /data/targets holds NaN or Inf",
             path.c_str());
  const double w = std::accumulate(y->W.begin(), y->W.end(), 0.0, [](double a, double b) { return a + std::fabs(b); });
  PetscCheck(std::isfinite(w), comm, PETSC_ERR_FILE_UNEXPECTED, "data file %s: /data/readout holds NaN or Inf",
             path.c_str());
  PetscFunctionReturn(0);
}

namespace {


PetscErrorCode WriteRun(File &f, const Problem &p, const History &h, const Optimizer *opt, PetscInt step,
                        Content what) {
  const Settings &s = p.settings;
  const TokenLayout &t = p.tokens;
  PetscFunctionBeginUser;
  PetscCall(WriteTokens(f, "/data/tokens", t, p.x0));
  if (p.targets.kind == LossKind::token) {
    PetscCall(WriteTokens(f, "/data/targets", t, p.targets.y));
  } else {
    PetscCall(WriteReplicated(f, "/data/targets", {(hsize_t)t.M, (hsize_t)p.targets.c}, p.targets.z.data()));
    PetscCall(WriteReplicated(f, "/data/readout", {(hsize_t)p.targets.c, (hsize_t)t.d}, p.targets.W.data()));
  }
  PetscCall(TransferHeads(f, "/params", p.heads, p.heads.theta, false, false));
  if (what == Content::run_with_gradient) PetscCall(TransferHeads(f, "/grad", p.heads, p.grad, false, false));
  if (opt && opt->m) {
    PetscCall(TransferHeads(f, "/optimizer/m", p.heads, opt->m, false, false));
    PetscCall(TransferHeads(f, "/optimizer/v", p.heads, opt->v, opt->kind == OptimizerKind::adamw_block, false));
  }
  if (what != Content::checkpoint) PetscCall(WriteTokens(f, "/output/tokens", t, p.x1));
  if (what != Content::checkpoint && p.flow.trajectory) PetscCall(TrajectoryWrite(f, *p.flow.trajectory));
  const hsize_t n = h.loss.size();
  PetscCall(WriteReplicated(f, "/history/loss", {n}, h.loss.data()));
  PetscCall(WriteReplicated(f, "/history/max_param_norm", {n}, h.max_param_norm.data()));
  if (!h.heldout.empty()) PetscCall(WriteReplicated(f, "/history/heldout", {h.heldout.size() / 4, 4}, h.heldout.data()));

  for (auto &kv : s.record) h5::WriteAttribute(f, kv.first, kv.second);
  const std::pair<const char *, const char *> short_names[] = {
      {"L", "model.L"}, {"H", "model.H"}, {"d", "model.d"}, {"k", "model.k"}, {"M", "data.M"}, {"N", "data.N"},
      {"beta", "model.beta"}, {"head_kind", "model.head_kind"}, {"causal", "model.causal"}, {"loss", "loss.kind"},
      {"optimizer", "train.optimizer"}, {"lr", "train.lr"}, {"weight_decay", "train.weight_decay"},
      {"beta1", "train.beta1"}, {"beta2", "train.beta2"}, {"eps", "train.eps"}, {"seed", "init.seed"}};
  for (auto &sn : short_names)
    for (auto &kv : s.record)
      if (kv.first == sn.second) h5::WriteAttribute(f, sn.first, kv.second);
  h5::WriteAttribute(f, "step", std::to_string(step));
  if (what != Content::checkpoint) h5::WriteAttribute(f, "risk", text(p.risk));
  h5::WriteAttribute(f, "command", s.command);
  h5::WriteAttribute(f, "content", what == Content::checkpoint ? "checkpoint" : "run");
  h5::WriteAttribute(f, "ranks", std::to_string(p.grid.size));
  h5::WriteAttribute(f, "grid", std::to_string(p.grid.Ph) + "x" + std::to_string(p.grid.Pt));
  PetscFunctionReturn(0);
}

PetscErrorCode WriteResult(File &f, const Settings &s, const std::vector<ResultArray> &arrays,
                           const std::vector<std::pair<std::string, std::string>> &attributes,
                           const Trajectory *trajectory) {
  PetscFunctionBeginUser;
  for (auto &a : arrays) {
    std::vector<hsize_t> dims(a.dims.begin(), a.dims.end());
    PetscCall(WriteReplicated(f, a.name, dims, a.data));
  }
  if (trajectory) PetscCall(TrajectoryWrite(f, *trajectory));
  for (auto &kv : s.record) h5::WriteAttribute(f, kv.first, kv.second);
  for (auto &kv : attributes) h5::WriteAttribute(f, kv.first, kv.second);
  h5::WriteAttribute(f, "command", s.command);
  PetscFunctionReturn(0);
}

// Writes path through its tmp file: `write` first on a counting file (the
// room the file needs, reserved before its first write), then on the file;
// Finish then checks and renames it. On any failure the partial tmp file is
// removed (a file already at path is never touched) and the error carries on.
template <class Write> PetscErrorCode WriteThrough(MPI_Comm comm, const std::string &path, Write write) {
  File f, room;
  PetscFunctionBeginUser;
  room.comm = comm, room.counting = true;
  PetscCall(write(room));
  PetscErrorCode err = h5::Open(comm, path + ".tmp", true, &f);
  if (!err) err = h5::Reserve(f, room.bytes);
  if (!err) err = write(f);
  if (!err) err = Finish(f, path + ".tmp", path);
  if (err) h5::Discard(&f);
  PetscCall(err);
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode RunFileWrite(const Problem &p, const History &h, const Optimizer *opt, PetscInt step, Content what,
                            const std::string &path) {
  PetscFunctionBeginUser;
  PetscCall(WriteThrough(p.grid.comm, path, [&](File &f) { return WriteRun(f, p, h, opt, step, what); }));
  PetscFunctionReturn(0);
}

PetscErrorCode ResultFileWrite(MPI_Comm comm, const Settings &s, const std::vector<ResultArray> &arrays,
                               const std::vector<std::pair<std::string, std::string>> &attributes,
                               const std::string &path, const Trajectory *trajectory) {
  PetscFunctionBeginUser;
  PetscCall(WriteThrough(comm, path, [&](File &f) { return WriteResult(f, s, arrays, attributes, trajectory); }));
  PetscFunctionReturn(0);
}

PetscErrorCode RunFileReadParams(const std::string &path, Problem *p) {
  File f;
  PetscFunctionBeginUser;
  PetscCall(h5::Open(p->grid.comm, path, false, &f));
  PetscCall(TransferHeads(f, "/params", p->heads, p->heads.theta, false, true));
  PetscCall(h5::Close(&f));
  PetscCall(ProblemSetHeads(p));
  PetscFunctionReturn(0);
}

PetscErrorCode RunFileRead(const std::string &path, Problem *p, Optimizer *opt, History *h, PetscInt *step) {
  MPI_Comm comm = p->grid.comm;
  File f;
  std::string value;
  PetscFunctionBeginUser;
  PetscCall(h5::Open(comm, path, false, &f));
  PetscCall(ReadTokens(f, "/data/tokens", p->tokens, p->x0));
  PetscCall(ReadTargets(f, p->tokens, &p->targets));
  PetscCall(TransferHeads(f, "/params", p->heads, p->heads.theta, false, true));
  if (opt && opt->m) {
    PetscCall(TransferHeads(f, "/optimizer/m", p->heads, opt->m, false, true));
    PetscCall(TransferHeads(f, "/optimizer/v", p->heads, opt->v, opt->kind == OptimizerKind::adamw_block, true));
  }
  const auto n = h5::Shape(f, "/history/loss");
  PetscCheck(n.size() == 1, comm, PETSC_ERR_FILE_UNEXPECTED, "%s: /history/loss is missing", path.c_str());
  h->loss.resize(n[0]);
  h->max_param_norm.resize(n[0]);
  PetscCall(ReadReplicated(f, "/history/loss", n, h->loss.data()));
  PetscCall(ReadReplicated(f, "/history/max_param_norm", n, h->max_param_norm.data()));
  const auto nh = h5::Shape(f, "/history/heldout");
  h->heldout.assign(nh.size() == 2 && nh[1] == 4 ? nh[0] * 4 : 0, 0.0);
  if (!h->heldout.empty()) PetscCall(ReadReplicated(f, "/history/heldout", nh, h->heldout.data()));
  PetscCheck(h5::ReadAttribute(f, "step", &value), comm, PETSC_ERR_FILE_UNEXPECTED, "%s has no step attribute",
             path.c_str());
  *step = (PetscInt)std::stoll(value);
  PetscCall(h5::Close(&f));
  PetscCheck((size_t)*step == h->loss.size(), comm, PETSC_ERR_FILE_UNEXPECTED,
             "%s: step %" PetscInt_FMT " but %zu history entries", path.c_str(), *step, h->loss.size());
  if (opt) opt->step = *step;
  PetscCall(ProblemSetHeads(p));
  PetscFunctionReturn(0);
}

bool RunDefining(const Settings &s, const std::string &key) {
  for (const char *section : {"model.", "data.", "init.", "loss."})
    if (key.rfind(section, 0) == 0) return true;
  for (const char *k : {"train.optimizer", "train.lr", "train.beta1", "train.beta2", "train.eps", "train.weight_decay",
                        "train.schedule", "train.warmup", "train.lr_min", "train.batch", "train.seed"})
    if (key == k) return true;
  return key == "train.steps" && s.train.schedule == "cosine"; // the cosine schedule spans the steps
}

bool SameSetting(const std::string &a, const std::string &b) {
  if (a == b) return true;
  char *ea, *eb;
  const double x = std::strtod(a.c_str(), &ea), y = std::strtod(b.c_str(), &eb);
  return !a.empty() && !b.empty() && *ea == '\0' && *eb == '\0' && x == y;
}

// What a params file's shapes say where it records no setting (a file another
// program wrote): model.L, model.H, model.k, model.d from /params/Q (L, H, k,
// d), model.head_kind from whether /params/O is there.
static PetscErrorCode SettingsFromShapes(MPI_Comm comm, const std::string &path, const std::vector<std::string> &keys,
                                         std::vector<std::string> *values) {
  File f;
  PetscFunctionBeginUser;
  PetscCall(h5::Open(comm, path, false, &f));
  const auto Q = h5::Shape(f, "/params/Q"), O = h5::Shape(f, "/params/O");
  PetscCall(h5::Close(&f));
  if (Q.size() != 4) PetscFunctionReturn(0); // RunFileReadParams names what is missing
  const std::map<std::string, std::string> implied = {{"model.L", std::to_string(Q[0])},
                                                      {"model.H", std::to_string(Q[1])},
                                                      {"model.k", std::to_string(Q[2])},
                                                      {"model.d", std::to_string(Q[3])},
                                                      {"model.head_kind", O.empty() ? "qkv" : "qkvo"}};
  for (size_t i = 0; i < keys.size(); ++i)
    if ((*values)[i].empty() && implied.count(keys[i])) (*values)[i] = implied.at(keys[i]);
  PetscFunctionReturn(0);
}

PetscErrorCode SettingsFromFiles(MPI_Comm comm, const std::string &command, const std::vector<std::string> &args,
                                 Settings *s) {
  const std::vector<std::string> model = {"model.L",    "model.H",      "model.d",   "model.k", "model.head_kind",
                                          "model.beta", "model.causal", "loss.kind", "loss.c",  "loss.readout_seed"};
  enum class Given { refused, checked_later, model_wins };
  struct Source {
    std::string option, path;
    std::vector<std::string> keys;
    Given given;
  };
  std::vector<Source> sources;
  if (!s->params_file.empty()) sources.push_back({"params.file", s->params_file, model, Given::refused});
  if (command == "train" && !s->restart.empty() && s->restart != "auto") {
    std::vector<std::string> keys = {"train.steps"}; // kept below unless the file's schedule is cosine
    for (auto &kv : s->record)
      if (RunDefining(*s, kv.first) && kv.first != "data.file") keys.push_back(kv.first);
    sources.push_back({"--restart", s->restart, keys, Given::checked_later});
  }
  if (!s->data.file.empty()) sources.push_back({"data.file", s->data.file, model, Given::model_wins});
  std::vector<std::string> extra = args, taken;
  PetscBool help;
  PetscFunctionBeginUser;
  if (sources.empty()) PetscFunctionReturn(0);
  for (const Source &src : sources) {
    std::vector<std::string> values;
    if (src.given == Given::checked_later) { // a damaged checkpoint is named as the restart's
      PetscCall(PetscPushErrorHandler(ErrorCapture, nullptr));
      const PetscErrorCode err = RunFileAttributes(comm, src.path, src.keys, &values);
      PetscCall(PetscPopErrorHandler());
      std::string from;
      if (err) PetscCall(CheckpointResolve(comm, *s, &from));
      PetscCheck(!err, comm, PETSC_ERR_FILE_UNEXPECTED, "%s", captured_error());
    } else {
      PetscCall(RunFileAttributes(comm, src.path, src.keys, &values));
      if (src.option == "params.file") PetscCall(SettingsFromShapes(comm, src.path, src.keys, &values));
    }
    // train.schedule is run-defining, so a checkpoint's is among the values read.
    const auto at = std::find(src.keys.begin(), src.keys.end(), "train.schedule");
    const std::string schedule = at == src.keys.end() ? "" : values[at - src.keys.begin()];
    const bool records = std::any_of(values.begin(), values.end(), [](const std::string &v) { return !v.empty(); });
    PetscCheck(records || src.given == Given::model_wins, comm, PETSC_ERR_FILE_UNEXPECTED,
               "%s %s records no settings %s", src.option.c_str(), src.path.c_str(),
               src.option == "params.file" ? "and has no /params/Q of shape (L, H, k, d): not a params file"
                                           : "(not a run file or checkpoint of mft)");
    for (size_t i = 0; i < src.keys.size(); ++i) {
      const std::string &key = src.keys[i];
      if (values[i].empty() || !SettingsReads(command, key) || std::find(taken.begin(), taken.end(), key) != taken.end())
        continue;
      if (key == "train.steps" && schedule != "cosine") continue;
      if (!s->is_explicit(key)) {
        extra.insert(extra.end(), {"--" + key, values[i]});
        taken.push_back(key);
        continue;
      }
      if (src.given == Given::checked_later || (src.given == Given::model_wins && key.rfind("model.", 0) == 0)) continue;
      std::string now;
      for (auto &kv : s->record)
        if (kv.first == key) now = kv.second;
      PetscCheck(SameSetting(now, values[i]), comm, PETSC_ERR_USER_INPUT, "%s = %s is given, but %s %s has %s = %s",
                 key.c_str(), now.c_str(), src.option.c_str(), src.path.c_str(), key.c_str(), values[i].c_str());
    }
  }
  PetscCall(SettingsParse(comm, command, extra, s, &help));
  PetscFunctionReturn(0);
}

PetscErrorCode RunFileAttributes(MPI_Comm comm, const std::string &path, const std::vector<std::string> &keys,
                                 std::vector<std::string> *values) {
  File f;
  PetscFunctionBeginUser;
  PetscCall(h5::Open(comm, path, false, &f));
  // The documented short names (L, H, d, k, head_kind, beta, causal, loss)
  // stand for the dotted keys in files that other programs wrote.
  static const std::map<std::string, std::string> short_names = {
      {"model.L", "L"},       {"model.H", "H"},       {"model.d", "d"},           {"model.k", "k"},
      {"model.beta", "beta"}, {"model.causal", "causal"}, {"model.head_kind", "head_kind"}, {"loss.kind", "loss"}};
  values->assign(keys.size(), "");
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string &v = (*values)[i];
    const auto alias = short_names.find(keys[i]);
    if (!h5::ReadAttribute(f, keys[i], &v) && !(alias != short_names.end() && h5::ReadAttribute(f, alias->second, &v)))
      v.clear();
    if (keys[i] == "model.causal" && (v == "0" || v == "1")) v = v == "1" ? "true" : "false";
  }
  PetscCall(h5::Close(&f));
  PetscFunctionReturn(0);
}

} // namespace mft
