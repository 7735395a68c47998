// The pieces a study's aggregation shares between its rooms
// (study_aggregate.cpp: the errors, fits and tables; study_worst_tables.cpp:
// the worst inputs' tables; study_rates.cpp: a
// learning-rate study's tables; study_movement.cpp: a trained study's heads'
// movement and diversity): the case files of a variant, the rows and
// arrays written, the CSV and summary formats.
// Every routine here is not collective: the aggregation's rank 0 makes the
// tables, reading the study's files alone.
#pragma once

#include "mft/files/runfile.hpp"
#include "mft/studies/study_cases.hpp"
#include "mft/statistics/bootstrap.hpp"
#include "mft/statistics/power_fit.hpp"
#include "mft/statistics/two_sample.hpp"
#include "mft/studies/study_statistics.hpp"

#include <cmath>
#include <fstream>
#include <initializer_list>
#include <list>
#include <map>
#include <string>
#include <vector>

namespace mft {

// The case files of one variant at one recorded time: its references and its models.
struct VariantCases {
  std::vector<study::CaseData> references;
  std::vector<std::pair<StudyCase, study::CaseData>> models;
};

// What training did, per cell (mean over seeds of the heads' movement,
// geometric mean of the risk reduction) and for the references; NaN at initialisation.
struct Training {
  std::vector<double> change, reduction;
  double reference_change = NAN, reference_reduction = NAN;
};

// The rows and arrays of one variant at one time.
struct Outputs {
  std::ofstream table, fits, sets, expansions;
  std::vector<ResultArray> arrays;
  std::list<std::vector<double>> keep; // storage behind the arrays
  std::vector<std::pair<std::string, std::string>> attributes;
  std::string at, at_key;
  bool last = false;
  void store(const std::string &name, std::vector<unsigned long long> dims, std::vector<double> values) {
    keep.push_back(std::move(values));
    arrays.push_back({at + name, dims, keep.back().data()});
    if (last) arrays.push_back({name, dims, keep.back().data()});
  }
  void attribute(const std::string &key, const std::string &value) {
    attributes.emplace_back(at_key + key, value);
    if (last) attributes.emplace_back(key, value);
  }
};

// A CSV row: the fields joined by commas; a field in quotes.
std::string csv(const std::vector<std::string> &fields);
std::string quoted(const std::string &s);
// A table: its header line and its rows (csv()), written by rank 0.
// Collective on comm.
PetscErrorCode WriteTable(MPI_Comm comm, const std::string &path, const std::string &header,
                          const std::vector<std::string> &rows);

// A figure of the printed summary with its interval; "(not determined)" when
// one of the flags `undecided` (space-separated) is raised (determined()).
std::string with_interval(double x, StudyInterval ci, const std::string &flags, const std::string &undecided);
bool determined(const std::string &flags, const std::string &undecided);

// The figures of a convergence study's fit, each with the flags that leave it
// not determined: the slopes in L and H, the joint fit's exponents a and b.
struct FitFigure {
  const char *name;
  double StudyFit::*value;
  StudyInterval StudyFit::*ci;
  const char *undecided;
};
extern const FitFigure kFitFigures[4];

// The corrected fit of one variant's quantity (0: tokens x(1), 1: adjoints
// p(0)) at one recorded time.
struct QuantityFit {
  size_t variant = 0;
  int quantity = 0;
  PetscInt time = 0;
  StudyFit fit;
};
// Every corrected fit of the study in dir, from its case files, as the
// aggregation makes them; *read: the case files read at the last time.
// Not collective.
PetscErrorCode StudyFitsOf(const Settings &s, const std::string &dir, std::vector<QuantityFit> *fits, PetscInt *read);

// The worst-input figures of one variant at one time and N (or K atoms):
// per cell the root of the mean over seeds, with the jackknife over seeds and
// (three or more held out) over the held-out references; the search's raw
// figure, the collapsed start's, and with worst.check the doubled search's.
struct WorstFigure {
  PetscInt N = 0;
  bool measure = false;
  StudyScalar err, search, collapsed, check;
  std::vector<StudyValue> values; // per model case, its squared figure
  double seconds = NAN;
};


// Variant v's worst-input figures at one time, every N (and K atoms)
// searched, from the searches' files in dir against its cases vc and their
// errors e (empty without study.worst; a missing or damaged file is named
// when `name`, and left out).
PetscErrorCode WorstOf(const Settings &s, const std::string &dir, size_t v, PetscInt time, bool name,
                       const VariantCases &vc, const StudyErrors &e, std::vector<WorstFigure> *out);

// worst.csv and worst_N.csv, opened with their header lines.
struct WorstTables {
  std::ofstream worst, slopes;
};
void OpenWorstTables(WorstTables &tables, const std::string &dir);

// The worst-input figures of one variant at one time: worst.csv (every N),
// their fits in fits.csv (quantity tokens_worst, with _N<n> when several N
// were searched), and with several N the slope of log err_worst in log N
// per cell (worst_N.csv), its interval from the same jackknife over seeds.
PetscErrorCode WriteWorst(Outputs &out, std::ofstream &table, std::ofstream &slopes, const std::string &v,
                          const std::string &variant, PetscInt time, const StudyErrors &e, const StudyStatistics &st,
                          const Training &training, const std::vector<WorstFigure> &figures);

// A study over the head dimension: every variant sets model.k alone, over
// one L (input/study_head_dim_trained.cfg). Its cells over (k, H) at every
// time and quantity (0: x(1), 1: p(0)) are fitted by err^2 = A^2 H^-2q +
// B^2 k^-2r (statistics/separable.hpp; the corrected err, its standard
// error the interval's half width over 1.96, the resolved cells, or every
// cell with study.keep_unresolved) into head_dim_fits.csv, and the gap in k
// at each H alone into head_dim_gaps.csv. Their intervals: a bootstrap
// (statistics/bootstrap.hpp) of kHeadDimBoots replicates a source, each one
// resample of the seed indices (every variant's cells at once: cells of one
// seed index share their initial heads' stream) or of one set of references
// (every variant measured against it at once), every cell's err recomputed
// at those weights (StudyErrAt). Not collective (the aggregation's rank 0).
constexpr int kHeadDimBoots = 1000;
struct HeadDimCell {
  std::vector<double> k, H, err, se;
  std::vector<char> resolved;
  // Per variant added: the variant its references belong to, and its errors.
  std::vector<std::pair<PetscInt, StudyErrors>> errors;
};
using HeadDimCells = std::map<std::pair<PetscInt, int>, HeadDimCell>;
// A variant's k when it sets model.k alone, else NaN.
double VariantK(const std::string &variant);
// Adds a variant's cells; `references`: the variant whose references it is
// measured against (StudyReferenceVariant).
void AddHeadDimCells(HeadDimCells *cells, PetscInt time, double k, PetscInt references, const StudyErrors e[2],
                     const StudyStatistics st[2], bool keep_unresolved);
PetscErrorCode WriteHeadDim(const std::string &dir, const HeadDimCells &cells);

// The error's law at initialisation (study.fluctuation) against one variant's cells:
// per cell the predicted err of x(1), sqrt(E[max over the probe sequences of
// err_m^2]) with each err_m^2 the law's, (1/N)|e_m + xi_m|^2: e_m the Euler
// error, xi_m Gaussian of covariance G_m / (L H) (its spectrum from the exact
// trace; isotropic with tr G_m = N F_L^2 from Hutchinson probes), the
// expectation over 4000 fixed draws, and its range with
// F_L^2 moved by two standard errors; whether the measured 95% interval of
// the corrected err holds it, and the fraction of the resolved cells with L H
// >= 16 that do (holds); the constants the law gives the fit C1/L + C2 L^-a
// H^-b: C1 = L E(L) and C2 = F_L of the sequence of largest ones, at the
// largest L. Empty (no err) where the study has no law files.
struct FluctuationPrediction {
  std::vector<double> err, lo, hi, held; // per cell (held: 1, 0, or NaN where not counted)
  double holds = NAN, C1 = NAN, C2 = NAN;
  size_t cells = 0; // the cells counted in holds
};
PetscErrorCode StudyFluctuationPredict(const std::string &dir, size_t v, const StudyErrors &e, const StudyStatistics &st,
                               FluctuationPrediction *out);

// A row of fits.csv (law: the law's agreement and constants, on the row of
// the corrected x(1) at initialisation).
void WriteFit(Outputs &out, const std::string &v, const std::string &variant, const char *quantity, PetscInt time,
              int corrected, const StudyFit &f, const Training &t, const FluctuationPrediction *law = nullptr);

// A trained study's movement.csv rows for variant v at one time: per cell
// and block (Q, K, V, O), the mean over seeds of the layers' mean relative
// change |theta_lb(t) - theta_lb(0)| / |theta_lb(0)| (HeadsBlockChange) with
// its 95% interval, and of the largest layer's; the mean's slopes in L and
// H in fits.csv (quantity movement_<block>). Cases without the arrays are
// left out.
void WriteMovement(Outputs &out, std::ofstream &table, const std::string &v, const std::string &variant,
                   PetscInt time, const VariantCases &vc);

// A trained study's diversity.csv rows for variant v at one time: per cell,
// the mean over seeds of the heads' diversity at the probes (CaseData::
// diversity, flow/diversity.hpp) with its 95% interval; its slopes in L and
// H in fits.csv (quantity diversity). Cases without it are left out.
void WriteDiversity(Outputs &out, std::ofstream &table, const std::string &v, const std::string &variant,
                    PetscInt time, const VariantCases &vc);

// spread.csv's rows of a variant at one time: per cell the seeds' spread of
// the trained outputs, the mean over pairs of seeds of 2 |x_s(1) -
// x_s'(1)|^2 / (|x_s(1)|^2 + |x_s'(1)|^2) over every probe (near 0 when
// training takes every seed to one function, of order 1 when the trained
// model stays random), with its jackknife interval over the seeds (each
// left out of its pairs; three seeds or more).
void WriteSpread(std::ofstream &table, const std::string &v, const std::string &variant, PetscInt time,
                 const VariantCases &vc);

// A learning-rate study (study.learning_rates): every model case's training
// (and held-out) risk at the last step, per base variant, rate and cell.
struct RateRisk {
  size_t base, rate, cell;
  long long seed;
  double risk, heldout;
};

// The rates and grid of a learning-rate study, and its model cases' risks.
struct RateStudy {
  std::vector<std::string> words;  // the rates as given
  std::vector<double> rates;       // their values
  std::vector<size_t> order;       // indices of the rates in increasing order
  std::vector<long long> L, H;     // sorted
  std::vector<std::string> bases;  // the base variants' overrides
  PetscInt last = 0;               // the step the risks are taken at
  std::vector<RateRisk> all;
  size_t cells() const { return L.size() * H.size(); }
};

// The rates and grid of a learning-rate study (its risks come from the
// models AddRateRisks is given).
RateStudy RateStudyOf(const Settings &s);
// The risks of variant v's models at the last step.
void AddRateRisks(RateStudy *r, size_t v, const VariantCases &vc);
// A learning-rate study's tables: lr.csv, best_lr.csv and the drift fits.
PetscErrorCode WriteLearningRates(Outputs &out, const RateStudy &r, const std::string &dir);

// law_fits.csv's misfit columns of a power fit, and the finite
// reference's sizes where its term is in the model (C |L^-p H^-q -
// L_ref^-p H_ref^-q|; in a fit over k, k's in reference_H): kPowerFitMisfit,
// empty without a fit. Not collective.
constexpr const char *kPowerFitMisfit = "chi2,dof,p_value,rejected,decided_p,decided_q,reference_L,reference_H";
std::vector<std::string> PowerFitMisfit(const PowerFit &f);

// law.csv's energy columns of a comparison in law (kEnergyColumns): the
// largest energy distance over the sequences (a squared distance), its
// standard error and floor, its interval simultaneous over the sequences and
// whether it excludes 0, and the samples of the model's side it used (all
// of them). Not collective.
constexpr const char *kEnergyColumns = "energy,energy_se,energy_floor,energy_lo,energy_hi,energy_resolved,energy_samples";
std::vector<std::string> EnergyCells(const LawGap &g);

// law_expansions.csv (its columns kExpansionColumns), and a study's
// expansions.csv with a time and a quantity before them: variant v's
// expansions of err in one size x ("L", "H" or "k") over the cells with
// `resolved` set and a positive err (statistics/expansion.hpp: one power
// law, two terms at order 1, two terms with the order free; a fit without
// its points is left out), a row each, and their lines (ExpansionLine) in
// *lines; rho: the cells' correlations (over every cell given; empty:
// independent), for generalised least squares. Not collective.
constexpr const char *kExpansionColumns =
    "variant,size,form,p,p_lo,p_hi,a,a_se,b,b_se,chi2,dof,p_value,rejected,decided";
std::vector<std::string> ExpansionRows(size_t v, const std::string &x, const std::vector<double> &size,
                                       const std::vector<double> &err, const std::vector<double> &se,
                                       const std::vector<char> &resolved, std::vector<std::string> *lines,
                                       const std::vector<double> &rho = {});

} // namespace mft
