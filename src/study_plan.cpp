// A study's cases priced by the cost model and placed on groups of ranks
// (study_plan.hpp).
#include "mft/study_plan.hpp"
#include "mft/study_cases.hpp"

#include "mft/cost.hpp"
#include "mft/error.hpp"
#include "mft/limit.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>

namespace mft {

using namespace study;

std::vector<PetscInt> PlanSizes(PetscInt P) {
  std::vector<PetscInt> sizes;
  for (PetscInt g = 1; g <= P; g *= 2) sizes.push_back(g);
  if (sizes.back() != P) sizes.push_back(P); // every rank in one group: the serial schedule
  return sizes;
}

namespace {

// One forward and its adjoint (a training step's work) of `layers` layers of
// H heads on M sequences of N tokens, on g ranks at the grid the case gets.
double StepSeconds(const Settings &cs, PetscInt layers, PetscInt H, PetscInt M, PetscInt N, PetscInt g,
                   const Network &net) {
  ModelSettings m = cs.model;
  m.L = layers, m.H = H;
  m.causal = false; // the mask saves the kernels little at a study's N: priced as full rows (docs/scaling.md)
  const StepCost c = ChooseGrid(m, M, N, g, cs.parallel.rate, net, cs.parallel.head_groups, CutFormSetting(cs.parallel));
  if (c.Ph == 0) return INFINITY;
  const double units = (double)layers * std::ceil((double)H / c.Ph) * std::ceil((double)M / c.Pt);
  const double unit = cs.parallel.unit_overhead + (cs.model.causal ? cs.parallel.causal_overhead : 0.0);
  return c.seconds() + unit * units + cs.parallel.layer_overhead * layers;
}

// The probes of a case once: every probe set's forward and adjoint, and a file.
double ProbeSeconds(const Settings &cs, PetscInt layers, PetscInt H, PetscInt g, const Network &net) {
  double t = cs.parallel.case_overhead;
  for (const ProbeSet &p : probe_sets(cs))
    t += StepSeconds(cs, layers, H, cs.study.probe_M, p.N ? p.N : cs.data.N, g, net);
  return t;
}

} // namespace

PetscErrorCode StudyPrices(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                           const std::vector<StudyCase> &cases, PetscInt P, PetscInt node_ranks,
                           std::vector<std::vector<double>> *seconds) {
  const std::vector<PetscInt> sizes = PlanSizes(P);
  const bool trained = s.study.state == StudyState::trained;
  const double recorded = (double)StudyTimes(s).size();
  PetscFunctionBeginUser;
  seconds->assign(cases.size(), std::vector<double>(sizes.size()));
  for (size_t i = 0; i < cases.size(); ++i) {
    const StudyCase &c = cases[i];
    Settings cs;
    // A case whose settings are refused costs nothing: it fails at once when run, and says why.
    PetscCall(PetscPushErrorHandler(ErrorCapture, nullptr));
    const PetscErrorCode err = CaseSettings(comm, args, CaseModel(s, c), &cs);
    PetscCall(PetscPopErrorHandler());
    if (err) {
      (*seconds)[i].assign(sizes.size(), s.parallel.case_overhead);
      continue;
    }
    const Network net = NetworkOf(cs.parallel, node_ranks);
    const bool limit = c.reference && !trained;
    const PetscInt layers = limit && cs.limit.scheme == LimitScheme::rk ? (PetscInt)kLimitEvaluations : cs.model.L;
    const PetscInt H = limit ? cs.limit.heads : cs.model.H;
    for (size_t j = 0; j < sizes.size(); ++j) {
      const PetscInt g = sizes[j];
      double t = cs.parallel.case_overhead;
      if (trained)
        t += s.study.steps * StepSeconds(cs, layers, H, cs.data.M, cs.data.N, g, net) +
             recorded * ProbeSeconds(cs, layers, H, g, net) + cs.parallel.case_overhead;
      else
        t += ProbeSeconds(cs, layers, H, g, net);
      (*seconds)[i][j] = t;
    }
  }
  PetscFunctionReturn(0);
}

namespace {

// The groups of each size for cases given their sizes: P ranks in proportion
// to the core-seconds of each size's cases, at least one group for a size
// with cases; the ranks left over go, a group at a time, to the size whose
// groups have the most work each.
std::vector<PetscInt> GroupCounts(const std::vector<PetscInt> &sizes, const std::vector<double> &work, PetscInt P) {
  const double total = std::accumulate(work.begin(), work.end(), 0.0);
  std::vector<PetscInt> count(sizes.size(), 0);
  PetscInt used = 0;
  for (size_t j = sizes.size(); j-- > 0;) { // largest first: a size's first group must fit
    if (work[j] <= 0 || used + sizes[j] > P) continue;
    count[j] = std::max<PetscInt>(1, (PetscInt)std::floor(P * work[j] / total / sizes[j]));
    count[j] = std::min(count[j], (P - used) / sizes[j]);
    used += count[j] * sizes[j];
  }
  for (;;) {
    PetscInt best = -1;
    for (size_t j = 0; j < sizes.size(); ++j)
      if (work[j] > 0 && used + sizes[j] <= P &&
          (best < 0 || work[j] / (count[j] * sizes[j] + 1e-300) > work[best] / (count[best] * sizes[best] + 1e-300)))
        best = (PetscInt)j;
    if (best < 0) break;
    count[best]++, used += sizes[best];
  }
  return count;
}

// The plan of one target: each case's size, the groups, and the run simulated.
StudyPlan PlanFor(const std::vector<std::vector<double>> &seconds, PetscInt P, double target) {
  StudyPlan plan;
  plan.P = P, plan.sizes = PlanSizes(P);
  const size_t n = seconds.size(), S = plan.sizes.size();
  std::vector<double> work(S, 0.0);
  plan.size_of.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const auto &t = seconds[i];
    size_t j = (size_t)(std::min_element(t.begin(), t.end()) - t.begin());
    if (target <= 0 && std::isfinite(t[S - 1])) j = S - 1; // the serial schedule: every rank
    for (size_t k = 0; k < S && target > 0; ++k)
      if (t[k] <= target) {
        j = k;
        break;
      }
    plan.size_of[i] = j;
    work[j] += plan.sizes[j] * t[j];
    plan.serial_work += t[0];
  }
  const std::vector<PetscInt> count = GroupCounts(plan.sizes, work, P);
  plan.start.assign(n, 0.0), plan.end.assign(n, 0.0);
  for (size_t j = S; j-- > 0;) {
    for (PetscInt g = 0; g < count[j]; ++g) plan.groups.push_back(plan.sizes[j]);
    // A size without a group (more sizes than ranks allow) runs nothing: an infinite makespan.
    if (count[j] == 0 && work[j] > 0) plan.makespan = INFINITY;
    if (count[j] == 0) continue;
    std::priority_queue<double, std::vector<double>, std::greater<double>> free;
    for (PetscInt g = 0; g < count[j]; ++g) free.push(0.0);
    for (size_t i : PlanOrder(plan, seconds, j)) {
      plan.start[i] = free.top();
      plan.end[i] = plan.start[i] + seconds[i][j];
      free.pop(), free.push(plan.end[i]);
      plan.makespan = std::max(plan.makespan, plan.end[i]);
    }
  }
  return plan;
}

} // namespace

