// Convergence studies: the cases of a study, the probe sets and the case
// files (study_cases.hpp); running a case is in study_run.cpp, the
// aggregation in study_aggregate.cpp.
#include "mft/studies/study.hpp"
#include "mft/flow/data.hpp"
#include "mft/studies/study_cases.hpp"

#include "mft/settings/error.hpp"
#include "mft/layout/h5.hpp"
#include "mft/files/runfile.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <sstream>

namespace mft {

namespace study {

std::vector<std::string> overrides(const std::string &variant) {
  std::vector<std::string> out;
  for (auto &kv : words(variant)) {
    const size_t eq = kv.find('=');
    out.push_back("--" + kv.substr(0, eq));
    out.push_back(eq == std::string::npos ? "" : kv.substr(eq + 1));
  }
  return out;
}

PetscErrorCode CaseSettings(MPI_Comm comm, std::vector<std::string> args, const std::vector<std::string> &extra,
                            Settings *s, bool probe) {
  PetscBool help;
  PetscFunctionBeginUser;
  args.insert(args.end(), extra.begin(), extra.end());
  PetscCall(SettingsParse(comm, "study", args, s, &help));
  if (probe) s->scheme.zero_targets = true, s->loss.kind = LossKind::token;
  if (!s->data.file.empty()) PetscCall(DataFileConform(comm, s));
  PetscFunctionReturn(0);
}

std::string case_path(const std::string &dir, PetscInt i) { return dir + "/case-" + std::to_string(i) + ".h5"; }

std::string partial_path(const std::string &dir, PetscInt i, PetscInt t) {
  return dir + "/case-" + std::to_string(i) + "-t" + std::to_string(t) + ".h5";
}

PetscErrorCode ReadVerified(const std::string &path, const std::function<PetscErrorCode(h5::File &)> &read,
                            std::string *problem, MPI_Comm comm) {
  std::uint64_t stored = 0, computed = 0;
  PetscFunctionBeginUser;
  problem->clear();
  PetscCall(PetscPushErrorHandler(ErrorCapture, nullptr));
  PetscErrorCode err = h5::Verify(comm, path, &stored, &computed);
  if (!err && stored != computed) *problem = path + " is damaged (checksum)";
  if (!err && problem->empty()) {
    h5::File f;
    err = h5::Open(comm, path, false, &f);
    if (!err) {
      err = read(f);
      const PetscErrorCode closed = h5::Close(&f); // closed also when reading failed
      if (!err) err = closed;
    }
  }
  PetscCall(PetscPopErrorHandler());
  if (err) *problem = captured_error();
  int bad = !problem->empty(), any = bad; // one verdict on every rank
  PetscCallMPI(MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm));
  if (any && !bad) *problem = path + " could not be read on another rank";
  PetscFunctionReturn(0);
}

// One probe set's tokens or adjoint (q) at `prefix`, and with the tokens the
// set's weights (docs/model.md, 'Token measures'); false when the file has none.
static PetscErrorCode ReadProbe(h5::File &f, const std::string &set, int q, CaseData *out, bool *found) {
  PetscFunctionBeginUser;
  const std::string name = set + (q ? "/adjoint" : "/tokens");
  const auto dims = h5::Shape(f, name);
  *found = dims.size() == 3;
  if (!*found) PetscFunctionReturn(0);
  if (q == 0) out->N.push_back((PetscInt)dims[1]);
  out->d = (PetscInt)dims[2];
  std::vector<double> a((size_t)(dims[0] * dims[1] * dims[2]));
  Range all;
  all.end = (PetscInt)dims[0];
  PetscCall(h5::ReadRows(f, name, dims, 1, all, a.data()));
  (q ? out->adjoint : out->tokens).push_back(a);
  if (q) PetscFunctionReturn(0);
  const auto wdims = h5::Shape(f, set + "/weights");
  out->weights.emplace_back(wdims.size() == 2 ? wdims[0] * wdims[1] : 0);
  if (!out->weights.back().empty()) PetscCall(h5::ReadRows(f, set + "/weights", wdims, 1, all, out->weights.back().data()));
  PetscFunctionReturn(0);
}

PetscErrorCode ReadColumn(h5::File &f, const std::string &name, size_t least, std::vector<double> *v) {
  PetscFunctionBeginUser;
  const auto dims = h5::Shape(f, name);
  if (dims.size() != 1 || dims[0] < least) PetscFunctionReturn(0);
  Range all;
  all.end = (PetscInt)dims[0];
  v->resize(dims[0]);
  PetscCall(h5::ReadRows(f, name, dims, 1, all, v->data()));
  PetscFunctionReturn(0);
}

PetscErrorCode ReadCase(const std::string &path, const std::vector<std::string> &families, const std::string &prefix,
                        CaseData *out, std::string *problem) {
  PetscFunctionBeginUser;
  auto read = [&](h5::File &f) -> PetscErrorCode {
    for (const std::string &family : families)
      for (int q = 0; q < 2; ++q) {
        bool found;
        PetscCall(ReadProbe(f, prefix + "/probes/" + family, q, out, &found));
        if (!found) {
          *problem = path + " has no " + prefix + "/probes/" + family + (q ? "/adjoint" : "/tokens");
          return 0;
        }
      }
    for (auto [name, value] : {std::pair<const char *, double *>{"/training/head_change", &out->head_change},
                               {"/training/risk", &out->risk}, {"/training/risk_reduction", &out->reduction},
                               {"/training/diversity", &out->diversity}, {"/training/heldout_risk", &out->heldout_risk}}) {
      std::vector<double> one;
      PetscCall(ReadColumn(f, prefix + name, 1, &one));
      if (one.size() == 1) *value = one[0];
    }
    PetscCall(ReadColumn(f, prefix + "/params/theta", 0, &out->heads));
    PetscCall(ReadColumn(f, prefix + "/params/neurons", 0, &out->neurons));
    const std::string blocks = prefix + "/training/block_change";
    const auto bdims = h5::Shape(f, blocks);
    if (bdims.size() == 2) {
      Range all;
      all.end = (PetscInt)bdims[0];
      out->block_change.resize(bdims[0] * bdims[1]), out->blocks = (PetscInt)bdims[1];
      PetscCall(h5::ReadRows(f, blocks, bdims, 1, all, out->block_change.data()));
    }
    PetscCall(ReadColumn(f, "/training/loss", 1, &out->loss));
    return 0;
  };
  PetscCall(ReadVerified(path, read, problem));
  PetscFunctionReturn(0);
}

std::string case_identity(const Settings &cs) {
  static const std::vector<std::string> study_keys = {"study.state",   "study.steps",   "study.times",
                                                      "study.probes",  "study.probe_M", "study.probe_N",
                                                      "study.probe_file", "study.worst"};
  std::string text;
  for (const auto &[key, value] : cs.record) {
    const std::string section = key.substr(0, key.find('.'));
    const bool study_key = std::find(study_keys.begin(), study_keys.end(), key) != study_keys.end();
    if (study_key || section == "limit" || (section != "study" && RunDefining(cs, key)))
      text += key + "=" + value + "\n";
  }
  return text;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

} // namespace study

using namespace study;

std::string StudyCase::describe() const {
  std::ostringstream os;
  os << "case " << index << " (variant " << variant << ", ";
  if (reference) os << "reference " << reference_index << ")";
  else os << "L=" << L << ", H=" << H << ", seed " << seed << ")";
  return os.str();
}

std::pair<PetscInt, PetscInt> StudyTeacher(const Settings &s) {
  return {s.data.teacher_L ? s.data.teacher_L : s.study.reference_L,
          s.data.teacher_H ? s.data.teacher_H : s.study.reference_H};
}

std::vector<std::string> StudyShapeOptions(const Settings &s, PetscInt L, PetscInt H) {
  if (s.study.mlp_axis) return {"--model.L", std::to_string(L), "--model.mlp_width", std::to_string(H)};
  std::vector<std::string> o = {"--model.L", std::to_string(L), "--model.H", std::to_string(H)};
  if (s.study.mlp_per_head > 0) // the MLP's width grows with the heads
    o.insert(o.end(), {"--model.mlp_width", std::to_string(s.study.mlp_per_head * H)});
  return o;
}

std::vector<std::string> StudyTeacherOptions(const Settings &s) {
  const auto teacher = StudyTeacher(s);
  std::vector<std::string> o = {"--data.teacher_L", std::to_string(teacher.first), "--data.teacher_H",
                                std::to_string(teacher.second)};
  if (s.study.mlp_per_head > 0 && s.data.teacher_mlp_width == 0)
    o.insert(o.end(), {"--data.teacher_mlp_width", std::to_string(s.study.mlp_per_head * teacher.second)});
  return o;
}

PetscErrorCode StudyDirCreate(MPI_Comm comm, const std::string &dir) {
  PetscMPIInt rank;
  int failed = 0; // rank 0 makes the folder and its parents; every rank hears whether it could
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  for (size_t at = 1; rank == 0 && !failed && at <= dir.size(); ++at)
    if (at == dir.size() || dir[at] == '/')
      failed = mkdir(dir.substr(0, at).c_str(), 0755) != 0 && errno != EEXIST ? errno : 0;
  PetscCallMPI(MPI_Bcast(&failed, 1, MPI_INT, 0, comm));
  PetscCheck(!failed, comm, PETSC_ERR_FILE_WRITE, "cannot create study.dir '%s': %s", dir.c_str(), strerror(failed));
  PetscFunctionReturn(0);
}

std::vector<std::string> StudyVariants(const Settings &s) {
  auto v = words(s.study.variants, ';');
  if (v.empty()) v.push_back("");
  const auto rates = words(s.study.learning_rates);
  if (rates.empty()) return v;
  std::vector<std::string> each;
  for (const std::string &base : v)
    for (const std::string &lr : rates) each.push_back((base.empty() ? "" : base + " ") + "train.lr=" + lr);
  return each;
}

PetscErrorCode StudyProbeFileCheck(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s) {
  PetscFunctionBeginUser;
  for (const ProbeSet &p : probe_sets(s)) {
    Settings ps;
    if (p.file.empty()) continue;
    // The file is read as a data file: its errors are said in the study's terms.
    PetscCall(PetscPushErrorHandler(ErrorCapture, nullptr));
    const PetscErrorCode err = CaseSettings(comm, args, probe_overrides(s, p), &ps, true);
    PetscCall(PetscPopErrorHandler());
    std::string why = err ? captured_error() : "";
    for (const auto &[from, to] : {std::pair<std::string, std::string>{"data.M", "study.probe_M"}, {"data file", "file"},
                                   {"(data.file)", "(study.probe_file)"}})
      for (size_t at = why.find(from); at != std::string::npos; at = why.find(from, at + to.size()))
        why.replace(at, from.size(), to);
    PetscCheck(!err, comm, err, "study.probe_file: %s", why.c_str());
  }
  PetscFunctionReturn(0);
}

PetscErrorCode StudyCaseFinished(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                                 const StudyCase &c, bool *finished) {
  std::uint64_t stored = 0, computed = 0;
  std::vector<std::string> identity;
  Settings cs;
  PetscFunctionBeginUser;
  *finished = false;
  const std::string path = case_path(s.study.dir, c.index);
  PetscMPIInt rank;
  int exists = 0;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) exists = NotReadable(path).empty();
  PetscCallMPI(MPI_Bcast(&exists, 1, MPI_INT, 0, comm));
  if (!exists) PetscFunctionReturn(0);
  PetscCall(PetscPushErrorHandler(ErrorCapture, nullptr));
  PetscErrorCode err = h5::Verify(comm, path, &stored, &computed);
  if (!err) err = RunFileAttributes(comm, path, {"study.case_identity"}, &identity);
  PetscCall(PetscPopErrorHandler());
  if (err || stored != computed) PetscFunctionReturn(0);
  PetscCall(CaseSettings(comm, args, CaseModel(s, c), &cs));
  *finished = identity[0] == case_identity(cs);
  PetscFunctionReturn(0);
}

