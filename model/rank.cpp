#include "model/rank.h"

#include <algorithm>

namespace flashtune::model {

bool predicted_before(double time_a, int smem_bytes_a, double time_b, int smem_bytes_b) {
  if (time_a != time_b) return time_a < time_b;
  return smem_bytes_a < smem_bytes_b;
}

Ranking rank_configs(const Workload& w, const std::vector<TileConfig>& configs, const GpuSpec& gpu,
                     const ModelProfile& profile, ConfigCatalog& catalog) {
  Ranking r;
  for (const TileConfig& c : configs) {
    // A variant the GPU has no instructions for (tensor cores below cc 8.0) is left out of the
    // ranking and listed as refused, before predict() would throw for it.
    if (auto why = instruction_set_refusal(c, gpu)) {
      r.refused.push_back({c, *why});
      continue;
    }
    // A config that does not serve the workload (config_rejection: the persistent grid under
    // causal, a decode config past its query rows): refused, as the kernel refuses it.
    if (auto why = config_rejection(c, w)) {
      r.refused.push_back({c, *why});
      continue;
    }
    RankedConfig row;
    row.config = c;
    row.geometry = &catalog.analysis(c);
    row.prediction = predict(w, *row.geometry, gpu, profile.coefficients, profile.registers_for(c.name()));
    if (!row.prediction.refusal.empty())
      r.refused.push_back({c, row.prediction.refusal});
    else
      r.ranked.push_back(std::move(row));
  }
  std::stable_sort(r.ranked.begin(), r.ranked.end(), [](const RankedConfig& a, const RankedConfig& b) {
    return predicted_before(a.prediction.time_s, a.geometry->smem_bytes, b.prediction.time_s, b.geometry->smem_bytes);
  });
  return r;
}

}  // namespace flashtune::model