std::vector<size_t> PlanOrder(const StudyPlan &plan, const std::vector<std::vector<double>> &seconds, size_t size) {
  std::vector<size_t> order;
  for (size_t i = 0; i < plan.size_of.size(); ++i)
    if (plan.size_of[i] == size) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return seconds[a][size] > seconds[b][size]; });
  return order;
}

std::string StudyPlan::groups_text() const {
  std::string text;
  for (size_t a = 0; a < groups.size();) {
    size_t b = a;
    while (b < groups.size() && groups[b] == groups[a]) ++b;
    text += (text.empty() ? "" : ", ") + std::to_string(b - a) + " x " + std::to_string(groups[a]);
    a = b;
  }
  return text;
}

std::vector<PlanTask> PlanTasks(const StudyPlan &plan, const std::vector<std::vector<double>> &seconds, double limit) {
  std::vector<PlanTask> tasks;
  for (size_t j = plan.sizes.size(); j-- > 0;) {
    const size_t first = tasks.size();
    for (size_t i : PlanOrder(plan, seconds, j)) {
      size_t k = first;
      while (k < tasks.size() && tasks[k].seconds + seconds[i][j] > limit) ++k;
      if (k == tasks.size()) tasks.push_back(PlanTask{plan.sizes[j], 0.0, {}});
      tasks[k].seconds += seconds[i][j];
      tasks[k].cases.push_back(i);
    }
  }
  return tasks;
}

StudyPlan PlanSerial(const std::vector<std::vector<double>> &seconds, PetscInt P) { return PlanFor(seconds, P, 0); }

StudyPlan PlanStudy(const std::vector<std::vector<double>> &seconds, PetscInt P) {
  double serial = 0, longest = 0;
  for (const auto &t : seconds) {
    serial += t[0];
    longest = std::max(longest, *std::min_element(t.begin(), t.end()));
  }
  const double bound = std::max(serial / P, longest);
  StudyPlan best;
  best.makespan = INFINITY;
  // The targets from the bound up to every case on one rank (INFINITY); and
  // 0: every case on all P ranks, the serial schedule, which no plan kept exceeds.
  for (double f : std::initializer_list<double>{0.0, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, INFINITY}) {
    StudyPlan plan = PlanFor(seconds, P, bound * f);
    if (plan.makespan < best.makespan) best = std::move(plan);
  }
  return best;
}

} // namespace mft
