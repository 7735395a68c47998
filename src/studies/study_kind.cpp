// The kinds of study and how one is chosen (study_kind.hpp).
#include "mft/studies/study_kind.hpp"

#include "mft/studies/study_in_law.hpp"
#include "mft/studies/study_in_law_trained.hpp"

namespace mft {

const std::vector<StudyKind> &StudyKinds() {
  static const std::vector<StudyKind> kinds = {
      {"law", [](const Settings &s) { return s.study_in_law(); }, StudyInLawList, StudyInLawRun},
      {"trained_in_law", [](const Settings &s) { return s.trained_in_law(); }, StudyTrainedInLawList,
       StudyTrainedInLawRun},
      {"convergence", [](const Settings &) { return true; }, StudyConvergenceList, StudyConvergenceRun},
  };
  return kinds;
}

const StudyKind &StudyKindOf(const Settings &s) {
  for (const StudyKind &k : StudyKinds())
    if (k.chosen(s)) return k;
  return StudyKinds().back();
}

} // namespace mft
