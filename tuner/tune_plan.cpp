#include "tuner/tune_plan.h"

#include <algorithm>
#include <cstddef>
#include <set>
#include <utility>

#include "model/config_catalog.h"
#include "model/rank.h"
#include "tuner/config_select.h"

namespace flashtune {

TuneStrategy parse_strategy(const std::string& name) {
  if (name == "exhaustive") return TuneStrategy::Exhaustive;
  if (name == "model") return TuneStrategy::Model;
  throw PlanError("unknown strategy '" + name + "' (known: exhaustive, model)");
}

const char* strategy_name(TuneStrategy s) { return s == TuneStrategy::Model ? "model" : "exhaustive"; }

std::vector<TileConfig> configs_for(const Workload& w, const std::vector<TileConfig>& configs) {
  // The workload's d and dtype, less what the config's own shape rule refuses (a decode config for
  // N > 64 query rows): measuring it would only record the same refusal in every profile.
  std::vector<TileConfig> out;
  for (const TileConfig& c : configs)
    if (c.d == w.d && c.dtype == w.dtype && !model::config_rejection(c, w)) out.push_back(c);
  return out;
}

namespace {

// The head dimensions the configs of element type t cover.
std::string compiled_dims(const std::vector<TileConfig>& configs, DType t) {
  std::vector<int> dims;
  for (const TileConfig& c : configs)
    if (c.dtype == t && std::find(dims.begin(), dims.end(), c.d) == dims.end()) dims.push_back(c.d);
  std::sort(dims.begin(), dims.end());
  std::string s;
  for (int d : dims) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return s.empty() ? "none" : s;
}

}  // namespace

TunePlan make_plan(const std::vector<NamedWorkload>& workloads, const std::vector<TileConfig>& configs,
                   const PlanOptions& options) {
  if (options.strategy == TuneStrategy::Model) {
    if (options.top_k < 1) throw PlanError("top-k=" + std::to_string(options.top_k) + ": must be >= 1");
    if (!options.gpu) throw PlanError("the model strategy needs a GPU spec (configs/gpus)");
  }
  TunePlan plan;
  plan.strategy = options.strategy;
  plan.workloads = workloads;
  std::vector<TileConfig> admitted;
  for (const TileConfig& c : configs)
    if (precision_admits(options.precision, c.variant)) admitted.push_back(c);
  model::ConfigCatalog catalog;
  for (std::size_t wi = 0; wi < workloads.size(); ++wi) {
    const NamedWorkload& nw = workloads[wi];
    const std::vector<TileConfig> mine = configs_for(nw.workload, admitted);
    if (mine.empty())
      throw PlanError(nw.name + ": no compiled config implements d=" + std::to_string(nw.workload.d) +
                      (nw.workload.dtype != DType::Fp32 ? std::string(" in ") + dtype_name(nw.workload.dtype) : "") +
                      " (compiled d: " + compiled_dims(admitted, nw.workload.dtype) + ")");
    if (options.strategy == TuneStrategy::Exhaustive) {
      for (const TileConfig& c : mine) plan.pairs.push_back({wi, c, 0});
      continue;
    }
    // The same ranking as `predict --all` and the dispatcher; configs the model says cannot run
    // on this GPU are not candidates.
    const model::Ranking ranking = model::rank_configs(nw.workload, mine, *options.gpu, options.profile, catalog);
    if (ranking.ranked.empty())
      throw PlanError(nw.name + ": the model finds no config of d=" + std::to_string(nw.workload.d) + " that runs on " +
                      options.gpu->name);
    const std::size_t k = std::min<std::size_t>(ranking.ranked.size(), static_cast<std::size_t>(options.top_k));
    for (std::size_t i = 0; i < k; ++i)
      plan.pairs.push_back({wi, ranking.ranked[i].config, ranking.ranked[i].prediction.time_s * 1e3});
  }
  return plan;
}

PlanCoverage plan_coverage(const Profile& p, const TunePlan& plan) {
  PlanCoverage c;
  const DoneIndex have(p);
  std::set<std::pair<std::string, std::string>> planned;
  for (const PlannedPair& pp : plan.pairs) {
    const std::string& w = plan.workloads[pp.workload].name;
    const std::string config = pp.config.name();
    if (!planned.insert({w, config}).second) continue;
    if (have.contains(w, config))
      ++c.present;
    else
      c.missing.push_back(w + " " + config);
  }
  c.planned = planned.size();
  for (const Measurement& m : p.measurements)
    if (!planned.count({m.workload, m.config})) c.extra.push_back(m.workload + " " + m.config);
  return c;
}

std::optional<model::GpuSpec> tune_spec(const std::string& spec_name) {
  try {
    return model::find_gpu_spec(spec_name, model::default_gpu_spec_dir());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace flashtune
