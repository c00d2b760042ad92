// `flashtune run`: one kernel config (or every compiled config of the workload's d with
// --all-configs, or the dispatcher's pick with --auto, docs/dispatch.md) on one workload, on random inputs or Q, K, V from .npy files; optional check
// against the double reference, timing through the harness (docs/measurement.md), O to .npy.
// Every argument and input file is validated before the first CUDA call, so bad input gets the
// same one-line answer (exit 2) on machines with and without a GPU.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_options.h"
#include "commands.h"
#include "dispatch/dispatcher.h"
#include "exit_codes.h"
#include "kernels/registry.h"
#include "model/workload_limits.h"
#include "tuner/config_select.h"
#include "tuner/device_check.h"
#include "tuner/npy.h"
#include "profile/output_file.h"
#include "tuner/pair_measurement.h"
#include "tuner/timing_harness.h"

namespace flashtune::app {
namespace {

using nlohmann::json;

struct RunOptions {
  WorkloadCliOptions workload;    // --B --N --d --causal --scale --qkv-layout --heads
  ConfigFilterCliOptions filter;  // --variant --Br --Bc --layout --precision
  SamplingCliOptions sampling;    // --time-cap ... --warmup-ms
  std::string q_path, k_path, v_path, out_path;
  std::uint64_t seed = 1;
  float range = 1.0f;
  bool check = false, no_time = false, json = false, all_configs = false;
  bool auto_config = false;  // --auto: the dispatcher picks the config
  std::string profile_path;  // --profile for --auto; default profiles/<gpu>.json when present
  bool spec_only = false;    // --spec-only for --auto: no profile, the model with default coefficients
  int device = 0;
};

// ---- validation (host only, no CUDA) -------------------------------------------------------

void require_at_least_one(const char* what, long long value) {
  if (value < 1) throw UsageError(std::string(what) + "=" + std::to_string(value) + ": must be >= 1");
}

struct ResolvedInputs {
  Workload workload;
  std::vector<float> q, k, v;  // empty for random inputs
  bool from_files() const { return !q.empty(); }
};

ResolvedInputs resolve_inputs(const RunOptions& o) {
  ResolvedInputs r;
  Workload& w = r.workload;
  const WorkloadCliOptions& wo = o.workload;
  w.causal = wo.causal;
  w.dtype = dtype_of(wo);
  if (const std::optional<float> scale = scale_of(wo)) w.scale = *scale;
  const int files = int(!o.q_path.empty()) + int(!o.k_path.empty()) + int(!o.v_path.empty());
  if (files > 0 && files < 3) {
    const char* missing = o.q_path.empty() ? "--q" : o.k_path.empty() ? "--k" : "--v";
    throw UsageError(std::string("--q, --k and --v go together (missing ") + missing + ")");
  }
  if (files == 0) {
    if (!wo.B) throw UsageError("missing --B (or give --q/--k/--v)");
    if (!wo.N) throw UsageError("missing --N (or give --q/--k/--v)");
    if (!wo.d) throw UsageError("missing --d (or give --q/--k/--v)");
    w.B = *wo.B;
    w.N = *wo.N;
    w.d = *wo.d;
    require_at_least_one("B", w.B);
    apply_heads_and_keys(wo, w);
  } else {
    // The files hold self-attention operands [entries, N, d]; K and V of another length or head
    // count would need shapes of their own.
    if (wo.kv_len || wo.kv_heads)
      throw UsageError("--kv-len and --kv-heads take random inputs, not --q/--k/--v files");
    // Dimensions not given come from q.npy's header; all three files must then match them.
    const npy::Header h = npy::read_header(o.q_path);
    if (h.shape.size() != 3)
      throw UsageError(o.q_path + ": shape " + npy::shape_string(h.shape) + ", expected 3 dimensions [B, N, d]");
    // Checked before narrowing: a dimension of 4294967360 must not read as d=64.
    for (const std::size_t dim : h.shape)
      if (dim > static_cast<std::size_t>(INT_MAX))
        throw UsageError(o.q_path + ": shape " + npy::shape_string(h.shape) + " has a dimension above " +
                         std::to_string(INT_MAX));
    // --B (the batch, times --heads) or the file's first dimension (the entries).
    w.N = wo.N.value_or(static_cast<long long>(h.shape[1]));
    w.d = wo.d.value_or(static_cast<int>(h.shape[2]));
    if (wo.B) {
      w.B = *wo.B;
      require_at_least_one("B", w.B);
      apply_heads_and_keys(wo, w);
    } else {
      w.B = static_cast<long long>(h.shape[0]);
      if (wo.heads < 1) throw UsageError("heads=" + std::to_string(wo.heads) + ": must be >= 1");
      if (w.B % wo.heads != 0)
        throw UsageError("heads=" + std::to_string(wo.heads) + " does not divide B=" + std::to_string(w.B) + " (" +
                         o.q_path + "'s first dimension)");
    }
  }
  require_at_least_one("B", w.B);
  require_at_least_one("N", w.N);
  // A named config carries its own d (select_config checks it against the workload's); the
  // head-dim list holds the tiled families' only, so it would refuse a compiled decode config's d.
  if (o.filter.config.empty()) require_compiled_head_dim(w.d, w.dtype);
  if (const auto why = model::workload_limit_error(w)) throw UsageError(*why);
  if (files > 0) {
    const std::vector<std::size_t> shape = {std::size_t(w.B), std::size_t(w.N), std::size_t(w.d)};
    r.q = npy::read_f32(o.q_path, shape).data;
    r.k = npy::read_f32(o.k_path, shape).data;
    r.v = npy::read_f32(o.v_path, shape).data;
  }
  return r;
}

void validate_run_options(const RunOptions& o) {
  if (!(o.range > 0.0f) || !std::isfinite(o.range))
    throw UsageError("range=" + number_text(o.range) + ": must be a positive finite number");
  validate_sampling(o.sampling);
  if (o.all_configs && !o.out_path.empty()) throw UsageError("--out needs a single config, not --all-configs");
  if (o.device < 0) throw UsageError("device=" + std::to_string(o.device) + ": must be >= 0");
  memory_layout_of(o.workload);
  // --out is checked before the GPU runs anything: its folder must exist, and it must not be an input.
  if (!o.out_path.empty()) {
    namespace fs = std::filesystem;
    const fs::path out(o.out_path);
    const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw UsageError("--out " + o.out_path + ": folder " + dir.string() + " does not exist");
    if (fs::is_directory(out, ec)) throw UsageError("--out " + o.out_path + " is a folder");
    try {
      require_outputs_apart({{"--q", o.q_path}, {"--k", o.k_path}, {"--v", o.v_path}}, {{"--out", o.out_path}});
    } catch (const OutputError& e) {
      throw UsageError(e.what());
    }
  }
  if (o.auto_config) {
    const ConfigFilterCliOptions& f = o.filter;
    const char* pinned = !f.variant.empty() ? "--variant" : f.Br ? "--Br" : f.Bc ? "--Bc"
                         : !f.layout.empty() ? "--layout" : o.all_configs ? "--all-configs" : nullptr;
    if (pinned) throw UsageError(std::string("--auto picks the config itself; drop ") + pinned);
    if (o.spec_only && !o.profile_path.empty()) throw UsageError("--spec-only and --profile exclude each other");
  } else if (!o.profile_path.empty()) {
    throw UsageError("--profile goes with --auto");
  } else if (o.spec_only) {
    throw UsageError("--spec-only goes with --auto");
  }
}

// ---- --auto: the dispatcher's choice ------------------------------------------------------

struct AutoChoice {
  Choice choice;
  std::string profile;  // the profile the dispatcher read; empty: model only
};

// Exit 2 for bad input (profile, spec), 4 when nothing can run the workload on this device.
AutoChoice auto_choice(const DeviceLimits& limits, std::optional<DispatchProfile> profile, const Workload& w,
                       Precision precision, ProfileDefault fallback) {
  try {
    const Dispatcher dispatcher = Dispatcher::for_device(limits, std::move(profile), fallback);
    return {dispatcher.choose(w, precision), dispatcher.profile() ? dispatcher.profile()->path : ""};
  } catch (const DispatchError& e) {
    throw CommandError{e.kind() == DispatchError::Kind::Unsupported ? kExitUnsupported : kExitUsage, e.what()};
  }
}

json choice_json(const AutoChoice& a) {
  const Choice& c = a.choice;
  json j = {{"config", c.config.name()},
            {"source", choice_source_name(c.source)},
            {"why", c.why()},
            {"profile", a.profile.empty() ? json(nullptr) : json(a.profile)}};
  if (c.source == ChoiceSource::ProfileBest) {
    j["workload"] = c.workload_name;
    j["measured_ms"] = c.measured_ms;
  } else {
    j["predicted_ms"] = c.predicted_ms;
    j["rank"] = c.rank;
    j["candidates"] = c.candidates;
  }
  if (c.splits > 0) j["splits"] = c.splits;
  if (!c.note.empty()) j["note"] = c.note;
  return j;
}

void print_choice(const AutoChoice& a) {
  std::printf("chosen    %s (%s)\n", a.choice.why().c_str(),
              a.profile.empty() ? "no profile: model only" : ("profile " + a.profile).c_str());
  if (!a.choice.note.empty()) std::printf("note      %s\n", a.choice.note.c_str());
}

// ---- one config on the GPU ---------------------------------------------------------------

PairOptions pair_options(const RunOptions& o) {
  PairOptions p;
  p.verify = o.check;
  p.time = !o.no_time;
  p.time_wrong_results = true;  // the user asked for a time: a failed check is reported beside it
  p.keep_output = !o.out_path.empty();
  return p;
}

// ---- reporting -----------------------------------------------------------------------------

json result_json(const PairResult& r) {
  const TileConfig& c = r.config;
  json j = {{"config", c.name()}, {"variant", variant_name(c.variant)}, {"d", c.d},          {"Br", c.Br},
            {"Bc", c.Bc},         {"layout", layout_name(c.layout)},   {"status", r.status},
            {"precision", precision_name(variant_precision(c.variant))}};
  if (!r.reason.empty()) j["reason"] = r.reason;
  const double tolerance = r.tolerance;
  if (r.check)
    j["check"] = {{"max_abs", r.check->max_abs},
                  {"rel_l2", r.check->rel_l2},
                  {"nonfinite", r.check->nonfinite},
                  {"count", r.check->count},
                  {"tolerance_rel_l2", tolerance},
                  {"pass", r.check->passes(tolerance)}};
  if (r.timing) {
    const TimingStats& t = r.timing->stats;
    j["time"] = {{"median_ms", t.median_ms}, {"min_ms", t.min_ms},       {"max_ms", t.max_ms},
                 {"mean_ms", t.mean_ms},     {"stdev_ms", t.stdev_ms},   {"rel_stdev", t.rel_stdev},
                 {"samples", t.samples},     {"dropped", t.dropped},     {"stop", stop_reason_name(t.stop_reason)},
                 {"warmup_launches", r.timing->warmup_launches},         {"sampling_s", r.timing->sampling_s},
                 {"l2_flush_bytes", r.timing->flush_bytes},       {"l2_flush", l2_flush_name(r.timing->flush_kind)}};
    j["tflops"] = r.tflops;
    j["sm_clock_mhz"] = {{"source", r.timing->clock_source}};
    if (t.clock_known) {
      j["sm_clock_mhz"]["min"] = t.clock_min_mhz;
      j["sm_clock_mhz"]["median"] = t.clock_median_mhz;
      j["sm_clock_mhz"]["max"] = t.clock_max_mhz;
    }
  }
  return j;
}

std::string workload_line(const Workload& w) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "B=%lld N=%lld%s d=%d %s scale=%g", w.B, w.N, inference_suffix(w).c_str(), w.d,
                w.causal ? "causal" : "non-causal",
                double(w.effective_scale()));
  return buf;
}

