// `flashtune tune`: on one GPU (or every visible one), measure the (workload, config) pairs of a
// plan (every compiled config of the workload's d, or the model's top K) into a profile: verified
// on fresh random inputs against the double reference, timed by the harness, counters from CUPTI
// where permitted, resources. Each pair is appended to the profile's journal as it finishes and
// the profile is compacted at the end (profile/profile_store.h); the profile is locked against a
// second writer; rerunning the same command resumes; SIGINT/SIGTERM finish the current pair, keep
// everything, exit 130. --shard I/N measures one of N balanced parts of the plan (a Slurm array
// task); --backend fake measures nothing (CI). Bad input is reported (one line) before any CUDA call.
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
#include "plan_options.h"
#include "kernels/traits/variants.h"
#include "model/gpu_spec.h"
#include "model/profile.h"
#include "profile/model_profile.h"
#include "tuner/config_select.h"
#include "tuner/counter_source.h"
#include "tuner/cuda_backend.h"
#include "tuner/device_check.h"
#include "tuner/fake_backend.h"
#include "tuner/gpu_identity.h"
#include "profile/profile.h"
#include "profile/profile_lock.h"
#include "profile/profile_store.h"
#include "tuner/progress.h"
#include "tuner/tune_plan.h"
#include "tuner/tune_runner.h"
#include "tuner/tune_shard.h"
#include "profile/workload_set.h"

