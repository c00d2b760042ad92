// The model's ranking of kernel configs for one workload on one GPU: each config predicted with a
// profile's fitted coefficients and compiled register counts, fastest first. One function for
// every caller that must agree on "the model's pick": `flashtune predict --all` and the
// dispatcher's model choice (dispatch/dispatcher.h).
#pragma once

#include <string>
#include <vector>

#include "kernels/traits/tile_config.h"
#include "model/config_catalog.h"
#include "model/gpu_spec.h"
#include "model/predict.h"
#include "model/profile.h"

namespace flashtune::model {

struct RankedConfig {
  TileConfig config;
  const GeometryAnalysis* geometry = nullptr;  // owned by the catalog given to rank_configs
  Prediction prediction;
};

struct RefusedConfig {
  TileConfig config;
  std::string reason;  // the model's refusal (e.g. no block fits an SM), one line
};

struct Ranking {
  std::vector<RankedConfig> ranked;    // by predicted time, fastest first; ties keep the input order
  // Configs the model says cannot run on this GPU, input order: no block fits an SM, or the GPU
  // lacks the variant's instructions (instruction_set_refusal: tensor cores below cc 8.0).
  std::vector<RefusedConfig> refused;
};

// Precondition: every config is one its variant accepts (catalog.analysis throws otherwise).
// An empty profile (no path) means the default coefficients and the traits' register estimates.
Ranking rank_configs(const Workload& w, const std::vector<TileConfig>& configs, const GpuSpec& gpu,
                     const ModelProfile& profile, ConfigCatalog& catalog);

}  // namespace flashtune::model
