// Run files and result files: what goes where in the docs/model.md layout.
#include "mft/files/runfile.hpp"

#include "mft/flow/data.hpp"
#include "mft/settings/error.hpp"
#include "mft/layout/h5.hpp"

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

// The heads a rank writes or reads: in the file, rows [rows.begin,
// rows.end) of `lead` leading dimensions `lead_dims`; heads[r], the index in
// v's local heads of the file's r-th head of those rows.
struct HeadRows {
  std::vector<hsize_t> lead_dims;
  int lead;
  Range rows;
  std::vector<PetscInt> heads;
};

// Writes (read = false) or reads the blocks of v's heads as group/Q,
// group/K, ... of shape lead_dims + (rows, cols): whole blocks in theta's
// layout, or one entry per block (scalar: adamw-block's second moment, of
// shape lead_dims).
PetscErrorCode TransferBlocks(File &f, const std::string &group, const HeadShape &shape, const HeadRows &at, Vec v,
                              bool scalar, bool read) {
  PetscScalar *a;
  PetscFunctionBeginUser;
  PetscCall(VecGetArray(v, &a));
  for (PetscInt b = 0; b < shape.blocks(); ++b) {
    const PetscInt n = scalar ? 1 : shape.block_rows(b) * shape.block_cols(b);
    const PetscInt stride = scalar ? shape.blocks() : shape.size, offset = scalar ? b : shape.block_offset(b);
    std::vector<hsize_t> dims = at.lead_dims;
    if (!scalar) dims.insert(dims.end(), {(hsize_t)shape.block_rows(b), (hsize_t)shape.block_cols(b)});
    std::vector<double> buf(at.heads.size() * (size_t)n);
    const std::string name = group + "/" + block_name(b);
    if (!read) {
      for (size_t r = 0; r < at.heads.size(); ++r)
        std::copy(a + at.heads[r] * stride + offset, a + at.heads[r] * stride + offset + n, buf.begin() + (std::ptrdiff_t)(r * n));
      PetscCall(h5::WriteRows(f, name, dims, at.lead, at.rows, buf.data()));
    } else {
      PetscCheck(h5::Shape(f, name) == dims, f.comm, PETSC_ERR_FILE_UNEXPECTED, "%s has shape %s, expected %s",
                 name.c_str(), h5::ShapeText(h5::Shape(f, name)).c_str(), h5::ShapeText(dims).c_str());
      PetscCall(h5::ReadRows(f, name, dims, at.lead, at.rows, buf.data()));
      for (size_t r = 0; r < at.heads.size(); ++r)
        std::copy(buf.begin() + (std::ptrdiff_t)(r * n), buf.begin() + (std::ptrdiff_t)((r + 1) * n), a + at.heads[r] * stride + offset);
    }
  }
  PetscCall(VecRestoreArray(v, &a));
  PetscFunctionReturn(0);
}

// A model's file: (L, H) heads, the rank its owned ones in theta's order.
PetscErrorCode TransferHeads(File &f, const std::string &group, const Heads &h, Vec v, bool scalar, bool read) {
  HeadRows at{{(hsize_t)h.L, (hsize_t)h.H}, 2, h.owned, {}};
  for (PetscInt g = 0; g < h.owned.size(); ++g) at.heads.push_back(g);
  PetscFunctionBeginUser;
  PetscCall(TransferBlocks(f, group, h.shape, at, v, scalar, read));
  PetscFunctionReturn(0);
}

