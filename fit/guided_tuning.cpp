#include "fit/guided_tuning.h"

#include <algorithm>
#include <cmath>

namespace flashtune::fit {

std::vector<TopK> default_top_k() {
  return {{"K=1", 1, 0}, {"K=3", 3, 0}, {"K=5", 5, 0}, {"top 5%", 0, 0.05}, {"top 10%", 0, 0.10}};
}

std::vector<GuidedResult> evaluate_guided(const std::vector<ScoredPoint>& points, const std::vector<TopK>& rules) {
  const auto groups = group_by_workload(points);
  std::vector<GuidedResult> out;
  for (const TopK& rule : rules) {
    GuidedResult g;
    g.rule = rule;
    std::vector<double> regrets;
    double share = 0;
    for (const auto& [name, group] : groups) {
      std::vector<const ScoredPoint*> v = group;  // reordered below
      const int n = int(v.size());
      const int k = std::min(n, rule.k > 0 ? rule.k : std::max(1, int(std::ceil(rule.fraction * n))));
      double best = v[0]->measured_s;
      for (const ScoredPoint* s : v) best = std::min(best, s->measured_s);
      std::partial_sort(v.begin(), v.begin() + k, v.end(),
                        [](const ScoredPoint* a, const ScoredPoint* b) { return a->picked_before(*b); });
      double found = v[0]->measured_s;
      for (int i = 0; i < k; ++i) found = std::min(found, v[std::size_t(i)]->measured_s);
      const double regret = 100.0 * (found / best - 1.0);
      regrets.push_back(regret);
      if (regret <= 2.0) ++g.within_2pct;
      if (regret >= g.max_regret) {
        g.max_regret = regret;
        g.worst_workload = name;
      }
      share += double(k) / n;
    }
    g.workloads = int(groups.size());
    g.share_measured = groups.empty() ? 0 : share / double(groups.size());
    g.median_regret = median(regrets);
    out.push_back(g);
  }
  return out;
}

}  // namespace flashtune::fit