void print_single(const PairResult& r, const Workload& w, const DeviceLimits& dev, const AutoChoice* chosen) {
  std::printf("device    %s (%d SMs, L2 %.0f MiB)\n", dev.name.c_str(), dev.sm_count, double(dev.l2_bytes) / (1 << 20));
  std::printf("workload  %s\n", workload_line(w).c_str());
  std::printf("config    %s\n", r.config.name().c_str());
  if (chosen) print_choice(*chosen);
  if (!r.ok() && !r.reason.empty()) std::printf("status    %s: %s\n", r.status.c_str(), r.reason.c_str());
  const double tolerance = r.tolerance;
  if (r.check)
    std::printf("check     max_abs %.3e  rel_l2 %.3e  nonfinite %lld  -> %s (rel_l2 tolerance %.0e)\n", r.check->max_abs,
                r.check->rel_l2, r.check->nonfinite, r.check->passes(tolerance) ? "PASS" : "FAIL", tolerance);
  if (r.timing) {
    const TimingStats& t = r.timing->stats;
    std::printf("time      median %.4f ms  min %.4f  stdev %.4f (%.2f%%)  samples %d  dropped %d  stop %s\n", t.median_ms,
                t.min_ms, t.stdev_ms, 100 * t.rel_stdev, t.samples, t.dropped, stop_reason_name(t.stop_reason));
    std::printf("rate      %.2f TFLOP/s (nominal %s)\n", r.tflops, w.causal ? "2 B N^2 d" : "4 B N^2 d");
    if (t.clock_known)
      std::printf("sm clock  median %.0f MHz (min %.0f, max %.0f)\n", t.clock_median_mhz, t.clock_min_mhz, t.clock_max_mhz);
    else
      std::printf("sm clock  unknown: %s\n", r.timing->clock_source.c_str());
  }
}

