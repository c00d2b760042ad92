// `flashtune predict`: the mechanistic model's time for one config, or every compiled config
// ranked (--all), on a GPU described by its spec sheet; no GPU needed. The coefficients and
// compiled register counts come from --profile, else from the GPU's shipped profile when it holds
// fitted coefficients (default_model_profile), else (or with --spec-only) the model's
// defaults; the first line (and the JSON's "profile") names the one used. Beside each prediction
// the two baselines (pure roofline, the seed model). Bad input: one line naming the value, field
// or file, exit code 2.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_options.h"
#include "commands.h"
#include "exit_codes.h"
#include "profile/workload_set.h"  // describe_workload
#include "model/baselines.h"
#include "model/config_catalog.h"
#include "model/gpu_spec.h"
#include "model/predict.h"
#include "model/prediction_json.h"
#include "model/profile.h"
#include "profile/model_profile.h"
#include "model/rank.h"
#include "model/workload_limits.h"
#include "tuner/config_select.h"

namespace flashtune::app {
namespace {

using model::Prediction;

struct PredictOptions {
  std::string gpu, spec_file, profile_file;
  WorkloadCliOptions workload;    // --B --N --d (required) --causal --scale
  ConfigFilterCliOptions filter;  // --variant --Br --Bc --layout --precision
  bool all = false, json = false, verbose = false;
  bool spec_only = false;  // --spec-only: the spec sheet and default coefficients, no profile
};

// Bad input: the one line printed before exiting with kExitUsage.
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

Workload workload_of(const PredictOptions& o) {
  Workload w;
  // CLI11 requires the three dimensions.
  w.B = o.workload.B.value_or(0);
  w.N = o.workload.N.value_or(0);
  w.d = o.workload.d.value_or(0);
  w.causal = o.workload.causal;
  try {
    w.dtype = dtype_of(o.workload);
    if (const std::optional<float> scale = scale_of(o.workload)) w.scale = *scale;
    apply_heads_and_keys(o.workload, w);
  } catch (const UsageError& e) {
    throw BadInput(e.what());
  }
  try {
    require_compiled_head_dim(w.d, w.dtype);
  } catch (const UsageError& e) {
    throw BadInput(e.what());
  }
  // The same limits run and tune check: a workload no kernel accepts, or whose counts overflow,
  // has no time to predict.
  if (const auto why = model::workload_limit_error(w)) throw BadInput(*why);
  return w;
}

model::GpuSpec gpu_of(const PredictOptions& o) {
  try {
    if (!o.spec_file.empty()) return model::load_gpu_spec(o.spec_file);
    return model::find_gpu_spec(o.gpu, model::default_gpu_spec_dir());
  } catch (const std::runtime_error& e) {
    throw BadInput(e.what());
  }
}

// --profile, else the GPU's shipped profile with fitted coefficients, else none; none with
// --spec-only.
model::ModelProfile profile_of(const PredictOptions& o, const model::GpuSpec& gpu) {
  if (o.spec_only) return {};
  try {
    if (o.profile_file.empty()) return default_model_profile(gpu);
    return load_model_profile(o.profile_file);
  } catch (const std::runtime_error& e) {
    throw BadInput(e.what());
  }
}

// What the output says the coefficients came from: a profile without fitted coefficients leaves
// the model's defaults in place, and saying "p.json" there would claim otherwise.
std::string coefficients_source(const PredictOptions& o, const model::ModelProfile& profile,
                                const model::GpuSpec& gpu) {
  if (o.spec_only) return "defaults (--spec-only)";
  if (profile.path.empty()) return "defaults (no fitted profile shipped for " + model::spec_stem(gpu) + ")";
  if (profile.fitted_coefficients == 0) return "defaults (" + profile.path + " holds no fitted coefficients)";
  return profile.path;
}

// Coefficients fitted on one GPU describe that GPU's efficiencies; on another they mislead.
void warn_if_other_gpu(const model::ModelProfile& profile, const model::GpuSpec& gpu) {
  if (profile.path.empty() || profile.gpu_spec.empty()) return;
  const std::string stem = model::spec_stem(gpu);
  if (profile.gpu_spec != stem)
    std::fprintf(stderr, "flashtune predict: warning: %s was measured on %s (%s), predicting for %s (%s)\n",
                 profile.path.c_str(), profile.gpu_name.c_str(), profile.gpu_spec.c_str(), gpu.name.c_str(),
                 stem.c_str());
}

// The config options parsed (the variant, the layout, the precision, then the variant's precision).
ConfigRequest request_of(const PredictOptions& o) {
  try {
    return config_request_of(o.filter);
  } catch (const UsageError& e) {
    throw BadInput(e.what());
  }
}

// The configs to predict: --all -> every compiled config matching the given fields that the
// precision admits; else the one config the options name (any the variant's traits allow, compiled
// or not). A named variant the precision does not admit (mma_1xtf32 without --precision tf32) is
// refused.
std::vector<TileConfig> configs_of(const PredictOptions& o, const Workload& w) {
  const ConfigRequest r = request_of(o);
  if (o.all) {
    std::vector<TileConfig> out;
    for (const TileConfig& c : model::compiled_tile_configs())
      if (config_serves(c, w, r.precision) && (!r.variant || c.variant == *r.variant) &&
          (!r.Br || c.Br == *r.Br) && (!r.Bc || c.Bc == *r.Bc) && (!r.layout || c.layout == *r.layout))
        out.push_back(c);
    if (out.empty())
      throw BadInput("no compiled config matches d=" + std::to_string(w.d) + ", dtype " + dtype_name(w.dtype) +
                     " and the given filters");
    return out;
  }
  if (!r.variant || !r.Br || !r.Bc)
    throw BadInput("name a config (--config NAME, or --variant, --Br, --Bc [--layout]) or rank them all with --all");
  TileConfig c{*r.variant, w.d, *r.Br, *r.Bc, r.layout.value_or(Layout::Plain)};
  c.dtype = w.dtype;
  c.stages = r.stages.value_or(0);
  c.q_smem = r.q_smem.value_or(false);
  if (r.named) c = *r.named;
  if (auto why = model::config_rejection(c, w)) throw BadInput(c.name() + ": " + *why);
  return {c};
}

struct Row {
  TileConfig config;
  const model::GeometryAnalysis* geometry = nullptr;
  Prediction prediction;
  model::RooflineEstimate roofline;
  model::SeedEstimate seed;
};

std::string occupancy_text(const Prediction& p) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%dx%dw=%d (%s)", p.occupancy.blocks_per_sm, p.occupancy.warps_per_block,
                p.occupancy.warps_per_sm, model::limiter_name(p.occupancy.limiter));
  return buf;
}

