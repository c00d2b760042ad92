#include "plots/accuracy.h"

#include <algorithm>
#include <cmath>

#include "model/summary_stats.h"

namespace flashtune::plots {

AccuracySummary summarize_accuracy(const std::vector<double>& predicted, const std::vector<double>& measured) {
  std::vector<double> ape;
  const std::size_t n = std::min(predicted.size(), measured.size());
  for (std::size_t i = 0; i < n; ++i)
    if (measured[i] > 0 && std::isfinite(predicted[i])) ape.push_back(model::ape_percent(predicted[i], measured[i]));
  const model::ApeSummary a = model::summarize_ape(ape);
  AccuracySummary s;
  s.n = a.n;
  s.mape = a.mape;
  s.median_ape = a.median_ape;
  s.max_ape = a.max_ape;
  s.within_10 = static_cast<int>(std::count_if(ape.begin(), ape.end(), [](double e) { return e <= 10.0; }));
  return s;
}

}  // namespace flashtune::plots