void print_table(const std::vector<PairResult>& results, const Workload& w, const DeviceLimits& dev,
                 const PairResult* best) {
  std::printf("device    %s (%d SMs)\nworkload  %s\n", dev.name.c_str(), dev.sm_count, workload_line(w).c_str());
  std::printf("%-36s %-12s %11s %11s %7s %7s %8s %10s\n", "config", "status", "median_ms", "min_ms", "rel_sd", "samples",
              "TFLOP/s", "rel_l2");
  for (const PairResult& r : results) {
    std::printf("%-36s %-12s", r.config.name().c_str(), r.status.c_str());
    if (r.timing)
      std::printf(" %11.4f %11.4f %6.2f%% %7d %8.2f", r.timing->stats.median_ms, r.timing->stats.min_ms,
                  100 * r.timing->stats.rel_stdev, r.timing->stats.samples, r.tflops);
    else
      std::printf(" %11s %11s %7s %7s %8s", "-", "-", "-", "-", "-");
    if (r.check)
      std::printf(" %10.2e", r.check->rel_l2);
    else
      std::printf(" %10s", "-");
    if (!r.ok()) std::printf("  %s", r.reason.c_str());
    std::printf("\n");
  }
  if (best) std::printf("best      %s  %.4f ms  %.2f TFLOP/s\n", best->config.name().c_str(),
                        best->timing->stats.median_ms, best->tflops);
}