void print_table(const std::vector<Row>& rows) {
  std::printf("%-4s %-34s %10s %8s %-8s %-24s %12s %11s %10s\n", "rank", "config", "time ms", "TFLOP/s", "bound",
              "blocks/SM x warps", "waves (tail)", "roofline ms", "seed ms");
  int rank = 0;
  for (const Row& r : rows) {
    const Prediction& p = r.prediction;
    char waves[32];
    std::snprintf(waves, sizeof waves, "%lld (%.2f)", p.waves.waves, p.waves.tail_fill);
    std::printf("%-4d %-34s %10.4f %8.2f %-8s %-24s %12s %11.4f %10.4g\n", ++rank, r.config.name().c_str(),
                p.time_s * 1e3, p.achieved_flops() / 1e12, model::pipe_name(p.bound), occupancy_text(p).c_str(), waves,
                r.roofline.time_s * 1e3, r.seed.time_s * 1e3);
  }
}

void print_details(const Row& r) {
  const Prediction& p = r.prediction;
  const model::Counts& n = p.counts;
  std::printf("\nper-pipe time (ms, each as if it alone bound every wave):\n ");
  for (model::Pipe q : model::kAllPipes) std::printf(" %s %.4f", model::pipe_name(q), p.pipes[q] * 1e3);
  std::printf("\n  overhead (block latency + launch) %.4f ms\n", p.overhead_s * 1e3);
  if (p.first_touch.work_share < 1.0)
    std::printf("  first touch: the heavy-first grid's first blocks, %.0f%% of the work, read %.0f%% of the DRAM bytes "
                "(every entry's K/V): time x %.3f\n",
                100.0 * p.first_touch.work_share, 100.0 * p.first_touch.dram_share, p.first_touch_factor);
  if (p.decode_splits > 0)
    std::printf("decode: %d split%s of the keys (the model's pick, the count the dispatcher launches)%s\n",
                p.decode_splits, p.decode_splits == 1 ? "" : "s",
                p.decode_splits == 1              ? ""
                : p.decode_cluster_combine ? ", merged inside their thread-block cluster"
                                           : ", merged by the combine kernel");
  std::printf("occupancy: %d threads/block, %d registers/thread (%s), %d B shared/block allocated\n",
              p.occupancy.threads_per_block, p.occupancy.registers_per_thread,
              p.registers_from_profile ? "profile" : "traits estimate", p.occupancy.smem_allocated_per_block);
  std::printf("  blocks/SM by warps %d, registers %d, shared memory %d, limit %d -> %d (%.0f%% of warps)\n",
              p.occupancy.blocks_by_warps, p.occupancy.blocks_by_registers, p.occupancy.blocks_by_smem,
              p.occupancy.blocks_by_limit, p.occupancy.blocks_per_sm, 100 * p.occupancy.fraction);
  std::printf("waves: %lld blocks, %lld per wave, %lld waves, tail %lld blocks (fill %.2f)\n", p.waves.blocks,
              p.waves.per_wave, p.waves.waves, p.waves.tail_blocks, p.waves.tail_fill);
  if (p.decode) {
    // The decode family's own terms (model/decode_model.h): its work is a stream, not tiles of S.
    const model::DecodePrediction& d = *p.decode;
    std::printf("decode time: split kernel %.4f ms (bound %s), combine %.4f ms, launch %.4f ms\n", d.split_kernel_s * 1e3,
                d.bound.c_str(), d.combine_s * 1e3, d.launch_s * 1e3);
    std::printf("  one block streams %.1f GB/s: 4 warps x (K + V tile) per %.0f-cycle tile", d.stream_bytes_per_s_per_block / 1e9,
                d.tile_cycles);
    if (d.tile_stretch > 0)
      std::printf(" (%.0f warp instructions: traits %.0f + compiled %.0f, x %.2f stretch)",
                  d.tile_traits_instructions + d.tile_compiled_instructions, d.tile_traits_instructions,
                  d.tile_compiled_instructions, d.tile_stretch);
    std::printf("\n  bytes: DRAM %.4g (K/V %.4g, Q + O %.4g, dirty L2 written back %.4g), L2 re-reads %.4g, workspace %.4g\n",
                d.dram_bytes, d.kv_bytes, d.qo_bytes, d.writeback_bytes, d.l2_bytes, d.workspace_bytes);
    std::printf("baselines: roofline %.4f ms (compute %.4f, DRAM %.4f)\n", r.roofline.time_s * 1e3,
                r.roofline.compute_s * 1e3, r.roofline.dram_s * 1e3);
    return;
  }
  std::printf("work: %lld K/V tile visits (%.1f per block), useful %.4g FLOP, executed %.4g FLOP, %.4g exp\n",
              n.tiles.visits, n.tiles.mean_tiles_per_block, n.useful_flops, n.executed_flops, n.exp);
  std::printf("bytes: L2 %.4g (Q %.4g, K/V %.4g, O %.4g), DRAM %.4g (compulsory %.4g, K/V re-read hit %.2f)\n",
              n.l2_bytes(), n.l2_q_bytes, n.l2_kv_bytes, n.l2_o_bytes, p.dram.bytes, n.dram_compulsory_bytes,
              p.dram.reread_hit_fraction);
  std::printf("operational intensity (FLOP/byte): DRAM %.1f, L2 %.1f, shared %.2f\n", p.intensity_dram,
              p.intensity_l2, p.intensity_shared);
  std::printf("shared-memory sites:\n  %-24s %-10s %-11s %5s %14s %14s %9s\n", "site", "op", "scope", "width",
              "requests", "wavefronts", "conflict");
  for (const model::SiteAnalysis& s : r.geometry->sites) {
    const double units = s.scope == SiteScope::PerKvTile ? double(n.tiles.visits) : double(n.tiles.blocks);
    std::printf("  %-24s %-10s %-11s %4dB %14.4g %14.4g %8.2fx\n", s.name.c_str(), smem_op_name(s.op),
                s.scope == SiteScope::PerKvTile ? "per K/V" : "per block",
                s.bytes_per_lane, s.requests * units, s.wavefronts * units, s.conflict_degree());
  }
  std::printf("baselines: roofline %.4f ms (compute %.4f, DRAM %.4f); seed model %.4g ms (bound %s)\n",
              r.roofline.time_s * 1e3, r.roofline.compute_s * 1e3, r.roofline.dram_s * 1e3, r.seed.time_s * 1e3,
              r.seed.bound);
}

