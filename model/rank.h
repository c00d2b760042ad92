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

// The model's order of two configs for one workload: the faster prediction first; on a tie, the
// smaller shared-memory footprint per block, then the input order. Ties are real: a padded and a
// swizzled tile do the same work with the same conflict-free wavefronts, so the model predicts
// them equal. Measured they are not: on the H200 swizzled beat padded on 73 of 74 mma_3xtf32
// grid pairs and 48 of 48 unseen ones (2.5-7.7% apart; padded moved 1.3-1.6x the L2 tag bytes
// for the same global addresses, a difference the model does not derive), and on 74 of 140
// and 42 of 88 regtile_2d pairs (within 3%): the packed layout is the better bet.
// Every "model's pick" (rank_configs, the fit's top-1 and top-K) orders by this.
bool predicted_before(double time_a, int smem_bytes_a, double time_b, int smem_bytes_b);

struct Ranking {
  std::vector<RankedConfig> ranked;    // by predicted_before, fastest first
  // Configs the model says cannot run on this GPU, input order: no block fits an SM, or the GPU
  // lacks the variant's instructions (instruction_set_refusal: tensor cores below cc 8.0).
  std::vector<RefusedConfig> refused;
};

// Precondition: every config is one its variant accepts (catalog.analysis throws otherwise).
// An empty profile (no path) means the default coefficients and the traits' register estimates.
Ranking rank_configs(const Workload& w, const std::vector<TileConfig>& configs, const GpuSpec& gpu,
                     const ModelProfile& profile, ConfigCatalog& catalog);

}  // namespace flashtune::model
