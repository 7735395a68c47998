// A study's cases priced by the cost model and placed on groups of ranks
// (study_plan.hpp).
#include "mft/studies/study_plan.hpp"
#include "mft/studies/study_cases.hpp"

#include "mft/flow/cost.hpp"
#include "mft/settings/error.hpp"
#include "mft/flow/limit.hpp"

#include <algorithm>
#include <cmath>
#include <map>
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

constexpr int kPlanSteps = 64; // moves of the last case to a larger size, per candidate

// r ranks as groups of the plan's sizes, largest first.
std::vector<PetscInt> Decompose(PetscInt r, const std::vector<PetscInt> &sizes) {
  std::vector<PetscInt> pieces;
  for (size_t j = sizes.size(); j-- > 0;)
    while (r >= sizes[j]) pieces.push_back(sizes[j]), r -= sizes[j];
  return pieces;
}

} // namespace

size_t SizeIndex(const std::vector<PetscInt> &sizes, PetscInt g) {
  return (size_t)(std::find(sizes.begin(), sizes.end(), g) - sizes.begin());
}

std::vector<PetscInt> SplitGroup(PetscInt g, const std::vector<PetscInt> &sizes) {
  std::vector<PetscInt> pieces;
  PetscInt s = 0;
  for (PetscInt size : sizes)
    if (size < g) s = size;
  if (s == 0) return pieces; // one rank: nothing to split into
  for (; g >= s; g -= s) pieces.push_back(s);
  for (PetscInt piece : Decompose(g, sizes)) pieces.push_back(piece);
  return pieces;
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
  std::map<std::string, std::vector<double>> priced;
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
    const bool limit = c.reference && !trained;
    // Cases that differ only in their seeds cost the same: priced once.
    std::string key = limit ? "limit" : "";
    for (const auto &[k, v] : cs.record)
      if (k != "init.seed") key += k + "=" + v + ";";
    if (const auto at = priced.find(key); at != priced.end()) {
      (*seconds)[i] = at->second;
      continue;
    }
    const Network net = NetworkOf(cs.parallel, node_ranks);
    const PetscInt layers = limit && cs.limit.scheme == LimitScheme::rk ? (PetscInt)kLimitEvaluations : cs.model.L;
    const PetscInt H = limit ? cs.limit.heads : cs.model.H;
    const PetscInt node = node_ranks > 0 ? node_ranks : P; // other groups share a node with one of fewer ranks
    for (size_t j = 0; j < sizes.size(); ++j) {
      const PetscInt g = sizes[j];
      double t = cs.parallel.case_overhead;
      if (trained)
        t += s.study.steps * StepSeconds(cs, layers, H, cs.data.M, cs.data.N, g, net) +
             recorded * ProbeSeconds(cs, layers, H, g, net) + cs.parallel.case_overhead;
      else
        t += ProbeSeconds(cs, layers, H, g, net) * (limit && g < node ? cs.parallel.contention : 1.0);
      (*seconds)[i][j] = t;
    }
    priced[key] = (*seconds)[i];
  }
  PetscFunctionReturn(0);
}