int predict_command(const PredictOptions& o) {
  std::vector<Row> rows;
  std::vector<std::pair<TileConfig, std::string>> refused;
  model::GpuSpec gpu;
  model::ModelProfile profile;
  Workload w;
  model::ConfigCatalog catalog;
  try {
    // A bad --precision is named before anything else is read.
    try {
      parse_precision_or_throw(o.filter.precision);
    } catch (const UsageError& e) {
      throw BadInput(e.what());
    }
    w = workload_of(o);
    gpu = gpu_of(o);
    profile = profile_of(o, gpu);
    warn_if_other_gpu(profile, gpu);
    model::Ranking ranking = model::rank_configs(w, configs_of(o, w), gpu, profile, catalog);
    if (!o.all && !ranking.refused.empty())
      throw BadInput(ranking.refused.front().config.name() + " cannot run on " + gpu.name + ": " +
                     ranking.refused.front().reason);
    for (const model::RefusedConfig& c : ranking.refused) refused.emplace_back(c.config, c.reason);
    for (model::RankedConfig& ranked : ranking.ranked) {
      Row r;
      r.config = ranked.config;
      r.geometry = ranked.geometry;
      r.prediction = std::move(ranked.prediction);
      r.roofline = model::roofline_time(w, gpu);
      r.seed = model::seed_model_time(w, r.config, gpu);
      rows.push_back(std::move(r));
    }
  } catch (const BadInput& e) {
    std::fprintf(stderr, "flashtune predict: %s\n", e.what());
    return kExitUsage;
  }

  // Nothing can run it here (bf16 on a GPU without bf16 tensor cores, say): one line and exit 4,
  // naming the first config's reason, rather than an empty table.
  if (rows.empty() && !refused.empty()) {
    std::fprintf(stderr, "flashtune predict: no %s config can run %s on %s: %s: %s\n", dtype_name(w.dtype),
                 describe_workload(w).c_str(), gpu.name.c_str(), refused.front().first.name().c_str(),
                 refused.front().second.c_str());
    return kExitUnsupported;
  }

  if (o.json) {
    nlohmann::json out = {{"schema_version", 1},
                          {"gpu", model::gpu_json(gpu)},
                          {"workload", model::workload_json(w)},
                          {"coefficients", model::coefficients_json(profile.coefficients)},
                          {"coefficients_from", coefficients_source(o, profile, gpu)},
                          {"profile", profile.path.empty() ? nlohmann::json(nullptr) : nlohmann::json(profile.path)},
                          {"precision", o.filter.precision}};
    nlohmann::json results = nlohmann::json::array();
    for (const Row& r : rows) {
      nlohmann::json j = model::prediction_json(r.prediction, *r.geometry, r.roofline, r.seed);
      j["precision"] = precision_name(variant_precision(r.config.variant));
      results.push_back(std::move(j));
    }
    out["results"] = results;
    nlohmann::json ref = nlohmann::json::array();
    for (const auto& [c, why] : refused) ref.push_back({{"config", c.name()}, {"reason", why}});
    out["refused"] = ref;
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }

  // The element type, and for fp32 the accuracy asked for (it only filters fp32 configs).
  const std::string element = w.dtype == DType::Fp32 ? "fp32, precision " + o.filter.precision : dtype_name(w.dtype);
  std::printf("%s (%s), B=%lld N=%lld%s d=%d %s, %s, coefficients: %s\n", gpu.name.c_str(), gpu.file.c_str(), w.B,
              w.N, inference_suffix(w).c_str(), w.d, w.causal ? "causal" : "non-causal", element.c_str(),
              coefficients_source(o, profile, gpu).c_str());
  if (rows.empty()) {
    std::printf("no config can run this workload on %s\n", gpu.name.c_str());
  } else {
    print_table(rows);
    if (!o.all) print_details(rows.front());
  }
  if (!refused.empty()) {
    if (o.verbose) {
      std::printf("refused (this GPU or this workload):\n");
      for (const auto& [c, why] : refused) std::printf("  %-34s %s\n", c.name().c_str(), why.c_str());
    } else {
      std::printf("%zu config(s) refused on this GPU or for this workload (--verbose lists them)\n", refused.size());
    }
  }
  return rows.empty() ? kExitUnsupported : kExitOk;
}

}  // namespace