PetscInt StudyReferenceVariant(const Settings &s, PetscInt v) {
  StudyCase ref;
  ref.reference = true, ref.variant = v;
  const std::vector<std::string> own = study::CaseModel(s, ref);
  for (ref.variant = 0; ref.variant < v; ++ref.variant)
    if (study::CaseModel(s, ref) == own) return ref.variant;
  return v;
}

bool StudyCaseOf(const Settings &s, const StudyCase &c, PetscInt v) {
  return c.reference ? c.variant == StudyReferenceVariant(s, v) : c.variant == v;
}

std::vector<StudyCase> StudyCases(const Settings &s) {
  std::vector<StudyCase> cases;
  const auto Ls = integers(s.study.L), Hs = integers(s.study.H);
  const PetscInt nv = (PetscInt)StudyVariants(s).size();
  for (PetscInt v = 0; v < nv; ++v) {
    const PetscInt own = StudyReferenceVariant(s, v) == v ? s.study.references : 0; // else shared
    for (PetscInt r = 0; r < own; ++r) {
      StudyCase ref;
      ref.index = (PetscInt)cases.size(), ref.variant = v, ref.reference = true, ref.reference_index = r;
      ref.L = s.study.state == StudyState::trained ? s.study.reference_L : 0;
      ref.H = s.study.state == StudyState::trained ? s.study.reference_H : s.limit.heads;
      cases.push_back(ref);
    }
    for (PetscInt L : Ls)
      for (PetscInt H : Hs)
        for (PetscInt seed = 1; seed <= s.study.seeds; ++seed) {
          StudyCase c;
          c.index = (PetscInt)cases.size(), c.variant = v, c.L = L, c.H = H, c.seed = seed;
          cases.push_back(c);
        }
  }
  return cases;
}

std::vector<PetscInt> StudyTimes(const Settings &s) {
  if (s.study.state != StudyState::trained) return {0};
  std::vector<PetscInt> t = integers(s.study.times);
  t.push_back(0), t.push_back(s.study.steps);
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  return t;
}

} // namespace mft