// ---- the command ---------------------------------------------------------------------------

int run_command(const RunOptions& o) {
  ResolvedInputs in;
  std::vector<TileConfig> configs;
  std::optional<DispatchProfile> profile;  // --auto --profile: read before any CUDA call
  ConfigRequest request;
  try {
    validate_run_options(o);
    request = config_request_of(o.filter);
    in = resolve_inputs(o);
    request.dtype = in.workload.dtype;
    if (o.auto_config) {
      if (!o.profile_path.empty()) profile = load_dispatch_profile(o.profile_path);
    } else {
      const TileConfig chosen = select_config(in.workload.d, request, default_config(in.workload));
      configs = o.all_configs ? matching_configs(in.workload.d, request) : std::vector<TileConfig>{chosen};
    }
  } catch (const UsageError& e) {
    throw CommandError{kExitUsage, e.what()};
  } catch (const npy::NpyError& e) {
    throw CommandError{kExitUsage, e.what()};
  } catch (const DispatchError& e) {
    throw CommandError{kExitUsage, e.what()};
  }

  if (const auto problem = cuda_device_problem(o.device))
    throw CommandError{kExitNoDevice, "flashtune run needs a CUDA GPU: " + *problem};
  const Workload& w = in.workload;
  DeviceLimits limits;
  try {
    limits = DeviceLimits::query(o.device);
  } catch (const std::exception& e) {
    throw CommandError{kExitNoDevice, std::string("flashtune run needs a CUDA GPU: ") + e.what()};
  }
  std::optional<AutoChoice> chosen;
  if (o.auto_config) {
    chosen = auto_choice(limits, std::move(profile), w, request.precision,
                         o.spec_only ? ProfileDefault::SpecOnly : ProfileDefault::Shipped);
    configs = {chosen->choice.config};
  }
  // A single config the device cannot run is refused before any allocation.
  if (!o.all_configs) {
    const KernelInstance* k = find_kernel(configs.front());
    if (!k) throw CommandError{kExitFailure, configs.front().name() + " is compiled but missing from the registry"};
    const Support s = k->can_implement(w, limits);
    if (!s) throw CommandError{kExitUnsupported, "config " + configs.front().name() + " cannot run " +
                                                     workload_line(w) + ": " + s.reason};
  }

  PairMeasurement s(o.device, limits, harness_options_of(o.sampling));
  if (in.from_files()) {
    s.use_host_inputs(w, in.q, in.k, in.v);
    // The host copies are not needed any more; large inputs would otherwise be held twice.
    in.q = {};
    in.k = {};
    in.v = {};
  } else {
    s.use_random_inputs(w, o.range, o.seed);
  }
  s.use_layout(memory_layout_of(o.workload), o.workload.heads);

  std::vector<PairResult> results;
  std::vector<float> out_host;
  for (const TileConfig& c : configs) {
    PairOptions po = pair_options(o);
    // --auto on a decode config: the dispatcher's split (the model's), as attention_forward launches it.
    if (chosen) po.decode_splits = chosen->choice.splits;
    results.push_back(s.measure(c, po));
    // --out goes with a single config; the output of one that did not launch is not written.
    if (!results.back().output.empty()) out_host = std::move(results.back().output);
  }

  const PairResult* best = nullptr;
  for (const PairResult& r : results)
    if (r.ok() && r.timing && (!best || r.timing->stats.median_ms < best->timing->stats.median_ms)) best = &r;

  if (!o.out_path.empty() && !out_host.empty()) {
    try {
      npy::write_f32(o.out_path, {std::size_t(w.B), std::size_t(w.N), std::size_t(w.d)}, out_host.data());
    } catch (const npy::NpyError& e) {
      throw CommandError{kExitFailure, e.what()};
    }
  }

  if (o.json) {
    json doc = {{"schema_version", 1},
                {"device",
                 {{"name", limits.name},
                  {"sm_count", limits.sm_count},
                  {"cc", std::to_string(limits.cc_major) + "." + std::to_string(limits.cc_minor)},
                  {"l2_bytes", limits.l2_bytes}}},
                {"workload",
                 {{"B", w.B}, {"N", w.N}, {"d", w.d}, {"causal", w.causal}, {"scale", w.effective_scale()},
                  {"nominal_flops", w.nominal_flops()}, {"qkv_layout", o.workload.qkv_layout}, {"heads", o.workload.heads},
                  {"kv_len", w.keys()}, {"kv_group", w.kv_group}}},
                {"precision", precision_name(request.precision)},
                {"inputs", !o.q_path.empty()
                               ? json{{"source", "npy"}, {"q", o.q_path}, {"k", o.k_path}, {"v", o.v_path}}
                               : json{{"source", "random"}, {"seed", o.seed}, {"range", o.range}}},
                {"timing_rule",
                 {{"min_samples", o.sampling.min_samples},
                  {"max_samples", o.sampling.max_samples},
                  {"target_rel_stdev", o.sampling.rel_stdev},
                  {"time_cap_s", o.sampling.time_cap_s},
                  {"clock_drop_fraction", StoppingRule{}.clock_drop_fraction}}},
                {"results", json::array()}};
    for (const PairResult& r : results) doc["results"].push_back(result_json(r));
    if (o.all_configs) doc["best"] = best ? json(best->config.name()) : json(nullptr);
    if (chosen) doc["choice"] = choice_json(*chosen);
    if (!o.out_path.empty()) doc["out"] = o.out_path;
    std::printf("%s\n", doc.dump(2).c_str());
  } else if (o.all_configs) {
    print_table(results, w, limits, best);
  } else {
    print_single(results.front(), w, limits, chosen ? &*chosen : nullptr);
    if (!o.out_path.empty()) std::printf("out       %s\n", o.out_path.c_str());
  }

  int code = kExitOk;
  bool any_ran = false;
  for (const PairResult& r : results) {
    if (r.ran() && !r.ok()) code = kExitFailure;  // wrong result or a CUDA error
    if (r.ran()) any_ran = true;
  }
  if (code == kExitOk && !any_ran) code = kExitUnsupported;
  return code;
}

}  // namespace

