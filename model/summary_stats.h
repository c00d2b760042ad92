// The summary statistics the model's checks and reports share (fit, plots, check-counters): the
// median and the absolute percentage errors of predictions against measurements.
#pragma once

#include <vector>

namespace flashtune::model {

// Mean of the two middle values for an even count; 0 for empty input.
double median(std::vector<double> v);

// 100 |predicted - measured| / measured.
inline double ape_percent(double predicted, double measured) {
  return 100.0 * (predicted > measured ? predicted - measured : measured - predicted) / measured;
}

struct ApeSummary {
  int n = 0;
  double mape = 0, median_ape = 0, max_ape = 0;  // percent
};

// Mean, median and largest of absolute percentage errors (zeros for none).
ApeSummary summarize_ape(const std::vector<double>& ape);

}  // namespace flashtune::model
