// Run header and summary line.
#include "mft/files/report.hpp"

#include "mft/settings/options.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace mft {

namespace {

// "L=.. H=.. d=.. k=.. qkv beta=..[ causal ...][ | mlp m=.. relu ...] | M=.. N=.. family | loss token"
std::string ModelLine(const Settings &s) {
  const ModelSettings &m = s.model;
  const std::string mlp = !m.mlp() ? "" : " | mlp m=" + std::to_string(m.mlp_width) + " " + to_string(m.mlp_activation) +
      (m.mlp_depth_exponent == 1 && m.mlp_width_exponent == 1 ? "" : " a'=" + format_real(m.mlp_depth_exponent) +
                                                                       " c'=" + format_real(m.mlp_width_exponent));
  char line[640];
  snprintf(line, sizeof line,
           "L=%" PetscInt_FMT " H=%" PetscInt_FMT " d=%" PetscInt_FMT " k=%s %s beta=%g%s%s%s%s%s | M=%" PetscInt_FMT
           " N=%" PetscInt_FMT " %s | loss %s",
           m.L, m.H, m.d, m.infinite_head ? "inf" : std::to_string(m.k).c_str(), to_string(m.head_kind), m.beta,
           m.causal ? " causal" : "",
           m.norm == TokenNorm::none ? "" : (std::string(" norm=") + to_string(m.norm)).c_str(),
           m.mean_field() ? "" : (" a=" + format_real(m.depth_exponent) + " c=" + format_real(m.head_exponent)).c_str(),
           m.logit_exponent == 0 ? "" : (" g=" + format_real(m.logit_exponent)).c_str(), mlp.c_str(), s.data.M, s.data.N,
           s.data.file.empty() ? s.data.family.c_str() : s.data.file.c_str(), to_string(s.loss.kind));
  return line;
}

} // namespace

PetscErrorCode ReportEnsembleHeader(const Ensemble &e) {
  const Settings &s = e.p.settings;
  PetscMPIInt size;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(e.comm, &size));
  PetscCall(PetscPrintf(e.comm,
                        "mft %s: an ensemble of %" PetscInt_FMT " models (seeds %llu .. %llu), each %s | %d ranks, %"
                        PetscInt_FMT " to %" PetscInt_FMT " models a rank, %" PetscInt_FMT " a kernel\n",
                        s.command.c_str(), e.S, (unsigned long long)e.first, (unsigned long long)(e.first + e.S - 1),
                        ModelLine(s).c_str(), size, e.S / size, (e.S + size - 1) / size, kLanes));
  PetscFunctionReturn(0);
}

PetscErrorCode ReportHeader(const Problem &p) {
  const Settings &s = p.settings;
  PetscFunctionBeginUser;
  PetscCall(PetscPrintf(p.grid.comm, "mft %s: %s | %d ranks (%" PetscInt_FMT " head groups x %" PetscInt_FMT
                        " token groups)\n", s.command.c_str(), ModelLine(s).c_str(), p.grid.size, p.grid.Ph, p.grid.Pt));
  if (p.grid.size > 1) {
    const StepCost &c = p.predicted;
    const std::string cut = c.cuts ? std::string(", sequences cut across token groups shared as ") + to_string(c.form)
                                   : std::string();
    PetscCall(PetscPrintf(p.grid.comm,
                          "grid %s%s: predicted training step %.3g s = compute %.3g s + communication %.3g s (%.0f "
                          "messages, %.3g MB a rank; %.3g us, %.3g GB/s, %.3g Gop/s a rank)\n",
                          s.is_explicit("parallel.head_groups") ? "given" : "chosen by the cost model", cut.c_str(),
                          c.seconds(),
                          c.compute, c.communication, c.messages, c.bytes / 1e6, s.parallel.latency * 1e6,
                          s.parallel.bandwidth / 1e9, s.parallel.rate / 1e9));
  }
  PetscFunctionReturn(0);
}

static std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

Summary &Summary::add(const std::string &key, double value) {
  items_.emplace_back(key, number(value));
  return *this;
}

Summary &Summary::add(const std::string &key, long long value) {
  items_.emplace_back(key, std::to_string(value));
  return *this;
}

Summary &Summary::add(const std::string &key, const std::string &value) {
  std::string quoted = "\"";
  for (char c : value) quoted += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  items_.emplace_back(key, quoted + "\"");
  return *this;
}

PetscErrorCode Summary::print(MPI_Comm comm) const {
  std::string line = "mft-summary {";
  for (size_t i = 0; i < items_.size(); ++i) line += (i ? ", \"" : "\"") + items_[i].first + "\": " + items_[i].second;
  line += "}\n";
  PetscFunctionBeginUser;
  PetscCall(PetscPrintf(comm, "%s", line.c_str()));
  PetscFunctionReturn(0);
}


} // namespace mft