void register_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand("run", "Run (check, time) one kernel config on one workload");
  add_workload_options(sub, o->workload, {/*dims_required=*/false, /*scale=*/true, /*memory_layout=*/true});
  add_config_filter_options(sub, o->filter, "--all-configs and --auto");
  sub->add_flag("--all-configs", o->all_configs, "Run every compiled config of the workload's d (filtered by the above)");
  sub->add_flag("--auto", o->auto_config,
                "Let the dispatcher pick the config: the profile's measured best, else the model's rank 1");
  sub->add_option("--profile", o->profile_path,
                  "Profile for --auto (default: the shipped profiles/<this GPU's spec>.json of the data folder when it "
                  "exists, else the model alone)");
  sub->add_flag("--spec-only", o->spec_only,
                "With --auto: no profile, not even the shipped one (the model with the spec sheet and default coefficients)");
  sub->add_option("--q", o->q_path, "Q from a .npy file, float32 [B, N, d]");
  sub->add_option("--k", o->k_path, "K from a .npy file, float32 [B, N, d]");
  sub->add_option("--v", o->v_path, "V from a .npy file, float32 [B, N, d]");
  sub->add_option("--out", o->out_path, "Write O to this .npy file (float32 [B, N, d])");
  sub->add_option("--seed", o->seed, "Seed of the random inputs");
  sub->add_option("--range", o->range, "Random inputs uniform in [-range, range] (default 1)");
  sub->add_flag("--check", o->check,
                "Compare every element with the double reference (exit 1 above rel L2 1e-4; 1e-2 for mma_1xtf32)");
  sub->add_flag("--no-time", o->no_time, "Skip timing");
  add_sampling_options(sub, o->sampling);
  add_l2_flush_option(sub, o->sampling);
  sub->add_option("--device", o->device, "CUDA device index (default 0)");
  sub->add_flag("--json", o->json, "Print JSON");
  sub->callback([o] {
    set_reporting_action("run", [o] { return run_command(*o); });
  });
}

}  // namespace flashtune::app