namespace {

// The groups of each size for cases given their sizes: P ranks in proportion
// to the core-seconds of each size's cases, at least one group for a size
// with cases; the ranks left over go, a group at a time, to the size whose
// groups have the most work each. `top`: each size with cases, from the
// largest, takes every rank it can instead. Ranks that fit no size with cases
// still form groups (Decompose): they split down to what is left of theirs.
std::vector<PetscInt> GroupCounts(const std::vector<PetscInt> &sizes, const std::vector<double> &work, PetscInt P,
                                  bool top) {
  const double total = std::accumulate(work.begin(), work.end(), 0.0);
  std::vector<PetscInt> count(sizes.size(), 0);
  PetscInt used = 0;
  for (size_t j = sizes.size(); j-- > 0;) { // largest first: a size's first group must fit
    if (work[j] <= 0 || used + sizes[j] > P) continue;
    count[j] = top ? P / sizes[j] : std::max<PetscInt>(1, (PetscInt)std::floor(P * work[j] / total / sizes[j]));
    count[j] = std::min(count[j], (P - used) / sizes[j]);
    used += count[j] * sizes[j];
  }
  for (; !top;) {
    PetscInt best = -1;
    for (size_t j = 0; j < sizes.size(); ++j)
      if (work[j] > 0 && used + sizes[j] <= P &&
          (best < 0 || work[j] / (count[j] * sizes[j] + 1e-300) > work[best] / (count[best] * sizes[best] + 1e-300)))
        best = (PetscInt)j;
    if (best < 0) break;
    count[best]++, used += sizes[best];
  }
  for (PetscInt g : Decompose(P - used, sizes)) ++count[SizeIndex(sizes, g)];
  return count;
}

// Each case's size for a target time: the smallest on which it ends within
// the target (else its fastest); target 0: all P ranks (the serial schedule).
std::vector<size_t> SizesFor(const std::vector<std::vector<double>> &seconds, double target) {
  std::vector<size_t> size_of;
  for (const auto &t : seconds) {
    const size_t S = t.size();
    size_t j = (size_t)(std::min_element(t.begin(), t.end()) - t.begin());
    if (target <= 0 && std::isfinite(t[S - 1])) j = S - 1;
    for (size_t k = 0; k < S && target > 0; ++k)
      if (t[k] <= target) {
        j = k;
        break;
      }
    size_of.push_back(j);
  }
  return size_of;
}

// The plan of cases at the given sizes: the groups (GroupCounts), and the run
// simulated size by size from the largest: a size's groups, with those split
// from larger ones at the times they were freed, take its cases largest first;
// when none is left, each splits (SplitGroup) at the time it is free.
StudyPlan Simulate(const std::vector<std::vector<double>> &seconds, PetscInt P, const std::vector<size_t> &size_of,
                   bool top) {
  StudyPlan plan;
  plan.P = P, plan.sizes = PlanSizes(P), plan.size_of = size_of;
  const size_t n = seconds.size(), S = plan.sizes.size();
  std::vector<double> work(S, 0.0);
  for (size_t i = 0; i < n; ++i) {
    work[size_of[i]] += plan.sizes[size_of[i]] * seconds[i][size_of[i]];
    plan.serial_work += seconds[i][0];
  }
  plan.start.assign(n, 0.0), plan.end.assign(n, 0.0);
  const std::vector<PetscInt> count = GroupCounts(plan.sizes, work, P, top);
  // Per size: when each of its groups is free. No more than n groups of a
  // size can ever take a case (there are n cases): the others are left out
  // of the simulation (they stay idle; on a huge plan_cores there are millions).
  std::vector<std::vector<double>> arrive(S);
  for (size_t j = S; j-- > 0;) {
    for (PetscInt g = 0; g < count[j]; ++g) {
      plan.groups.push_back(plan.sizes[j]);
      if ((size_t)g < n) arrive[j].push_back(0.0);
    }
    std::vector<double> &a = arrive[j];
    if (a.size() > n) std::nth_element(a.begin(), a.begin() + (std::ptrdiff_t)n, a.end()), a.resize(n); // the earliest n
    std::priority_queue<double, std::vector<double>, std::greater<double>> free(a.begin(), a.end());
    const std::vector<size_t> order = PlanOrder(plan, seconds, j);
    if (!order.empty() && free.empty()) plan.makespan = INFINITY; // cases of a size no group reaches
    for (size_t i : order) {
      if (free.empty()) break;
      plan.start[i] = free.top();
      plan.end[i] = plan.start[i] + seconds[i][j];
      free.pop(), free.push(plan.end[i]);
      plan.makespan = std::max(plan.makespan, plan.end[i]);
    }
    for (size_t split = 0; !free.empty() && split < n; free.pop(), ++split) // the earliest free n are enough
      for (PetscInt piece : SplitGroup(plan.sizes[j], plan.sizes))
        arrive[SizeIndex(plan.sizes, piece)].push_back(free.top());
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

StudyPlan PlanSerial(const std::vector<std::vector<double>> &seconds, PetscInt P) {
  return Simulate(seconds, P, SizesFor(seconds, 0), false);
}

StudyPlan PlanStudy(const std::vector<std::vector<double>> &seconds, PetscInt P, double margin) {
  double serial = 0, longest = 0;
  for (const auto &t : seconds) {
    serial += t[0];
    longest = std::max(longest, *std::min_element(t.begin(), t.end()));
  }
  const double bound = std::max(serial / P, longest);
  // The serial schedule (every case on all P ranks) first: a plan on groups
  // replaces it only when predicted `margin` faster.
  StudyPlan best = PlanSerial(seconds, P);
  const double serial_makespan = best.makespan;
  // The targets from the bound up to every case on one rank (INFINITY).
  for (double f : std::initializer_list<double>{1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, INFINITY})
    for (bool top : {false, true}) {
      StudyPlan plan = Simulate(seconds, P, SizesFor(seconds, bound * f), top);
      // The case that ends last, moved to the next size while that ends no later.
      for (int step = 0; step < kPlanSteps && std::isfinite(plan.makespan); ++step) {
        const size_t i = (size_t)(std::max_element(plan.end.begin(), plan.end.end()) - plan.end.begin());
        std::vector<size_t> size_of = plan.size_of;
        if (++size_of[i] >= plan.sizes.size() || !(seconds[i][size_of[i]] < seconds[i][plan.size_of[i]])) break;
        StudyPlan next = Simulate(seconds, P, size_of, top);
        if (next.makespan > plan.makespan) break;
        plan = std::move(next);
      }
      if (plan.makespan < best.makespan && plan.makespan * (1 + margin) < serial_makespan) best = std::move(plan);
    }
  return best;
}

} // namespace mft
