// The heads' movement in a trained study (movement.csv): how far training
// moved every block of every layer, against L and H.
#include "mft/kernels/shape.hpp"
#include "mft/studies/study_tables.hpp"

#include <algorithm>
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

void WriteMovement(Outputs &out, std::ofstream &table, const std::string &v, const std::string &variant,
                   PetscInt time, const VariantCases &vc) {
  std::set<long long> Ls, Hs;
  PetscInt blocks = 0;
  for (const auto &[c, d] : vc.models)
    if (d.blocks > 0) Ls.insert(c.L), Hs.insert(c.H), blocks = d.blocks;
  const std::vector<long long> L(Ls.begin(), Ls.end()), H(Hs.begin(), Hs.end());
  for (PetscInt b = 0; b < blocks; ++b) {
    std::vector<StudyValue> mean, top;
    std::vector<size_t> seeds(L.size() * H.size(), 0);
    for (const auto &[c, d] : vc.models) {
      if (d.blocks != blocks) continue;
      const size_t cell = (std::find(L.begin(), L.end(), c.L) - L.begin()) * H.size() +
                          (std::find(H.begin(), H.end(), c.H) - H.begin());
      mean.push_back({cell, c.seed, LayersOf(d, b, false)}), top.push_back({cell, c.seed, LayersOf(d, b, true)});
      ++seeds[cell];
    }
    const StudyScalar m = StudyScalarCompute(L, H, mean), t = StudyScalarCompute(L, H, top);
    for (size_t k = 0; k < seeds.size(); ++k)
      table << csv({v, quoted(variant), std::to_string(L[k / H.size()]), std::to_string(H[k % H.size()]),
                    std::to_string(time), block_name(b), std::to_string(seeds[k]), num(m.mean[k]), num(m.ci[k].lo),
                    num(m.ci[k].hi), num(t.mean[k])});
    WriteFit(out, v, variant, (std::string("movement_") + block_name(b)).c_str(), time, 0, m.fit, Training());
  }
}

} // namespace mft
