// Model-guided tuning, evaluated against the exhaustive sweep: per workload, measure only the
// model's K best-ranked configs and keep the fastest of them. Its regret is that config's measured
// time over the exhaustive best, minus 1; the cost is K over the configs of the workload.
// Fed with held-out predictions (leave-one-workload-out), this is what a tune of an unseen
// workload with `--strategy model --top-k K` would have found.
#pragma once

#include <string>
#include <vector>

#include "fit/fit_metrics.h"

namespace flashtune::fit {

struct TopK {
  std::string label;  // "K=3", "top 5%"
  int k = 0;          // fixed K; 0 when `fraction` is used
  double fraction = 0;  // share of each workload's configs (rounded up, at least 1)
};

// K = 1, 3, 5, the top 5% and the top 10%.
std::vector<TopK> default_top_k();

struct GuidedResult {
  TopK rule;
  double share_measured = 0;    // mean over workloads of K / configs
  double median_regret = 0, max_regret = 0;  // percent
  int workloads = 0, within_2pct = 0;        // workloads whose top K hold a config within 2% of the best
  std::string worst_workload;
};

std::vector<GuidedResult> evaluate_guided(const std::vector<ScoredPoint>& points, const std::vector<TopK>& rules);

}  // namespace flashtune::fit