void register_predict(CLI::App& app) {
  auto opts = std::make_shared<PredictOptions>();
  CLI::App* cmd = app.add_subcommand("predict", "Predict kernel time from the model (no GPU needed)");
  auto* gpu = cmd->add_option("--gpu", opts->gpu, "GPU spec by name or alias (configs/gpus/NAME.json, e.g. h200)");
  auto* spec = cmd->add_option("--spec", opts->spec_file, "GPU spec file (JSON, configs/gpus schema)");
  gpu->excludes(spec);
  spec->excludes(gpu);
  add_workload_options(cmd, opts->workload, {/*dims_required=*/true, /*scale=*/true, /*memory_layout=*/false});
  add_config_filter_options(cmd, opts->filter, "--all and the named config");
  cmd->add_flag("--all", opts->all, "Rank every compiled config of this d (the config options filter)");
  auto* profile = cmd->add_option("--profile", opts->profile_file,
                                   "Profile JSON with fitted \"coefficients\" (and kernel registers); default: the "
                                   "GPU's shipped profiles/<spec>.json when it holds fitted coefficients");
  auto* spec_only = cmd->add_flag("--spec-only", opts->spec_only,
                                  "The spec sheet alone: default coefficients, no profile (not even the shipped one)");
  profile->excludes(spec_only);
  spec_only->excludes(profile);
  cmd->add_flag("--json", opts->json, "Print JSON");
  cmd->add_flag("--verbose", opts->verbose, "List the configs refused on this GPU or for this workload, with the reason");
  cmd->callback([opts, gpu, spec]() {
    set_action([opts, gpu, spec]() {
      if (gpu->count() == 0 && spec->count() == 0) {
        std::fprintf(stderr, "flashtune predict: give --gpu NAME or --spec FILE\n");
        return kExitUsage;
      }
      return predict_command(*opts);
    });
  });
}

}  // namespace flashtune::app
