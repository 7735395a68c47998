// The heads and outputs in a trained study: how far training moved every
// block of every layer (movement.csv), how differently its heads attend
// (diversity.csv), and how far apart its seeds' outputs are (spread.csv),
// against L and H.
#include "mft/kernels/shape.hpp"
#include "mft/studies/study_tables.hpp"

#include <algorithm>
#include <functional>
#include <set>

namespace mft {

using namespace study;

namespace {

// One case's figure for block b: the mean (top = false) or the largest
// (top = true) over layers of HeadsBlockChange.
double LayersOf(const CaseData &d, PetscInt b, bool top) {
  const size_t layers = d.block_change.size() / (size_t)d.blocks;
  double sum = 0, most = 0;
  for (size_t l = 0; l < layers; ++l) {
    const double x = d.block_change[l * (size_t)d.blocks + (size_t)b];
    sum += x, most = std::max(most, x);
  }
  return top ? most : sum / (double)layers;
}

} // namespace

namespace {

// The sorted L and H of the models that `has` a figure, and the cell of (L, H).
struct Cells {
  std::vector<long long> L, H;
  Cells(const VariantCases &vc, const std::function<bool(const CaseData &)> &has) {
    std::set<long long> Ls, Hs;
    for (const auto &[c, d] : vc.models)
      if (has(d)) Ls.insert(c.L), Hs.insert(c.H);
    L.assign(Ls.begin(), Ls.end()), H.assign(Hs.begin(), Hs.end());
  }
  size_t of(const StudyCase &c) const {
    return (std::find(L.begin(), L.end(), c.L) - L.begin()) * H.size() + (std::find(H.begin(), H.end(), c.H) - H.begin());
  }
  size_t size() const { return L.size() * H.size(); }
  std::string row(size_t k) const { return std::to_string(L[k / H.size()]) + "," + std::to_string(H[k % H.size()]); }
};

} // namespace

void WriteMovement(Outputs &out, std::ofstream &table, const std::string &v, const std::string &variant,
                   PetscInt time, const VariantCases &vc) {
  PetscInt blocks = 0;
  for (const auto &[c, d] : vc.models)
    if (d.blocks > 0) blocks = d.blocks;
  const Cells cells(vc, [&](const CaseData &d) { return d.blocks > 0; });
  for (PetscInt b = 0; b < blocks; ++b) {
    std::vector<StudyValue> mean, top;
    std::vector<size_t> seeds(cells.size(), 0);
    for (const auto &[c, d] : vc.models) {
      if (d.blocks != blocks) continue;
      mean.push_back({cells.of(c), c.seed, LayersOf(d, b, false)}), top.push_back({cells.of(c), c.seed, LayersOf(d, b, true)});
      ++seeds[cells.of(c)];
    }
    const StudyScalar m = StudyScalarCompute(cells.L, cells.H, mean), t = StudyScalarCompute(cells.L, cells.H, top);
    for (size_t k = 0; k < seeds.size(); ++k)
      table << csv({v, quoted(variant), cells.row(k), std::to_string(time), block_name(b), std::to_string(seeds[k]),
                    num(m.mean[k]), num(m.ci[k].lo), num(m.ci[k].hi), num(t.mean[k])});
    WriteFit(out, v, variant, (std::string("movement_") + block_name(b)).c_str(), time, 0, m.fit, Training());
  }
}

void WriteDiversity(Outputs &out, std::ofstream &table, const std::string &v, const std::string &variant,
                    PetscInt time, const VariantCases &vc) {
  const Cells cells(vc, [](const CaseData &d) { return std::isfinite(d.diversity); });
  if (!cells.size()) return;
  std::vector<StudyValue> values;
  std::vector<size_t> seeds(cells.size(), 0);
  for (const auto &[c, d] : vc.models)
    if (std::isfinite(d.diversity)) values.push_back({cells.of(c), c.seed, d.diversity}), ++seeds[cells.of(c)];
  const StudyScalar m = StudyScalarCompute(cells.L, cells.H, values);
  for (size_t k = 0; k < seeds.size(); ++k)
    table << csv({v, quoted(variant), cells.row(k), std::to_string(time), std::to_string(seeds[k]), num(m.mean[k]),
                  num(m.ci[k].lo), num(m.ci[k].hi)});
  WriteFit(out, v, variant, "diversity", time, 0, m.fit, Training());
}

namespace {

// 2 |x - y|^2 / (|x|^2 + |y|^2) over every probe set's x(1).
double PairSpread(const CaseData &a, const CaseData &b) {
  double diff = 0, norms = 0;
  for (size_t f = 0; f < a.tokens.size(); ++f)
    for (size_t i = 0; i < a.tokens[f].size(); ++i) {
      const double x = a.tokens[f][i], y = b.tokens[f][i];
      diff += (x - y) * (x - y), norms += x * x + y * y;
    }
  return norms > 0 ? 2 * diff / norms : NAN;
}

// The mean over the pairs of seeds of h, leaving seed `out` (-1: none) out.
double PairMean(const std::vector<std::vector<double>> &h, long long out) {
  double sum = 0, n = 0;
  for (size_t i = 0; i < h.size(); ++i)
    for (size_t j = i + 1; j < h.size(); ++j)
      if ((long long)i != out && (long long)j != out) sum += h[i][j], ++n;
  return n ? sum / n : NAN;
}

} // namespace

void WriteSpread(std::ofstream &table, const std::string &v, const std::string &variant, PetscInt time,
                 const VariantCases &vc) {
  const Cells cells(vc, [](const CaseData &d) { return !d.tokens.empty(); });
  std::vector<std::vector<const CaseData *>> per(cells.size());
  for (const auto &[c, d] : vc.models)
    if (!d.tokens.empty()) per[cells.of(c)].push_back(&d);
  for (size_t k = 0; k < cells.size(); ++k) {
    const auto &x = per[k];
    std::vector<std::vector<double>> h(x.size(), std::vector<double>(x.size(), NAN));
    for (size_t i = 0; i < x.size(); ++i)
      for (size_t j = i + 1; j < x.size(); ++j) h[i][j] = PairSpread(*x[i], *x[j]);
    std::vector<double> without;
    if (x.size() >= 3)
      for (size_t s = 0; s < x.size(); ++s) without.push_back(PairMean(h, (long long)s));
    const double spread = PairMean(h, -1);
    const StudyInterval ci = StudyJackknife(spread, without, {});
    table << csv({v, quoted(variant), cells.row(k), std::to_string(time), std::to_string(x.size()), num(spread),
                  num(ci.lo), num(ci.hi)});
  }
}

} // namespace mft
