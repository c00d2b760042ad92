// `flashtune tune`: on one GPU (or every visible one), measure the (workload, config) pairs of a
// plan (every compiled config of the workload's d, or the model's top K) into a profile: verified
// on fresh random inputs against the double reference, timed by the harness, counters from CUPTI
// where permitted, resources. The profile is rewritten atomically after every pair; rerunning the
// same command resumes; SIGINT/SIGTERM finish the current pair, keep everything, exit 130.
// Bad input is reported (one line) before any CUDA call.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "kernels/traits/variants.h"
#include "model/gpu_spec.h"
#include "model/profile.h"
#include "tuner/config_select.h"
#include "tuner/counter_source.h"
#include "tuner/cuda_backend.h"
#include "tuner/device_check.h"
#include "tuner/gpu_identity.h"
#include "tuner/profile.h"
#include "tuner/progress.h"
#include "tuner/tune_plan.h"
#include "tuner/tune_runner.h"
#include "tuner/workload_set.h"

namespace flashtune::app {
namespace {

using nlohmann::ordered_json;

constexpr int kExitInterrupted = 130;  // 128 + SIGINT, what shells report for Ctrl-C

struct TuneOptions {
  std::vector<std::string> workload_files;
  long long B = 0, N = 0;
  int d = 0;
  bool causal = false;
  std::string name;
  std::string profile;
  int device = 0;
  std::string devices;
  std::string strategy = "exhaustive";
  std::string precision = "fp32";  // --precision: fp32 plans the fp32-accurate configs only, tf32 all
  int top_k = 0;
  bool no_counters = false;
  double time_cap_s = 0.5, rel_stdev = 0.01, warmup_ms = 50;
  int min_samples = 10, max_samples = 200;
  std::uint64_t seed = 1;
  bool json = false;
  CLI::Option *B_opt = nullptr, *N_opt = nullptr, *d_opt = nullptr, *device_opt = nullptr, *top_k_opt = nullptr;
};

bool given(const CLI::Option* o) { return o != nullptr && o->count() > 0; }

std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// ---- signals: the first SIGINT/SIGTERM asks the runner to stop after the current pair; the
// handler is reset by SA_RESETHAND, so a second one ends the process at once (the profile on disk
// is whole either way: it is only ever replaced by rename).
std::atomic<bool>& stop_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

extern "C" void on_stop_signal(int) {
  stop_flag().store(true);
  static const char msg[] = "\nflashtune tune: stopping after the current config (again to abort at once)\n";
  const ssize_t ignored = ::write(2, msg, sizeof msg - 1);
  (void)ignored;
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// ---- input (no CUDA) ------------------------------------------------------------------------

std::vector<NamedWorkload> workloads_of(const TuneOptions& o) {
  std::vector<WorkloadSet> sets;
  for (const std::string& f : o.workload_files) {
    if (!std::filesystem::exists(f)) throw CommandError{kExitUsage, "unknown workload file " + f};
    try {
      sets.push_back(load_workload_set(f));
    } catch (const WorkloadFileError& e) {
      throw CommandError{kExitUsage, e.what()};
    }
  }
  const bool any_dim = given(o.B_opt) || given(o.N_opt) || given(o.d_opt);
  if (any_dim) {
    if (!given(o.B_opt) || !given(o.N_opt) || !given(o.d_opt))
      throw CommandError{kExitUsage, "a command-line workload needs --B, --N and --d together"};
    if (o.B < 1) throw CommandError{kExitUsage, "B=" + std::to_string(o.B) + ": must be >= 1"};
    if (o.N < 1) throw CommandError{kExitUsage, "N=" + std::to_string(o.N) + ": must be >= 1"};
    if (o.d < 1) throw CommandError{kExitUsage, "d=" + std::to_string(o.d) + ": must be >= 1"};
    WorkloadSet cli;
    NamedWorkload nw;
    nw.workload.B = o.B;
    nw.workload.N = o.N;
    nw.workload.d = o.d;
    nw.workload.causal = o.causal;
    nw.name = o.name.empty() ? default_workload_name(nw.workload) : o.name;
    cli.workloads.push_back(nw);
    sets.push_back(cli);
  } else if (!o.name.empty()) {
    throw CommandError{kExitUsage, "--name names a command-line workload: give --B, --N and --d too"};
  }
  if (sets.empty()) throw CommandError{kExitUsage, "nothing to tune: give --workloads FILE... or --B, --N and --d"};
  try {
    return merge_workloads(sets);
  } catch (const WorkloadFileError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
}

Precision precision_of(const TuneOptions& o) {
  try {
    return parse_precision_or_throw(o.precision);
  } catch (const UsageError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
}

void validate_options(const TuneOptions& o) {
  if (!(o.time_cap_s > 0)) throw CommandError{kExitUsage, "time-cap=" + number_text(o.time_cap_s) + ": must be > 0"};
  if (!(o.rel_stdev > 0)) throw CommandError{kExitUsage, "rel-stdev=" + number_text(o.rel_stdev) + ": must be > 0"};
  if (o.min_samples < 1) throw CommandError{kExitUsage, "min-samples=" + std::to_string(o.min_samples) + ": must be >= 1"};
  if (o.max_samples < o.min_samples)
    throw CommandError{kExitUsage, "max-samples=" + std::to_string(o.max_samples) + ": must be >= min-samples"};
  if (!o.devices.empty() && o.devices != "all")
    throw CommandError{kExitUsage, "devices=" + o.devices + ": only 'all' is supported (or --device N for one GPU)"};
  if (!o.devices.empty() && given(o.device_opt))
    throw CommandError{kExitUsage, "--device and --devices all exclude each other"};
  TuneStrategy s;
  try {
    s = parse_strategy(o.strategy);
  } catch (const PlanError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
  if (s == TuneStrategy::Model && !given(o.top_k_opt))
    throw CommandError{kExitUsage, "--strategy model needs --top-k K"};
  if (s == TuneStrategy::Exhaustive && given(o.top_k_opt))
    throw CommandError{kExitUsage, "--top-k goes with --strategy model"};
  precision_of(o);
}

// ---- the GPU side ---------------------------------------------------------------------------

std::vector<int> devices_of(const TuneOptions& o) {
  if (const auto problem = cuda_device_problem(o.devices.empty() ? o.device : 0))
    throw CommandError{kExitNoDevice, "flashtune tune needs a CUDA GPU: " + *problem};
  if (o.devices.empty()) return {o.device};
  int count = 0;
  cudaGetDeviceCount(&count);
  std::vector<int> all;
  for (int i = 0; i < count; ++i) all.push_back(i);
  return all;
}

HarnessOptions harness_options(const TuneOptions& o) {
  HarnessOptions h;
  h.rule.time_cap_s = o.time_cap_s;
  h.rule.target_rel_stdev = o.rel_stdev;
  h.rule.min_samples = o.min_samples;
  h.rule.max_samples = o.max_samples;
  h.warmup_min_ms = o.warmup_ms;
  return h;
}

ordered_json settings_json(const TuneOptions& o, const std::vector<int>& devices) {
  return {{"strategy", o.strategy},       {"top_k", o.top_k},          {"precision", o.precision},
          {"time_cap_s", o.time_cap_s},
          {"target_rel_stdev", o.rel_stdev}, {"min_samples", o.min_samples}, {"max_samples", o.max_samples},
          {"warmup_ms", o.warmup_ms},     {"seed", o.seed},            {"counters", !o.no_counters},
          {"devices", devices}};
}

// The profile to resume, or a new one for this GPU and build.
Profile open_profile(const std::string& path, const GpuIdentity& gpu, const std::vector<NamedWorkload>& workloads) {
  Profile p;
  if (std::filesystem::exists(path)) {
    try {
      p = load_profile(path);
    } catch (const ProfileError& e) {
      throw CommandError{kExitUsage, std::string(e.what()) + " (fix or move it; tune resumes from it)"};
    }
    if (p.gpu.spec != gpu.spec || p.gpu.name != gpu.name)
      throw CommandError{kExitUsage, path + " was measured on " + p.gpu.name + " (" + p.gpu.spec + "), this GPU is " +
                                         gpu.name + " (" + gpu.spec + "): give another --profile"};
    const BuildInfo now = this_build();
    if (p.build.git_commit != now.git_commit || p.build.kernel_set != now.kernel_set)
      std::fprintf(stderr,
                   "flashtune tune: warning: %s was started by build %s (%s kernel set), this is %s (%s); "
                   "resuming anyway\n",
                   path.c_str(), p.build.git_commit.c_str(), p.build.kernel_set.c_str(), now.git_commit.c_str(),
                   now.kernel_set.c_str());
  } else {
    p.gpu = gpu;
    p.build = this_build();
  }
  try {
    add_workloads(p, workloads);
  } catch (const ProfileError& e) {
    throw CommandError{kExitUsage, path + ": " + e.what()};
  }
  return p;
}

// The model's view of the profile for ranking: its fitted coefficients and compiled registers.
model::ModelProfile ranking_profile(const std::string& profile_path) {
  if (!std::filesystem::exists(profile_path)) return {};
  try {
    return model::load_model_profile(profile_path);
  } catch (const std::exception& e) {
    throw CommandError{kExitUsage, e.what()};
  }
}

std::string status_counts(const std::map<std::string, std::size_t>& by_status) {
  std::string s;
  for (const auto& [st, n] : by_status) s += (s.empty() ? "" : ", ") + st + " " + std::to_string(n);
  return s.empty() ? "none" : s;
}

int tune_command(const TuneOptions& o) {
  validate_options(o);
  const std::vector<NamedWorkload> workloads = workloads_of(o);
  // Host-side plan check first (d nothing implements), so the message is the same without a GPU.
  PlanOptions host_check;
  host_check.precision = precision_of(o);
  try {
    make_plan(workloads, compiled_configs(), host_check);
  } catch (const PlanError& e) {
    throw CommandError{kExitUnsupported, e.what()};
  }

  const std::vector<int> devices = devices_of(o);
  std::vector<GpuIdentity> ids;
  try {
    for (int dev : devices) ids.push_back(query_gpu_identity(dev, model::default_gpu_spec_dir()));
  } catch (const std::exception& e) {
    throw CommandError{kExitNoDevice, std::string("flashtune tune needs a CUDA GPU: ") + e.what()};
  }
  for (const GpuIdentity& id : ids)
    if (id.name != ids.front().name)
      throw CommandError{kExitUsage, "--devices all needs identical GPUs (device 0: " + ids.front().name + ", device " +
                                         std::to_string(id.device_index) + ": " + id.name + ")"};
  const GpuIdentity& gpu = ids.front();
  const std::string path = o.profile.empty() ? "profiles/" + gpu.spec + ".json" : o.profile;

  PlanOptions plan_options;
  plan_options.strategy = parse_strategy(o.strategy);
  plan_options.top_k = o.top_k;
  plan_options.precision = precision_of(o);
  std::optional<model::GpuSpec> spec;
  if (plan_options.strategy == TuneStrategy::Model) {
    try {
      spec = model::find_gpu_spec(gpu.spec, model::default_gpu_spec_dir());
    } catch (const std::exception& e) {
      throw CommandError{kExitUsage, "the model strategy needs a spec of " + gpu.name + " in " +
                                         model::default_gpu_spec_dir() + " (" + e.what() + "); use --strategy exhaustive"};
    }
    plan_options.gpu = &*spec;
    plan_options.profile = ranking_profile(path);
  }
  TunePlan plan;
  try {
    plan = make_plan(workloads, compiled_configs(), plan_options);
  } catch (const PlanError& e) {
    throw CommandError{kExitUnsupported, e.what()};
  }

  Profile initial = open_profile(path, gpu, workloads);
  initial.tune_settings = nlohmann::json(settings_json(o, devices));

  // One backend per GPU, each with its own counter source; one warning per distinct reason.
  std::vector<std::unique_ptr<CudaBackend>> backends;
  std::set<std::string> warned;
  CudaBackendOptions bo;
  bo.harness = harness_options(o);
  bo.seed = o.seed;
  std::string counters_note = "ok";
  try {
    for (int dev : devices) {
      std::unique_ptr<CounterSource> counters =
          o.no_counters ? no_counters("disabled by --no-counters") : cupti_counters(dev);
      const std::string why = counters->unavailable_reason();
      if (!why.empty() && !o.no_counters && warned.insert(why).second)
        std::fprintf(stderr, "flashtune tune: warning: hardware counters unavailable on device %d (%s); tuning on "
                             "timings alone\n", dev, why.c_str());
      if (!why.empty()) counters_note = "unavailable: " + why;
      backends.push_back(std::make_unique<CudaBackend>(dev, bo, std::move(counters)));
    }
  } catch (const std::exception& e) {
    throw CommandError{kExitFailure, std::string("setting up the GPU: ") + e.what()};
  }

  std::unique_ptr<ProfileStore> store;
  try {
    store = std::make_unique<ProfileStore>(path, std::move(initial));
  } catch (const ProfileError& e) {
    throw CommandError{kExitFailure, e.what()};
  }
  const std::size_t remaining = [&] {
    std::size_t n = 0;
    for (const WorkloadWork& w : remaining_work(plan, DoneIndex(store->snapshot()))) n += w.configs.size();
    return n;
  }();
  std::fprintf(stderr, "flashtune tune: %s on %zu GPU%s (%s), %zu workloads, %zu pairs (%s), %zu already in %s\n",
               gpu.name.c_str(), devices.size(), devices.size() == 1 ? "" : "s", gpu.spec.c_str(), workloads.size(),
               plan.pairs.size(), strategy_name(plan.strategy), plan.pairs.size() - remaining, path.c_str());

  install_stop_handlers();
  Progress progress(remaining, stderr);
  RunnerOptions ro;
  ro.stop = &stop_flag();
  ro.progress = &progress;
  std::vector<MeasurementBackend*> raw;
  for (auto& b : backends) raw.push_back(b.get());
  const RunSummary s = run_plan(plan, *store, raw, ro);
  const Profile done = store->snapshot();

  if (o.json) {
    ordered_json j;
    j["schema_version"] = 1;
    j["profile"] = path;
    j["gpu"] = {{"name", gpu.name}, {"spec", gpu.spec}, {"devices", devices}};
    j["strategy"] = strategy_name(plan.strategy);
    j["precision"] = o.precision;
    j["workloads"] = workloads.size();
    j["planned"] = s.planned;
    j["already_done"] = s.already_done;
    j["measured"] = s.measured;
    j["by_status"] = s.by_status;
    j["counters"] = counters_note;
    j["interrupted"] = s.interrupted;
    j["complete"] = s.complete();
    j["error"] = s.error;
    j["elapsed_s"] = s.elapsed_s;
    ordered_json best = ordered_json::object();
    for (const NamedWorkload& w : workloads)
      if (done.best.count(w.name))
        best[w.name] = {{"config", done.best.at(w.name).config}, {"median_ms", done.best.at(w.name).median_ms}};
    j["best"] = best;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("profile   %s\n", path.c_str());
    std::printf("measured  %zu this run (%s), %zu before, %zu of %zu planned pairs in %.1f s\n", s.measured,
                status_counts(s.by_status).c_str(), s.already_done, s.already_done + s.measured, s.planned,
                s.elapsed_s);
    for (const NamedWorkload& w : workloads) {
      const auto it = done.best.find(w.name);
      if (it == done.best.end())
        std::printf("best      %-14s (none valid yet)\n", w.name.c_str());
      else
        std::printf("best      %-14s %-36s %10.4f ms  %7.2f TFLOP/s\n", w.name.c_str(), it->second.config.c_str(),
                    it->second.median_ms, w.workload.nominal_flops() / (it->second.median_ms * 1e-3) / 1e12);
    }
  }
  if (!s.error.empty()) {
    std::fprintf(stderr, "flashtune tune: stopped: %s (everything measured so far is in %s)\n", s.error.c_str(),
                 path.c_str());
    return kExitFailure;
  }
  if (s.interrupted) {
    std::fprintf(stderr, "flashtune tune: interrupted; %zu of %zu pairs in %s; rerun the same command to resume\n",
                 s.already_done + s.measured, s.planned, path.c_str());
    return kExitInterrupted;
  }
  return kExitOk;
}

}  // namespace

void register_tune(CLI::App& app) {
  auto o = std::make_shared<TuneOptions>();
  CLI::App* sub = app.add_subcommand("tune", "Measure kernel configs on this GPU into a profile (resumable)");
  sub->add_option("--workloads", o->workload_files, "Workload files (configs/workloads/*.json)");
  o->B_opt = sub->add_option("--B", o->B, "A command-line workload: batch x heads");
  o->N_opt = sub->add_option("--N", o->N, "... sequence length");
  o->d_opt = sub->add_option("--d", o->d, "... head dimension");
  sub->add_flag("--causal", o->causal, "... causal");
  sub->add_option("--name", o->name, "... its name in the profile (default b<B>_n<N>_d<d>[_causal])");
  sub->add_option("--profile", o->profile, "Profile to write and resume (default profiles/<gpu spec>.json)");
  o->device_opt = sub->add_option("--device", o->device, "CUDA device index (default 0)");
  sub->add_option("--devices", o->devices, "'all': one worker per visible GPU, one merged profile");
  sub->add_option("--strategy", o->strategy, "exhaustive (default) or model (with --top-k)");
  sub->add_option("--precision", o->precision,
                  "fp32 (default: plan the fp32-accurate configs only, SIMT and mma_3xtf32) or tf32 (mma_1xtf32 too)");
  o->top_k_opt = sub->add_option("--top-k", o->top_k, "Model strategy: measure the K best-predicted configs");
  sub->add_flag("--no-counters", o->no_counters, "Skip the CUPTI counter passes");
  sub->add_option("--time-cap", o->time_cap_s, "Sampling time cap per config, seconds (default 0.5)");
  sub->add_option("--rel-stdev", o->rel_stdev, "Stop sampling below this relative stdev (default 0.01)");
  sub->add_option("--min-samples", o->min_samples, "Minimum kept samples (default 10)");
  sub->add_option("--max-samples", o->max_samples, "Maximum samples per config (default 200)");
  sub->add_option("--warmup-ms", o->warmup_ms, "Warm-up per config, ms (default 50)");
  sub->add_option("--seed", o->seed, "Seed of the random inputs (mixed with each workload's name)");
  sub->add_flag("--json", o->json, "Print the summary as JSON");
  sub->callback([o] {
    set_reporting_action("tune", [o] { return tune_command(*o); });
  });
}

}  // namespace flashtune::app
