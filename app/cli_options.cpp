#include "cli_options.h"
#include "model/number_text.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>

#include "tuner/timing_harness.h"

namespace flashtune::app {

// ---- workload -------------------------------------------------------------------------------

void add_workload_options(CLI::App* cmd, WorkloadCliOptions& o, WorkloadOptionSet which) {
  CLI::Option* dims[] = {cmd->add_option("--B", o.B, "Batch (with --heads 1, the default: batch x heads entries)"),
                         cmd->add_option("--N", o.N, "Query rows per head (the sequence length)"),
                         cmd->add_option("--d", o.d, "Head dimension")};
  if (which.dims_required)
    for (CLI::Option* opt : dims) opt->required();
  cmd->add_flag("--causal", o.causal, "Causal mask, bottom-right aligned when --kv-len exceeds --N (row i sees keys "
                                      "j <= i + kv-len - N)");
  cmd->add_option("--heads", o.heads, "Query heads per batch entry: B x heads entries (default 1)");
  cmd->add_option("--kv-heads", o.kv_heads,
                  "K/V heads per batch entry, dividing --heads (grouped-query attention; default: --heads)");
  cmd->add_option("--kv-len", o.kv_len, "Keys per head (the KV cache's length; default: --N)");
  cmd->add_option("--dtype", o.dtype, dtype_help("Element type of Q, K, V and O") + " (default fp32)");
  if (which.scale) cmd->add_option("--scale", o.scale, "Softmax scale (default 1/sqrt(d))");
  if (which.memory_layout) {
    cmd->add_option("--qkv-layout", o.qkv_layout,
                    "Memory layout of Q, K, V and O: bnd ([B, N, d], default), bhnd ([batch, heads, N, d]) or bnhd "
                    "([batch, N, heads, d], a fused projection's view); the inputs are copied into it before timing");
  }
}

std::string dtype_help(const std::string& what) {
  return what + ": " + known_dtypes() + "; accumulation and softmax statistics are fp32 in every kernel";
}

DType dtype_of(const WorkloadCliOptions& o) {
  if (const auto t = parse_dtype(o.dtype)) return *t;
  throw UsageError(unknown_dtype_message(o.dtype));
}

std::optional<DType> dtype_filter_of(const std::string& dtype) {
  if (dtype.empty()) return std::nullopt;
  if (const auto t = parse_dtype(dtype)) return *t;
  throw UsageError(unknown_dtype_message(dtype));
}

std::optional<float> scale_of(const WorkloadCliOptions& o) {
  if (o.scale && (!(*o.scale > 0.0f) || !std::isfinite(*o.scale)))
    throw UsageError("scale=" + number_text(*o.scale) + ": must be a positive finite number");
  return o.scale;
}

TensorLayout memory_layout_of(const WorkloadCliOptions& o) {
  const std::optional<TensorLayout> qkv = parse_tensor_layout(o.qkv_layout);
  if (!qkv) throw UsageError("qkv-layout=" + o.qkv_layout + ": must be one of bnd, bhnd, bnhd");
  return *qkv;
}

void apply_heads_and_keys(const WorkloadCliOptions& o, Workload& w) {
  using std::to_string;
  if (o.heads < 1) throw UsageError("heads=" + to_string(o.heads) + ": must be >= 1");
  const long long kv_heads = o.kv_heads.value_or(o.heads);
  if (kv_heads < 1) throw UsageError("kv-heads=" + to_string(kv_heads) + ": must be >= 1");
  if (o.heads % kv_heads != 0)
    throw UsageError("heads=" + to_string(o.heads) + " is not a multiple of kv-heads=" + to_string(kv_heads) +
                     " (each K/V head serves the same number of query heads)");
  if (o.kv_len && *o.kv_len < 1) throw UsageError("kv-len=" + to_string(*o.kv_len) + ": must be >= 1");
  if (w.B > 0 && o.heads > LLONG_MAX / w.B)
    throw UsageError("B=" + to_string(w.B) + " x heads=" + to_string(o.heads) + " overflows 64 bits");
  if (w.B > 0) w.B *= o.heads;
  w.kv_group = static_cast<int>(std::min<long long>(o.heads / kv_heads, INT_MAX));
  if (o.kv_len) w.kv_len = *o.kv_len;
}

// ---- config filter --------------------------------------------------------------------------

void add_precision_option(CLI::App* cmd, std::string& precision, const std::string& what_it_filters) {
  cmd->add_option("--precision", precision,
                  "Accuracy asked for: fp32 (default: the fp32-accurate configs only, SIMT and mma_3xtf32) or tf32 "
                  "(mma_1xtf32 too, rel L2 up to 1e-2); filters " + what_it_filters);
}

void add_config_filter_options(CLI::App* cmd, ConfigFilterCliOptions& o, const std::string& what_all_means) {
  std::string layouts;
  for (Layout l : kAllLayouts) layouts += (layouts.empty() ? "" : ", ") + std::string(layout_name(l));
  cmd->add_option("--config", o.config,
                  "One config by its full name, e.g. regtile_2d/d64/br64xbc64/swizzled (flashtune list); "
                  "excludes the options below");
  cmd->add_option("--variant", o.variant, "Kernel variant (" + known_variants() + ")");
  cmd->add_option("--Br", o.Br, "Query rows per block");
  cmd->add_option("--Bc", o.Bc, "Key/value rows per iteration");
  cmd->add_option("--layout", o.layout, "Shared-memory layout (" + layouts + ")");
  add_precision_option(cmd, o.precision, what_all_means);
}

ConfigRequest config_request_of(const ConfigFilterCliOptions& o) {
  ConfigRequest r;
  if (!o.config.empty()) {
    if (!o.variant.empty() || !o.layout.empty() || o.Br || o.Bc)
      throw UsageError("--config names the whole config; drop --variant, --Br, --Bc and --layout");
    const std::optional<TileConfig> c = parse_config_name(o.config);
    if (!c) throw UsageError("config '" + o.config + "': not a config name (variant/dD/brRxbcC/layout[/dtype][/sN][/qsmem][/ov][/pp][/pe])");
    r.variant = c->variant;
    r.Br = c->Br;
    r.Bc = c->Bc;
    r.layout = c->layout;
    r.stages = c->stages;
    r.q_smem = c->q_smem;
    r.overlap = c->overlap;
    r.ping_pong = c->ping_pong;
    r.persistent = c->persistent;
    r.named = *c;
    r.precision = parse_precision_or_throw(o.precision);
    require_precision(c->variant, r.precision);
    return r;
  }
  if (!o.variant.empty()) r.variant = parse_variant_or_throw(o.variant);
  if (!o.layout.empty()) r.layout = parse_layout_or_throw(o.layout);
  r.precision = parse_precision_or_throw(o.precision);
  if (r.variant) require_precision(*r.variant, r.precision);
  r.Br = o.Br;
  r.Bc = o.Bc;
  return r;
}

// ---- sampling -------------------------------------------------------------------------------

void add_sampling_options(CLI::App* cmd, SamplingCliOptions& o) {
  cmd->add_option("--time-cap", o.time_cap_s,
                  "Sampling time cap per config, seconds (default " + number_text(o.time_cap_s) + ")");
  cmd->add_option("--rel-stdev", o.rel_stdev,
                  "Stop sampling below this relative stdev (default " + number_text(o.rel_stdev) + ")");
  cmd->add_option("--min-samples", o.min_samples,
                  "Minimum kept samples per config (default " + std::to_string(o.min_samples) + ")");
  cmd->add_option("--max-samples", o.max_samples,
                  "Maximum samples per config (default " + std::to_string(o.max_samples) + ")");
  cmd->add_option("--warmup-ms", o.warmup_ms,
                  "Warm-up per config before sampling, ms (default " + number_text(o.warmup_ms) + ")");
}

void add_l2_flush_option(CLI::App* cmd, SamplingCliOptions& o) {
  cmd->add_option("--l2-flush", o.l2_flush,
                  "How L2 is flushed before each sample: write (default; the flush's lines are left dirty and "
                  "written back beside the timed call's first reads, as in every profile) or read (the lines "
                  "the call finds are clean)");
}

void validate_sampling(const SamplingCliOptions& o) {
  if (!parse_l2_flush(o.l2_flush))
    throw UsageError("l2-flush=" + o.l2_flush + ": must be write or read");
  if (!(o.time_cap_s > 0)) throw UsageError("time-cap=" + number_text(o.time_cap_s) + ": must be > 0");
  if (!(o.rel_stdev > 0)) throw UsageError("rel-stdev=" + number_text(o.rel_stdev) + ": must be > 0");
  if (o.min_samples < 1) throw UsageError("min-samples=" + std::to_string(o.min_samples) + ": must be >= 1");
  if (o.max_samples < o.min_samples)
    throw UsageError("max-samples=" + std::to_string(o.max_samples) + ": must be >= min-samples (" +
                     std::to_string(o.min_samples) + ")");
  if (!(o.warmup_ms >= 0)) throw UsageError("warmup-ms=" + number_text(o.warmup_ms) + ": must be >= 0");
}

HarnessOptions harness_options_of(const SamplingCliOptions& o) {
  HarnessOptions h;
  h.rule.time_cap_s = o.time_cap_s;
  h.rule.target_rel_stdev = o.rel_stdev;
  h.rule.min_samples = o.min_samples;
  h.rule.max_samples = o.max_samples;
  h.warmup_min_ms = o.warmup_ms;
  h.flush_kind = parse_l2_flush(o.l2_flush).value_or(L2Flush::Write);  // validated by validate_sampling
  return h;
}

}  // namespace flashtune::app
