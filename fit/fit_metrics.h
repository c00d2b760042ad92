// How well predicted times match measured ones, in the figures a tuner cares about: absolute
// percentage error (per point), rank agreement within each workload (Spearman), and the cost of
// trusting the model's pick (top-1 regret: measured time of the model's pick / measured best - 1).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/summary_stats.h"

namespace flashtune::fit {

// One (workload, config) with both times.
struct ScoredPoint {
  std::string workload, config, variant;
  double measured_s = 0, predicted_s = 0;
  int smem_bytes = 0;  // per block: breaks ties between equal predictions (model::predicted_before)
  // Whether this is the model's choice over `o` (model/rank.h: one order for every pick).
  bool picked_before(const ScoredPoint& o) const;
};

struct AccuracyMetrics {
  int points = 0, workloads = 0;
  double mape = 0, median_ape = 0, max_ape = 0;               // percent
  double median_spearman = 0, min_spearman = 0;  // over workloads with >= 3 configs; NaN if none
  double median_regret = 0, max_regret = 0;                   // percent
  std::string worst_ape_point, worst_regret_workload;         // for the reader's next question
};

// Spearman's rank correlation, ties given their mean rank. NaN when fewer than 2 values or a
// constant input.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

using model::median;  // model/summary_stats.h

// The points of each workload, workloads in first-seen order.
std::vector<std::pair<std::string, std::vector<const ScoredPoint*>>> group_by_workload(
    const std::vector<ScoredPoint>& points);

// Per workload (first-seen order): the model's pick's measured time over the measured best, minus 1.
struct WorkloadRegret {
  std::string workload, pick, best;
  double regret = 0;  // fraction
  double spearman = 0;
  int configs = 0;
};
std::vector<WorkloadRegret> per_workload(const std::vector<ScoredPoint>& points);

AccuracyMetrics score(const std::vector<ScoredPoint>& points);

}  // namespace flashtune::fit
