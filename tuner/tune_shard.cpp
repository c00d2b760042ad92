#include "tuner/tune_shard.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "model/config_catalog.h"
#include "model/rank.h"

namespace flashtune {
namespace {

constexpr double kFixedPairCostS = 0.25;
constexpr double kLaunchesPerPair = 20;
constexpr double kFallbackFlopsPerS = 10e12;

double fallback_cost_s(const Workload& w) {
  return kFixedPairCostS + kLaunchesPerPair * w.nominal_flops() / kFallbackFlopsPerS;
}

}  // namespace

Shard parse_shard(const std::string& text) {
  int i = -1, n = -1;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d/%d%c", &i, &n, &tail) != 2 || n < 1 || i < 0 || i >= n ||
      text.find_first_not_of("0123456789/") != std::string::npos)
    throw PlanError("shard '" + text + "': want I/N with 0 <= I < N, e.g. 0/4");
  return {i, n};
}

std::vector<double> tune_cost_s(const TunePlan& plan, const model::GpuSpec* spec) {
  std::vector<double> cost(plan.pairs.size());
  model::ConfigCatalog catalog;
  std::size_t i = 0;
  while (i < plan.pairs.size()) {
    // One ranking per workload's run of pairs (the plan groups them).
    const std::size_t wi = plan.pairs[i].workload;
    const Workload& w = plan.workloads[wi].workload;
    std::size_t end = i;
    std::vector<TileConfig> configs;
    for (; end < plan.pairs.size() && plan.pairs[end].workload == wi; ++end) configs.push_back(plan.pairs[end].config);
    std::map<std::string, double> predicted_s;
    if (spec) {
      for (const model::RankedConfig& r : model::rank_configs(w, configs, *spec, {}, catalog).ranked)
        predicted_s[r.config.name()] = r.prediction.time_s;
    }
    for (std::size_t k = i; k < end; ++k) {
      const auto it = predicted_s.find(plan.pairs[k].config.name());
      cost[k] = it == predicted_s.end() ? fallback_cost_s(w) : kFixedPairCostS + kLaunchesPerPair * it->second;
    }
    i = end;
  }
  return cost;
}

std::vector<int> shard_owners(const std::vector<double>& cost, int count) {
  double total = 0;
  for (double c : cost) total += c;
  // A pair belongs to the shard its cost's midpoint falls in, on the line of cumulated cost.
  std::vector<int> owners(cost.size(), 0);
  double before = 0;
  for (std::size_t k = 0; k < cost.size(); ++k) {
    const double mid = before + 0.5 * cost[k];
    before += cost[k];
    if (total > 0) owners[k] = std::min(count - 1, static_cast<int>(mid / total * count));
  }
  return owners;
}

TunePlan shard_of(const TunePlan& plan, const std::vector<int>& owners, int index) {
  TunePlan out;
  out.strategy = plan.strategy;
  out.workloads = plan.workloads;
  for (std::size_t k = 0; k < plan.pairs.size(); ++k)
    if (owners[k] == index) out.pairs.push_back(plan.pairs[k]);
  return out;
}

}  // namespace flashtune
