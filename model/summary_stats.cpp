#include "model/summary_stats.h"

#include <algorithm>
#include <numeric>

namespace flashtune::model {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

ApeSummary summarize_ape(const std::vector<double>& ape) {
  ApeSummary s;
  s.n = static_cast<int>(ape.size());
  if (ape.empty()) return s;
  s.mape = std::accumulate(ape.begin(), ape.end(), 0.0) / double(ape.size());
  s.median_ape = median(ape);
  s.max_ape = *std::max_element(ape.begin(), ape.end());
  return s;
}

}  // namespace flashtune::model