// MLP sublayers as group/U (lead, d), group/b (lead), group/W (lead, d),
// the lead dimensions a model's (L, m) or an ensemble's (S, L, m): the
// neurons `at` names (units of v in theta's layout of n), written or read;
// `blocks`: v holds one entry per block (adamw-block's second moment), the
// dataset `group` of shape (lead, 3). A model without them refuses a file
// that has them.
PetscErrorCode TransferNeuronRows(File &f, const std::string &group, const Neurons *n, const HeadRows &at, Vec v,
                                  bool read, bool blocks = false) {
  PetscScalar *a;
  PetscFunctionBeginUser;
  if (!n || !n->theta) {
    PetscCheck(!read || h5::Shape(f, group + "/U").empty(), f.comm, PETSC_ERR_FILE_UNEXPECTED,
               "%s holds MLP sublayers (%s) and this model has none: give its model.mlp_width", f.path.c_str(),
               group.c_str());
    PetscFunctionReturn(0);
  }
  const PetscInt d = n->d, E = blocks ? 3 : n->size();
  PetscCall(VecGetArray(v, &a));
  struct Part { const char *name; PetscInt offset, width; };
  const std::vector<Part> parts = blocks ? std::vector<Part>{{"", 0, 3}}
                                         : std::vector<Part>{{"/U", 0, d}, {"/b", d, 1}, {"/W", d + 1, d}};
  for (const Part &part : parts) {
    std::vector<hsize_t> dims = at.lead_dims;
    if (part.width > 1) dims.push_back((hsize_t)part.width);
    const std::string name = group + part.name;
    std::vector<double> buf(at.heads.size() * (size_t)part.width);
    if (read) {
      PetscCheck(h5::Shape(f, name) == dims, f.comm, PETSC_ERR_FILE_UNEXPECTED, "%s: %s has shape %s, expected %s",
                 f.path.c_str(), name.c_str(), h5::ShapeText(h5::Shape(f, name)).c_str(), h5::ShapeText(dims).c_str());
      PetscCall(h5::ReadRows(f, name, dims, at.lead, at.rows, buf.data()));
    }
    for (size_t r = 0; r < at.heads.size(); ++r)
      for (PetscInt c = 0; c < part.width; ++c) {
        double &entry = a[at.heads[r] * E + part.offset + c], &there = buf[r * (size_t)part.width + (size_t)c];
        if (read) entry = there;
        else there = entry;
      }
    if (!read) PetscCall(h5::WriteRows(f, name, dims, at.lead, at.rows, buf.data()));
  }
  PetscCall(VecRestoreArray(v, &a));
  PetscFunctionReturn(0);
}