namespace flashtune::app {
namespace {

using nlohmann::ordered_json;

constexpr int kExitInterrupted = 130;  // 128 + SIGINT, what shells report for Ctrl-C

struct TuneOptions {
  PlanCliOptions plan;
  std::string profile;
  int device = 0;
  std::string devices;
  bool no_counters = false;
  double time_cap_s = 0.5, rel_stdev = 0.01, warmup_ms = 50;
  int min_samples = 10, max_samples = 200;
  std::uint64_t seed = 1;
  bool json = false;
  std::string shard;              // "I/N": measure shard I of N (tune_shard.h)
  std::string backend = "cuda";   // cuda | fake (no GPU: made-up measurements, for CI)
  int fake_delay_ms = 0;          // fake backend: sleep per pair
  double wait_lock_s = 0;         // wait this long for another writer's lock before refusing
  CLI::Option* device_opt = nullptr;
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
  if (o.device < 0) throw CommandError{kExitUsage, "device=" + std::to_string(o.device) + ": must be >= 0"};
  if (o.backend != "cuda" && o.backend != "fake")
    throw CommandError{kExitUsage, "backend=" + o.backend + ": known: cuda, fake"};
  if (o.fake_delay_ms < 0 || (o.fake_delay_ms > 0 && o.backend != "fake"))
    throw CommandError{kExitUsage, "--fake-delay-ms goes with --backend fake and must be >= 0"};
  if (!(o.wait_lock_s >= 0)) throw CommandError{kExitUsage, "wait-lock=" + number_text(o.wait_lock_s) + ": must be >= 0"};
  validate_plan_options(o.plan);
}

Shard shard_of_options(const TuneOptions& o) {
  if (o.shard.empty()) return {};
  try {
    return parse_shard(o.shard);
  } catch (const PlanError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
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
  return {{"strategy", o.plan.strategy},  {"top_k", o.plan.top_k},     {"precision", o.plan.precision},
          {"time_cap_s", o.time_cap_s},
          {"target_rel_stdev", o.rel_stdev}, {"min_samples", o.min_samples}, {"max_samples", o.max_samples},
          {"warmup_ms", o.warmup_ms},     {"seed", o.seed},            {"counters", !o.no_counters},
          {"devices", devices}};
}

nlohmann::json shard_settings(const Shard& shard, const std::string& balance) {
  if (shard.whole()) return nullptr;
  return {{"index", shard.index}, {"count", shard.count}, {"balance", balance}};
}

std::string shard_text(const nlohmann::json& settings) {
  const auto it = settings.find("shard");
  if (it == settings.end() || !it->is_object()) return "the whole plan";
  return "shard " + std::to_string(it->value("index", -1)) + "/" + std::to_string(it->value("count", -1));
}

// The profile to resume, or a new one for this GPU and build. A profile of one shard resumes only
// as that shard (its pairs would otherwise mix with another split's).
Profile open_profile(const std::string& path, const GpuIdentity& gpu, const std::vector<NamedWorkload>& workloads,
                     const nlohmann::json& settings) {
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
    if (shard_text(p.tune_settings) != shard_text(settings))
      throw CommandError{kExitUsage, path + " holds " + shard_text(p.tune_settings) + ", this tune is " +
                                         shard_text(settings) + ": give another --profile"};
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
    return load_model_profile(profile_path);
  } catch (const std::exception& e) {
    throw CommandError{kExitUsage, e.what()};
  }
}

std::string status_counts(const std::map<std::string, std::size_t>& by_status) {
  std::string s;
  for (const auto& [st, n] : by_status) s += (s.empty() ? "" : ", ") + st + " " + std::to_string(n);
  return s.empty() ? "none" : s;
}

// The GPUs the tune runs on: the visible ones (or --device), or the fake backend's one.
std::vector<GpuIdentity> gpu_identities(const TuneOptions& o, const std::vector<int>& devices) {
  if (o.backend == "fake") return {fake_gpu_identity()};
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
  return ids;
}

// One backend per GPU, each with its own counter source; one warning per distinct reason.
// `counters_note` says whether counters are collected.
std::vector<std::unique_ptr<MeasurementBackend>> make_backends(const TuneOptions& o, const std::vector<int>& devices,
                                                               std::string& counters_note) {
  std::vector<std::unique_ptr<MeasurementBackend>> backends;
  counters_note = "ok";
  if (o.backend == "fake") {
    FakeBackendOptions fo;
    fo.delay_ms = o.fake_delay_ms;
    fo.counters = !o.no_counters;
    if (o.no_counters) counters_note = "unavailable: disabled by --no-counters";
    backends.push_back(std::make_unique<FakeBackend>(fo));
    return backends;
  }
  std::set<std::string> warned;
  CudaBackendOptions bo;
  bo.harness = harness_options(o);
  bo.seed = o.seed;
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
  return backends;
}

// The shard's part of the plan (the whole plan without --shard), and how it was balanced.
TunePlan shard_plan(const TunePlan& plan, const Shard& shard, const model::GpuSpec* spec, std::string& balance) {
  balance = spec ? "model (" + spec->name + " spec, default coefficients)" : "nominal FLOPs (no GPU spec)";
  if (shard.whole()) return plan;
  const std::vector<double> cost = tune_cost_s(plan, spec);
  const std::vector<int> owners = shard_owners(cost, shard.count);
  double total = 0, part = 0;
  for (std::size_t k = 0; k < cost.size(); ++k) {
    total += cost[k];
    if (owners[k] == shard.index) part += cost[k];
  }
  TunePlan mine = shard_of(plan, owners, shard.index);
  std::fprintf(stderr, "flashtune tune: shard %s: %zu of %zu pairs, predicted %.0f s of %.0f s (balanced by %s)\n",
               shard.text().c_str(), mine.pairs.size(), plan.pairs.size(), part, total, balance.c_str());
  return mine;
}

// The workloads the plan measures pairs of (a shard's profile lists only its own).
std::vector<NamedWorkload> planned_workloads(const TunePlan& plan) {
  std::vector<NamedWorkload> out;
  std::set<std::size_t> seen;
  for (const PlannedPair& p : plan.pairs)
    if (seen.insert(p.workload).second) out.push_back(plan.workloads[p.workload]);
  return out;
}

void print_summary(const TuneOptions& o, const std::string& path, const GpuIdentity& gpu,
                   const std::vector<int>& devices, const TunePlan& plan, const RunSummary& s, const Profile& done,
                   const std::string& counters_note, const JournalReplay& replayed) {
  const std::vector<NamedWorkload> workloads = planned_workloads(plan);
  if (o.json) {
    ordered_json j;
    j["schema_version"] = 1;
    j["profile"] = path;
    j["gpu"] = {{"name", gpu.name}, {"spec", gpu.spec}, {"devices", devices}};
    j["backend"] = o.backend;
    j["strategy"] = strategy_name(plan.strategy);
    j["precision"] = o.plan.precision;
    j["shard"] = o.shard;
    j["workloads"] = workloads.size();
    j["planned"] = s.planned;
    j["already_done"] = s.already_done;
    j["journal_replayed"] = replayed.added;
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
    return;
  }
  std::printf("profile   %s\n", path.c_str());
  std::printf("measured  %zu this run (%s), %zu before, %zu of %zu planned pairs in %.1f s\n", s.measured,
              status_counts(s.by_status).c_str(), s.already_done, s.already_done + s.measured, s.planned, s.elapsed_s);
  for (const NamedWorkload& w : workloads) {
    const auto it = done.best.find(w.name);
    if (it == done.best.end())
      std::printf("best      %-14s (none valid yet)\n", w.name.c_str());
    else
      std::printf("best      %-14s %-36s %10.4f ms  %7.2f TFLOP/s\n", w.name.c_str(), it->second.config.c_str(),
                  it->second.median_ms, w.workload.nominal_flops() / (it->second.median_ms * 1e-3) / 1e12);
  }
}

int tune_command(const TuneOptions& o) {
  validate_options(o);
  const Shard shard = shard_of_options(o);
  const std::vector<NamedWorkload> workloads = workloads_of(o.plan);
  // Host-side plan check first (d nothing implements), so the message is the same without a GPU.
  PlanOptions host_check;
  host_check.precision = precision_of(o.plan);
  try {
    make_plan(workloads, compiled_configs(), host_check);
  } catch (const PlanError& e) {
    throw CommandError{kExitUnsupported, e.what()};
  }

  const std::vector<int> devices = o.backend == "fake" ? std::vector<int>{0} : devices_of(o);
  const std::vector<GpuIdentity> ids = gpu_identities(o, devices);
  const GpuIdentity& gpu = ids.front();
  const std::string path = o.profile.empty() ? "profiles/" + gpu.spec + ".json" : o.profile;

  // Held until the tune ends: a second tune or fit of this profile is refused, naming this one.
  std::optional<ProfileLock> lock;
  try {
    lock.emplace(ProfileLock::acquire(path, "flashtune tune", o.wait_lock_s));
  } catch (const ProfileLockError& e) {
    throw CommandError{kExitUsage, e.what()};
  }

  const std::optional<model::GpuSpec> spec = spec_of(gpu.spec);
  if (parse_strategy(o.plan.strategy) == TuneStrategy::Model && !spec)
    throw CommandError{kExitUsage, "the model strategy needs a spec of " + gpu.name + " in " +
                                       model::default_gpu_spec_dir() + "; use --strategy exhaustive"};
  // Shards rank on the spec alone: each has its own profile, and all must plan the same pairs.
  const bool ranked = parse_strategy(o.plan.strategy) == TuneStrategy::Model;
  const model::ModelProfile ranking = ranked && shard.whole() ? ranking_profile(path) : model::ModelProfile{};
  std::string balance;
  const TunePlan plan = shard_plan(plan_of(o.plan, workloads, spec ? &*spec : nullptr, ranking), shard,
                                   spec ? &*spec : nullptr, balance);

  nlohmann::json settings = settings_json(o, devices);
  if (!shard.whole()) settings["shard"] = shard_settings(shard, balance);
  Profile initial = open_profile(path, gpu, planned_workloads(plan), settings);
  initial.tune_settings = settings;

  std::string counters_note;
  std::vector<std::unique_ptr<MeasurementBackend>> backends = make_backends(o, devices, counters_note);

  std::unique_ptr<ProfileStore> store;
  try {
    store = std::make_unique<ProfileStore>(path, std::move(initial));
  } catch (const ProfileError& e) {
    throw CommandError{kExitUsage, std::string(e.what()) + " (tune resumes from the profile and its journal)"};
  }
  const JournalReplay replayed = store->replayed();
  if (replayed.added || replayed.torn_tail)
    std::fprintf(stderr, "flashtune tune: %zu pairs folded in from the journal of a run that stopped%s\n",
                 replayed.added, replayed.torn_tail ? " (its last, unfinished line dropped)" : "");
  const std::size_t remaining = [&] {
    std::size_t n = 0;
    for (const WorkloadWork& w : remaining_work(plan, DoneIndex(store->snapshot()))) n += w.configs.size();
    return n;
  }();
  std::fprintf(stderr, "flashtune tune: %s on %zu GPU%s (%s), %zu workloads, %zu pairs (%s), %zu already in %s\n",
               gpu.name.c_str(), devices.size(), devices.size() == 1 ? "" : "s", gpu.spec.c_str(),
               planned_workloads(plan).size(), plan.pairs.size(), strategy_name(plan.strategy),
               plan.pairs.size() - remaining, path.c_str());

  install_stop_handlers();
  Progress progress(remaining, stderr);
  RunnerOptions ro;
  ro.stop = &stop_flag();
  ro.progress = &progress;
  std::vector<MeasurementBackend*> raw;
  for (auto& b : backends) raw.push_back(b.get());
  const RunSummary s = run_plan(plan, *store, raw, ro);
  print_summary(o, path, gpu, devices, plan, s, store->snapshot(), counters_note, replayed);
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
  add_plan_options(sub, o->plan);
  sub->add_option("--profile", o->profile, "Profile to write and resume (default profiles/<gpu spec>.json)");
  o->device_opt = sub->add_option("--device", o->device, "CUDA device index (default 0)");
  sub->add_option("--devices", o->devices, "'all': one worker per visible GPU, one merged profile");
  sub->add_option("--shard", o->shard,
                  "I/N: measure part I (0-based) of N of the plan, balanced by predicted time, into this profile; "
                  "join the parts with flashtune merge");
  sub->add_flag("--no-counters", o->no_counters, "Skip the CUPTI counter passes");
  sub->add_option("--time-cap", o->time_cap_s, "Sampling time cap per config, seconds (default 0.5)");
  sub->add_option("--rel-stdev", o->rel_stdev, "Stop sampling below this relative stdev (default 0.01)");
  sub->add_option("--min-samples", o->min_samples, "Minimum kept samples (default 10)");
  sub->add_option("--max-samples", o->max_samples, "Maximum samples per config (default 200)");
  sub->add_option("--warmup-ms", o->warmup_ms, "Warm-up per config, ms (default 50)");
  sub->add_option("--seed", o->seed, "Seed of the random inputs (mixed with each workload's name)");
  sub->add_option("--wait-lock", o->wait_lock_s,
                  "Seconds to wait while another process writes the profile (default 0: refuse at once)");
  sub->add_option("--backend", o->backend,
                  "cuda (default) or fake: no GPU, made-up deterministic measurements (tests of tune, resume, "
                  "shards, Slurm)");
  sub->add_option("--fake-delay-ms", o->fake_delay_ms, "Fake backend: milliseconds per pair (default 0)");
  sub->add_flag("--json", o->json, "Print the summary as JSON");
  sub->callback([o] {
    set_reporting_action("tune", [o] { return tune_command(*o); });
  });
}

}  // namespace flashtune::app
