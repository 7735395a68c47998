// Data files (/data/tokens, /data/targets, /data/readout): their shapes
// checked against the settings, their arrays read into the token layout; and
// the row-wise transfer of token arrays and small replicated arrays that run
// files share with them.
#include "mft/flow/data.hpp"

#include <cmath>

namespace mft {

static std::vector<hsize_t> token_dims(const TokenLayout &t) { return {(hsize_t)t.M, (hsize_t)t.N, (hsize_t)t.d}; }

PetscErrorCode WriteTokens(h5::File &f, const std::string &name, const TokenLayout &t, Vec v) {
  const PetscScalar *a;
  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(v, &a));
  PetscCall(h5::WriteRows(f, name, token_dims(t), 2, t.owned, a));
  PetscCall(VecRestoreArrayRead(v, &a));
  PetscFunctionReturn(0);
}

PetscErrorCode ReadTokens(h5::File &f, const std::string &name, const TokenLayout &t, Vec v) {
  PetscScalar *a;
  PetscFunctionBeginUser;
  PetscCall(VecGetArray(v, &a));
  PetscCall(h5::ReadRows(f, name, token_dims(t), 2, t.owned, a));
  PetscCall(VecRestoreArray(v, &a));
  PetscFunctionReturn(0);
}

// A small array known on every rank: rank 0 writes it.
PetscErrorCode WriteReplicated(h5::File &f, const std::string &name, const std::vector<hsize_t> &dims, const double *buf) {
  PetscMPIInt rank;
  Range all;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(f.comm, &rank));
  all.end = rank == 0 ? (PetscInt)dims[0] : 0;
  PetscCall(h5::WriteRows(f, name, dims, 1, all, buf));
  PetscFunctionReturn(0);
}

// Every rank reads all of a small array.
PetscErrorCode ReadReplicated(h5::File &f, const std::string &name, const std::vector<hsize_t> &dims, double *buf) {
  Range all;
  PetscFunctionBeginUser;
  all.end = (PetscInt)dims[0];
  PetscCall(h5::ReadRows(f, name, dims, 1, all, buf));
  PetscFunctionReturn(0);
}

PetscErrorCode DataFileConform(MPI_Comm comm, Settings *s) {
  const std::string &path = s->data.file;
  h5::File f;
  PetscFunctionBeginUser;
  PetscCall(h5::Open(comm, path, false, &f));
  const auto tokens = h5::Shape(f, "/data/tokens"), targets = h5::Shape(f, "/data/targets"),
             readout = h5::Shape(f, "/data/readout"), weights = h5::Shape(f, "/data/weights");
  PetscCall(h5::Close(&f));
  const char *p = path.c_str();
  PetscCheck(tokens.size() == 3, comm, PETSC_ERR_FILE_UNEXPECTED,
             "data file %s: /data/tokens %s, expected a dataset of shape (M, N, d)", p,
             tokens.empty() ? "is missing" : ("has shape " + h5::ShapeText(tokens)).c_str());
  PetscCheck(weights.empty() || (weights.size() == 2 && weights[0] == tokens[0] && weights[1] == tokens[1]), comm,
             PETSC_ERR_FILE_UNEXPECTED, "data file %s: /data/weights has shape %s, but /data/tokens %s needs (M, N)", p,
             h5::ShapeText(weights).c_str(), h5::ShapeText(tokens).c_str());
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

PetscErrorCode ReadTargets(h5::File &f, const TokenLayout &t, Targets *y) {
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

PetscErrorCode ReadWeights(h5::File &f, const std::string &path, PetscInt M, PetscInt N, std::vector<double> *weights) {
  const auto dims = h5::Shape(f, "/data/weights");
  const char *p = path.c_str();
  PetscFunctionBeginUser;
  weights->clear();
  if (dims.empty()) PetscFunctionReturn(0);
  PetscCheck(dims.size() == 2 && (PetscInt)dims[0] >= M && (PetscInt)dims[1] == N, f.comm, PETSC_ERR_FILE_UNEXPECTED,
             "%s: /data/weights has shape %s, expected (M, N) = (%" PetscInt_FMT ", %" PetscInt_FMT ")", p,
             h5::ShapeText(dims).c_str(), M, N);
  weights->resize((size_t)(M * N));
  PetscCall(ReadReplicated(f, "/data/weights", {(hsize_t)M, (hsize_t)N}, weights->data())); // the first M
  for (PetscInt m = 0; m < M; ++m) {
    double sum = 0;
    for (PetscInt i = 0; i < N; ++i) {
      const double w = (*weights)[m * N + i];
      PetscCheck(std::isfinite(w) && w > 0, f.comm, PETSC_ERR_FILE_UNEXPECTED,
                 "%s: /data/weights[%" PetscInt_FMT ", %" PetscInt_FMT "] = %g, a weight must be positive and finite",
                 p, m, i, w);
      sum += w;
    }
    PetscCheck(std::fabs(sum - 1.0) <= kWeightSum, f.comm, PETSC_ERR_FILE_UNEXPECTED,
               "%s: /data/weights row %" PetscInt_FMT " sums to %.17g, not 1 (a sequence's weights are its "
               "tokens' masses)", p, m, sum);
  }
  PetscFunctionReturn(0);
}

bool UniformWeights(const TokenLayout &t) {
  for (double w : t.weights)
    if (std::fabs(w * (double)t.N - 1.0) > kWeightSum) return false;
  return true;
}

PetscErrorCode DataFileRead(MPI_Comm comm, const std::string &path, TokenLayout &t, Vec x0, Targets *y) {
  h5::File f;
  PetscFunctionBeginUser;
  PetscCall(h5::Open(comm, path, false, &f));
  f.finite = true; // a NaN in the data would poison every result (in the targets, read as divergence)
  PetscCall(ReadTokens(f, "/data/tokens", t, x0));
  PetscCall(ReadWeights(f, path, t.M, t.N, &t.weights));
  if (y) PetscCall(ReadTargets(f, t, y));
  PetscCall(h5::Close(&f));
  PetscFunctionReturn(0);
}

} // namespace mft