// A model's MLP sublayers (L, m): the rank's owned neurons in theta's order.
PetscErrorCode TransferNeurons(File &f, const std::string &group, const Neurons *n, Vec v, bool read,
                               bool blocks = false) {
  HeadRows at{{}, 2, {}, {}};
  PetscFunctionBeginUser;
  if (n && n->theta) {
    PetscInt begin, end;
    const PetscInt E = blocks ? 3 : n->size();
    PetscCall(VecGetOwnershipRange(v, &begin, &end));
    at.lead_dims = {(hsize_t)n->L, (hsize_t)n->m}, at.rows = {begin / E, end / E};
    for (PetscInt r = 0; r < at.rows.size(); ++r) at.heads.push_back(r);
  }
  PetscCall(TransferNeuronRows(f, group, n, at, v, read, blocks));
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

namespace {


PetscErrorCode WriteRun(File &f, const Problem &p, const History &h, const Optimizer *opt, PetscInt step,
                        Content what) {
  const Settings &s = p.settings;
  const TokenLayout &t = p.tokens;
  PetscFunctionBeginUser;
  PetscCall(WriteTokens(f, "/data/tokens", t, p.x0));
  if (t.weighted()) PetscCall(WriteReplicated(f, "/data/weights", {(hsize_t)t.M, (hsize_t)t.N}, t.weights.data()));
  if (p.targets.kind == LossKind::token) {
    PetscCall(WriteTokens(f, "/data/targets", t, p.targets.y));
  } else {
    PetscCall(WriteReplicated(f, "/data/targets", {(hsize_t)t.M, (hsize_t)p.targets.c}, p.targets.z.data()));
    PetscCall(WriteReplicated(f, "/data/readout", {(hsize_t)p.targets.c, (hsize_t)t.d}, p.targets.W.data()));
  }
  PetscCall(TransferHeads(f, "/params", p.heads, p.heads.theta, false, false));
  if (what == Content::run_with_gradient) PetscCall(TransferHeads(f, "/grad", p.heads, p.grad, false, false));
  PetscCall(TransferNeurons(f, "/params/mlp", &p.neurons, p.neurons.theta, false));
  if (what == Content::run_with_gradient) PetscCall(TransferNeurons(f, "/grad/mlp", &p.neurons, p.neuron_grad, false));
  if (what == Content::run_with_gradient && t.weighted() && p.weight_grad.size() == t.weights.size()) // dR/dw (no L H)
    PetscCall(WriteReplicated(f, "/grad/weights", {(hsize_t)t.M, (hsize_t)t.N}, p.weight_grad.data()));
  if (opt && opt->m) {
    PetscCall(TransferHeads(f, "/optimizer/m", p.heads, opt->m, false, false));
    PetscCall(TransferHeads(f, "/optimizer/v", p.heads, opt->v, opt->kind == OptimizerKind::adamw_block, false));
  }
  if (opt && opt->mlp && opt->mlp->m) {
    PetscCall(TransferNeurons(f, "/optimizer/mlp/m", &p.neurons, opt->mlp->m, false));
    PetscCall(TransferNeurons(f, "/optimizer/mlp/v", &p.neurons, opt->mlp->v, false, opt->kind == OptimizerKind::adamw_block));
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
    if (a.distributed) PetscCall(h5::WriteRows(f, a.name, dims, 1, a.rows, a.data));
    else PetscCall(WriteReplicated(f, a.name, dims, a.data));
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

namespace {

// An ensemble's file: (S, L, H) heads, the rank its block of models' rows,
// each model's heads in its own order (l, h) from theta's folded layout.
PetscErrorCode TransferModels(File &f, const std::string &group, const Ensemble &e, Vec v, bool scalar, bool read) {
  const Heads &hd = e.p.heads;
  const PetscInt H = hd.H / hd.seeds;
  HeadRows at{{(hsize_t)e.S, (hsize_t)hd.L, (hsize_t)H}, 1, e.block, {}};
  for (PetscInt s = 0; s < e.models(); ++s)
    for (PetscInt l = 0; l < hd.L; ++l)
      for (PetscInt h = 0; h < H; ++h) at.heads.push_back(EnsembleHead(e, s, l, h));
  PetscFunctionBeginUser;
  PetscCall(TransferBlocks(f, group, hd.shape, at, v, scalar, read));
  PetscFunctionReturn(0);
}

// An ensemble's MLP sublayers (S, L, m), as TransferModels the heads; v of
// the neurons' layout (null: the model has none, and a file with them is refused).
PetscErrorCode TransferModelNeurons(File &f, const std::string &group, const Ensemble &e, Vec v, bool blocks,
                                    bool read) {
  const Neurons &n = e.p.neurons;
  HeadRows at{{}, 1, e.block, {}};
  PetscFunctionBeginUser;
  if (n.theta) {
    at.lead_dims = {(hsize_t)e.S, (hsize_t)n.L, (hsize_t)n.per_model()};
    for (PetscInt s = 0; s < e.models(); ++s)
      for (PetscInt l = 0; l < n.L; ++l)
        for (PetscInt j = 0; j < n.per_model(); ++j) at.heads.push_back(EnsembleNeuron(e, s, l, j));
  }
  PetscCall(TransferNeuronRows(f, group, n.theta ? &n : nullptr, at, v, read, blocks));
  PetscFunctionReturn(0);
}

// A rank's history (steps x models) as the file's rows (models x steps), and back.
std::vector<double> ByModel(const std::vector<double> &rows, PetscInt models) {
  const size_t steps = models ? rows.size() / (size_t)models : 0;
  std::vector<double> out(rows.size());
  for (size_t t = 0; t < steps; ++t)
    for (size_t s = 0; s < (size_t)models; ++s) out[s * steps + t] = rows[t * (size_t)models + s];
  return out;
}

std::vector<double> ByStep(const std::vector<double> &rows, PetscInt models) {
  const size_t steps = models ? rows.size() / (size_t)models : 0;
  std::vector<double> out(rows.size());
  for (size_t t = 0; t < steps; ++t)
    for (size_t s = 0; s < (size_t)models; ++s) out[t * (size_t)models + s] = rows[s * steps + t];
  return out;
}

// A folded state vector's entries (model by model), with `mark` NaN for a diverged model's.
PetscErrorCode ModelRows(const Ensemble &e, Vec v, bool mark, std::vector<double> *out) {
  const PetscScalar *a;
  PetscInt n;
  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(v, &n));
  PetscCall(VecGetArrayRead(v, &a));
  out->assign(a, a + n);
  PetscCall(VecRestoreArrayRead(v, &a));
  const size_t per = out->size() / (size_t)std::max<PetscInt>(1, e.models());
  for (size_t s = 0; mark && s < e.diverged.size(); ++s)
    if (e.diverged[s] >= 0) std::fill(out->begin() + (std::ptrdiff_t)(s * per), out->begin() + (std::ptrdiff_t)((s + 1) * per), NAN);
  PetscFunctionReturn(0);
}

PetscErrorCode WriteEnsemble(File &f, const Ensemble &e, const History &h, const Optimizer *opt, PetscInt step,
                             Content what) {
  const Problem &p = e.p;
  const Settings &s = p.settings;
  const hsize_t S = (hsize_t)e.S, M = (hsize_t)s.data.M, N = (hsize_t)s.data.N, d = (hsize_t)s.model.d;
  const Range rows = e.block;
  PetscFunctionBeginUser;
  std::vector<double> rowsof;
  PetscCall(ModelRows(e, p.x0, false, &rowsof)); // the data: model 0's
  PetscCall(WriteReplicated(f, "/data/tokens", {M, N, d}, rowsof.data()));
  if (p.tokens.weighted()) PetscCall(WriteReplicated(f, "/data/weights", {M, N}, p.tokens.weights.data()));
  if (p.targets.kind == LossKind::token) {
    PetscCall(ModelRows(e, p.targets.y, false, &rowsof));
    PetscCall(WriteReplicated(f, "/data/targets", {M, N, d}, rowsof.data()));
  } else {
    PetscCall(WriteReplicated(f, "/data/targets", {M, (hsize_t)p.targets.c}, p.targets.z.data()));
    PetscCall(WriteReplicated(f, "/data/readout", {(hsize_t)p.targets.c, d}, p.targets.W.data()));
  }
  PetscCall(TransferModels(f, "/params", e, p.heads.theta, false, false));
  PetscCall(TransferModelNeurons(f, "/params/mlp", e, p.neurons.theta, false, false));
  if (what == Content::run_with_gradient) {
    PetscCall(TransferModels(f, "/grad", e, p.grad, false, false));
    PetscCall(TransferModelNeurons(f, "/grad/mlp", e, p.neuron_grad, false, false));
  }
  if (opt && opt->m) {
    PetscCall(TransferModels(f, "/optimizer/m", e, opt->m, false, false));
    PetscCall(TransferModels(f, "/optimizer/v", e, opt->v, opt->kind == OptimizerKind::adamw_block, false));
  }
  if (opt && opt->mlp && opt->mlp->m) {
    PetscCall(TransferModelNeurons(f, "/optimizer/mlp/m", e, opt->mlp->m, false, false));
    PetscCall(TransferModelNeurons(f, "/optimizer/mlp/v", e, opt->mlp->v, opt->kind == OptimizerKind::adamw_block, false));
  }
  if (what != Content::checkpoint) {
    PetscCall(ModelRows(e, p.x1, true, &rowsof));
    PetscCall(h5::WriteRows(f, "/output/tokens", {S, M, N, d}, 1, rows, rowsof.data()));
  }
  const hsize_t steps = (hsize_t)(h.loss.size() / (size_t)std::max<PetscInt>(1, e.models()));
  const std::vector<double> loss = ByModel(h.loss, e.models()), norms = ByModel(h.max_param_norm, e.models());
  PetscCall(h5::WriteRows(f, "/history/loss", {S, steps}, 1, rows, loss.data()));
  PetscCall(h5::WriteRows(f, "/history/max_param_norm", {S, steps}, 1, rows, norms.data()));
  std::vector<double> diverged(e.diverged.begin(), e.diverged.end()), risk = p.risks;
  risk.resize((size_t)e.models(), NAN);
  PetscCall(h5::WriteRows(f, "/ensemble/risk", {S}, 1, rows, risk.data()));
  PetscCall(h5::WriteRows(f, "/ensemble/diverged", {S}, 1, rows, diverged.data()));
  for (auto &kv : s.record) h5::WriteAttribute(f, kv.first, kv.second);
  h5::WriteAttribute(f, "ensemble.models", std::to_string(e.S));
  h5::WriteAttribute(f, "ensemble.first_seed", std::to_string(e.first), true);
  h5::WriteAttribute(f, "step", std::to_string(step));
  if (what != Content::checkpoint) h5::WriteAttribute(f, "risk", text(p.risk));
  h5::WriteAttribute(f, "command", s.command);
  h5::WriteAttribute(f, "content", what == Content::checkpoint ? "checkpoint" : "run");
  PetscMPIInt size;
  PetscCallMPI(MPI_Comm_size(e.comm, &size));
  h5::WriteAttribute(f, "ranks", std::to_string(size));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode EnsembleFileWrite(const Ensemble &e, const History &h, const Optimizer *opt, PetscInt step, Content what,
                                 const std::string &path) {
  PetscFunctionBeginUser;
  PetscCall(WriteThrough(e.comm, path, [&](File &f) { return WriteEnsemble(f, e, h, opt, step, what); }));
  PetscFunctionReturn(0);
}

PetscErrorCode EnsembleFileRead(const std::string &path, Ensemble *e, Optimizer *opt, History *h, PetscInt *step) {
  Problem &p = e->p;
  File f;
  std::string value;
  PetscFunctionBeginUser;
  PetscCall(h5::Open(e->comm, path, false, &f));
  PetscCheck(h5::ReadAttribute(f, "ensemble.models", &value) && value == std::to_string(e->S), e->comm,
             PETSC_ERR_FILE_UNEXPECTED, "%s holds %s models, not the %" PetscInt_FMT " of train.seeds", path.c_str(),
             value.empty() ? "no ensemble of" : value.c_str(), e->S);
  f.finite = true;
  PetscCall(TransferModels(f, "/params", *e, p.heads.theta, false, true));
  PetscCall(TransferModelNeurons(f, "/params/mlp", *e, p.neurons.theta, false, true));
  if (opt && opt->m) {
    PetscCall(TransferModels(f, "/optimizer/m", *e, opt->m, false, true));
    PetscCall(TransferModels(f, "/optimizer/v", *e, opt->v, opt->kind == OptimizerKind::adamw_block, true));
  }
  if (opt && opt->mlp && opt->mlp->m) {
    PetscCall(TransferModelNeurons(f, "/optimizer/mlp/m", *e, opt->mlp->m, false, true));
    PetscCall(TransferModelNeurons(f, "/optimizer/mlp/v", *e, opt->mlp->v, opt->kind == OptimizerKind::adamw_block, true));
  }
  f.finite = false; // a diverged model's history is NaN
  const auto n = h5::Shape(f, "/history/loss");
  PetscCheck(n.size() == 2 && n[0] == (hsize_t)e->S, e->comm, PETSC_ERR_FILE_UNEXPECTED,
             "%s: /history/loss has shape %s, expected (%" PetscInt_FMT ", steps)", path.c_str(),
             h5::ShapeText(n).c_str(), e->S);
  std::vector<double> loss((size_t)(e->models() * (PetscInt)n[1])), norms(loss.size()), diverged((size_t)e->models());
  PetscCall(h5::ReadRows(f, "/history/loss", n, 1, e->block, loss.data()));
  PetscCall(h5::ReadRows(f, "/history/max_param_norm", n, 1, e->block, norms.data()));
  PetscCall(h5::ReadRows(f, "/ensemble/diverged", {(hsize_t)e->S}, 1, e->block, diverged.data()));
  h->loss = ByStep(loss, e->models()), h->max_param_norm = ByStep(norms, e->models());
  for (PetscInt s = 0; s < e->models(); ++s) e->diverged[(size_t)s] = (PetscInt)diverged[(size_t)s];
  PetscCheck(h5::ReadAttribute(f, "step", &value), e->comm, PETSC_ERR_FILE_UNEXPECTED, "%s has no step attribute",
             path.c_str());
  *step = (PetscInt)std::stoll(value);
  PetscCall(h5::Close(&f));
  PetscCheck((hsize_t)*step == n[1], e->comm, PETSC_ERR_FILE_UNEXPECTED,
             "%s: step %" PetscInt_FMT " but %llu history entries", path.c_str(), *step, (unsigned long long)n[1]);
  if (opt) opt->step = *step;
  if (opt && opt->mlp) opt->mlp->step = *step;
  PetscCall(ProblemSetHeads(&p));
  PetscFunctionReturn(0);
}

PetscErrorCode RunFileReadParams(const std::string &path, Problem *p) {
  File f;
  std::string models;
  PetscFunctionBeginUser;
  PetscCall(h5::Open(p->grid.comm, path, false, &f));
  PetscCheck(!h5::ReadAttribute(f, "ensemble.models", &models), p->grid.comm, PETSC_ERR_FILE_UNEXPECTED,
             "%s holds an ensemble of %s models (mft train --train.seeds): params.file takes one model's file",
             path.c_str(), models.c_str());
  f.finite = true;
  PetscCall(TransferHeads(f, "/params", p->heads, p->heads.theta, false, true));
  PetscCall(TransferNeurons(f, "/params/mlp", &p->neurons, p->neurons.theta, true));
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
  f.finite = true; // the model's inputs and state; the history is the run's own record
  PetscCall(ReadTokens(f, "/data/tokens", p->tokens, p->x0));
  PetscCall(ReadWeights(f, path, p->tokens.M, p->tokens.N, &p->tokens.weights));
  PetscCall(ReadTargets(f, p->tokens, &p->targets));
  PetscCall(TransferHeads(f, "/params", p->heads, p->heads.theta, false, true));
  PetscCall(TransferNeurons(f, "/params/mlp", &p->neurons, p->neurons.theta, true));
  if (opt && opt->m) {
    PetscCall(TransferHeads(f, "/optimizer/m", p->heads, opt->m, false, true));
    PetscCall(TransferHeads(f, "/optimizer/v", p->heads, opt->v, opt->kind == OptimizerKind::adamw_block, true));
  }
  if (opt && opt->mlp && opt->mlp->m) {
    PetscCall(TransferNeurons(f, "/optimizer/mlp/m", &p->neurons, opt->mlp->m, true));
    PetscCall(TransferNeurons(f, "/optimizer/mlp/v", &p->neurons, opt->mlp->v, true, opt->kind == OptimizerKind::adamw_block));
  }
  f.finite = false;
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
  if (opt && opt->mlp) opt->mlp->step = *step;
  PetscCall(ProblemSetHeads(p));
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
