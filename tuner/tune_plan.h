// Which (workload, config) pairs a tune measures, in the order it measures them: workload by
// workload (so the inputs and the reference are prepared once per workload), configs in registry
// order (exhaustive) or best-predicted first (model --top-k K). Host-only; the ranking calls the
// mechanistic model (model/predict.h) on the GPU's spec sheet.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/traits/tile_config.h"
#include "model/gpu_spec.h"
#include "model/profile.h"
#include "profile/profile.h"
#include "profile/workload_set.h"

namespace flashtune {

// A workload nothing can run, a bad strategy: one line, e.g.
// "t99: no compiled config implements d=48 (compiled d: 32, 64, 128)".
class PlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class TuneStrategy { Exhaustive, Model };
// "exhaustive" | "model"; throws PlanError("unknown strategy 'x' (known: exhaustive, model)").
TuneStrategy parse_strategy(const std::string& name);
const char* strategy_name(TuneStrategy s);

struct PlanOptions {
  TuneStrategy strategy = TuneStrategy::Exhaustive;
  int top_k = 0;                        // model: measure the K best-predicted configs per workload
  const model::GpuSpec* gpu = nullptr;  // model: the spec the ranking predicts for
  model::ModelProfile profile;          // model: the profile's fitted coefficients and registers (or defaults)
  // Which configs are planned at all: Fp32 (default) only the fp32-accurate ones (every SIMT variant
  // and mma_3xtf32), Tf32 also mma_1xtf32 (config_select.h's precision_admits).
  Precision precision = Precision::Fp32;
};

struct PlannedPair {
  std::size_t workload = 0;  // index into TunePlan::workloads
  TileConfig config;
  double predicted_ms = 0;   // model strategy only
};

struct TunePlan {
  TuneStrategy strategy = TuneStrategy::Exhaustive;
  std::vector<NamedWorkload> workloads;
  std::vector<PlannedPair> pairs;  // grouped by workload, in plan order
};

// Only the configs options.precision admits are planned. Throws PlanError for a workload with no
// such config of its d, for --top-k < 1 with the model strategy, or when the model strategy has no
// GPU spec.
TunePlan make_plan(const std::vector<NamedWorkload>& workloads, const std::vector<TileConfig>& configs,
                   const PlanOptions& options);

// The spec of a GPU (its configs/gpus stem) for the model strategy or shard balance; nullopt when
// the data folder has none.
std::optional<model::GpuSpec> tune_spec(const std::string& spec_name);

// The configs of `configs` a workload could use (same d and dtype, not refused by
// model::config_rejection), in order.
std::vector<TileConfig> configs_for(const Workload& w, const std::vector<TileConfig>& configs);

// The plan's pairs a profile lacks, and its pairs the plan does not have ("workload config" each).
struct PlanCoverage {
  std::size_t planned = 0, present = 0;
  std::vector<std::string> missing, extra;
};
PlanCoverage plan_coverage(const Profile& p, const TunePlan& plan);

}  // namespace flashtune
