// Fits the model's coefficients (model/coefficients.h) to measured times: non-linear least squares
// on log(predicted / measured), Eigen's Levenberg-Marquardt with a forward-difference Jacobian.
// Logs weigh a 10 us kernel's 10% error like a 10 ms kernel's, which is what a tile choice needs.
// Each free coefficient moves inside its physical range (coefficient_table()) through a logistic
// map, so the fit can never leave it; the others keep their start values.
#pragma once

#include <string>
#include <vector>

#include "fit/fit_dataset.h"
#include "model/coefficients.h"

namespace flashtune::fit {

// The coefficients a fit moves by default: the ones the H200 data can tell apart. Left fixed:
// dram_efficiency (a measured copy sets it), sfu_efficiency (exp never binds alone),
// issue_efficiency (only (1 + issue_overhead) / issue_efficiency is identifiable), and
// l2_capacity_fraction (no workload of the grid sits on the capacity edge). tensor_efficiency is
// free but moves only when the data holds tensor-core measurements (see fit_coefficients).
std::vector<std::string> default_free_coefficients();

// Whether any point's prediction reads coefficient `name`: tensor_efficiency only those of kernels
// that issue mma (GeometryAnalysis::per_kv_tile.mma > 0); every other coefficient all of them.
bool coefficient_informed(const std::string& name, const std::vector<const FitPoint*>& points);

// Throws std::invalid_argument naming an unknown coefficient (and listing the known ones).
void check_coefficient_names(const std::vector<std::string>& names);

// At least this many measurements for `free_count` free coefficients: 5 per coefficient, the
// least that leaves the fit over-determined by a margin that held-out figures can trust.
std::size_t min_points_for_fit(std::size_t free_count);

struct FitResult {
  model::Coefficients coefficients;
  std::vector<std::string> free;        // the coefficients the fit moved
  std::vector<std::string> uninformed;  // asked for, but no point depends on them: kept at the start
  double rms_log_start = 0, rms_log_end = 0;  // root mean square of log(pred / measured)
  int evaluations = 0;
  std::string status;  // Eigen's stop reason, in words
};

double predicted_time(const FitPoint& p, const model::GpuSpec& gpu, const model::Coefficients& k);
double rms_log_error(const std::vector<const FitPoint*>& points, const model::GpuSpec& gpu, const model::Coefficients& k);

// Coefficients of `free` that no point depends on (coefficient_informed) keep their start value
// and are listed in FitResult::uninformed. Throws std::invalid_argument when none is left, or when
// points.size() < min_points_for_fit(the rest) (the message says how many are needed and how many
// there are).
// What the fit minimises over log(predicted / measured): Squares, the sum of squares (the default:
// a tile choice's ranking); Absolute, the sum of absolute values (~ the MAPE, robust to a few
// points the model does not describe; `fit --decode`, whose bar is a MAPE), through Levenberg-
// Marquardt on residuals r / sqrt(max(|r|, 1e-3)).
enum class FitLoss { Squares, Absolute };
FitResult fit_coefficients(const std::vector<const FitPoint*>& points, const model::GpuSpec& gpu,
                           const model::Coefficients& start, const std::vector<std::string>& free,
                           FitLoss loss = FitLoss::Squares);

}  // namespace flashtune::fit
