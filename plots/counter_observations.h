// A profile's measurements as the counter check reads them (model/counter_check.h): the ok
// measurements that carry CUPTI counters. Header-only, shared by `flashtune check-counters` and
// its CI test.
#pragma once

#include <vector>

#include "model/counter_check.h"
#include "plots/plot_profile.h"

namespace flashtune::plots {

inline std::vector<model::CounterObservation> counter_observations(const PlotProfile& p) {
  std::vector<model::CounterObservation> out;
  for (const ProfileMeasurement& m : p.ok)
    if (!m.counters.empty()) out.push_back({m.workload_name, m.workload, m.config, m.registers, m.counters});
  return out;
}

}  // namespace flashtune::plots
