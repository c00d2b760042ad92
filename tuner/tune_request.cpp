#include "tuner/tune_request.h"

#include <cuda_runtime_api.h>

#include <filesystem>
#include <memory>
#include <set>
#include <utility>

#include "kernels/traits/variants.h"
#include "model/profile.h"
#include "profile/model_profile.h"
#include "profile/profile_lock.h"
#include "profile/profile_store.h"
#include "tuner/counter_source.h"
#include "tuner/cuda_backend.h"
#include "tuner/device_check.h"
#include "tuner/fake_backend.h"
#include "tuner/gpu_identity.h"
#include "tuner/progress.h"

namespace flashtune {
namespace {

using Kind = TuneError::Kind;

void note(const TuneRequest& r, const std::string& line) {
  if (r.note) r.note(line);
}

std::vector<int> devices_of(const TuneRequest& r) {
  if (r.backend == TuneBackendKind::Fake) return {0};
  if (const auto problem = cuda_device_problem(r.all_devices ? 0 : r.device)) throw TuneError(Kind::NoDevice, *problem);
  if (!r.all_devices) return {r.device};
  int count = 0;
  cudaGetDeviceCount(&count);
  std::vector<int> all;
  for (int i = 0; i < count; ++i) all.push_back(i);
  return all;
}

// The GPUs the tune runs on: the visible ones (or the one device), or the fake backend's one.
std::vector<GpuIdentity> gpu_identities(const TuneRequest& r, const std::vector<int>& devices) {
  if (r.backend == TuneBackendKind::Fake) return {fake_gpu_identity()};
  std::vector<GpuIdentity> ids;
  try {
    for (int dev : devices) ids.push_back(query_gpu_identity(dev, model::default_gpu_spec_dir()));
  } catch (const std::exception& e) {
    throw TuneError(Kind::NoDevice, e.what());
  }
  for (const GpuIdentity& id : ids)
    if (id.name != ids.front().name)
      throw TuneError(Kind::Usage, "--devices all needs identical GPUs (device 0: " + ids.front().name + ", device " +
                                       std::to_string(id.device_index) + ": " + id.name + ")");
  return ids;
}

nlohmann::json settings_json(const TuneRequest& r, const std::vector<int>& devices) {
  const StoppingRule& rule = r.harness.rule;
  return {{"strategy", strategy_name(r.strategy)},  {"top_k", r.top_k},
          {"precision", precision_name(r.precision)},
          {"time_cap_s", rule.time_cap_s},
          {"target_rel_stdev", rule.target_rel_stdev}, {"min_samples", rule.min_samples},
          {"max_samples", rule.max_samples},
          {"warmup_ms", r.harness.warmup_min_ms},     {"seed", r.seed},            {"counters", r.counters},
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
Profile open_profile(const TuneRequest& r, const std::string& path, const GpuIdentity& gpu,
                     const std::vector<NamedWorkload>& workloads, const nlohmann::json& settings) {
  Profile p;
  if (std::filesystem::exists(path)) {
    try {
      p = load_profile(path);
    } catch (const ProfileError& e) {
      throw TuneError(Kind::Usage, std::string(e.what()) + " (fix or move it; tune resumes from it)");
    }
    if (p.gpu.spec != gpu.spec || p.gpu.name != gpu.name)
      throw TuneError(Kind::Usage, path + " was measured on " + p.gpu.name + " (" + p.gpu.spec + "), this GPU is " +
                                       gpu.name + " (" + gpu.spec + "): give another --profile");
    if (shard_text(p.tune_settings) != shard_text(settings))
      throw TuneError(Kind::Usage, path + " holds " + shard_text(p.tune_settings) + ", this tune is " +
                                       shard_text(settings) + ": give another --profile");
    const BuildInfo now = this_build();
    if (p.build.git_commit != now.git_commit || p.build.kernel_set != now.kernel_set)
      note(r, "warning: " + path + " was started by build " + p.build.git_commit + " (" + p.build.kernel_set +
                  " kernel set), this is " + now.git_commit + " (" + now.kernel_set + "); resuming anyway");
  } else {
    p.gpu = gpu;
    p.build = this_build();
  }
  try {
    add_workloads(p, workloads);
  } catch (const ProfileError& e) {
    throw TuneError(Kind::Usage, path + ": " + e.what());
  }
  return p;
}

// The model's view of the profile for ranking: its fitted coefficients and compiled registers.
model::ModelProfile ranking_profile(const std::string& profile_path) {
  if (!std::filesystem::exists(profile_path)) return {};
  try {
    return load_model_profile(profile_path);
  } catch (const std::exception& e) {
    throw TuneError(Kind::Usage, e.what());
  }
}

// One backend per GPU, each with its own counter source; one warning per distinct reason.
// `counters_note` says whether counters are collected.
std::vector<std::unique_ptr<MeasurementBackend>> make_backends(const TuneRequest& r, const std::vector<int>& devices,
                                                               std::string& counters_note) {
  std::vector<std::unique_ptr<MeasurementBackend>> backends;
  counters_note = "ok";
  if (r.backend == TuneBackendKind::Fake) {
    FakeBackendOptions fo;
    fo.delay_ms = r.fake_delay_ms;
    fo.counters = r.counters;
    if (!r.counters) counters_note = "unavailable: disabled by --no-counters";
    backends.push_back(std::make_unique<FakeBackend>(fo));
    return backends;
  }
  std::set<std::string> warned;
  CudaBackendOptions bo;
  bo.harness = r.harness;
  bo.seed = r.seed;
  try {
    for (int dev : devices) {
      std::unique_ptr<CounterSource> counters =
          r.counters ? cupti_counters(dev) : no_counters("disabled by --no-counters");
      const std::string why = counters->unavailable_reason();
      if (!why.empty() && r.counters && warned.insert(why).second)
        note(r, "warning: hardware counters unavailable on device " + std::to_string(dev) + " (" + why +
                    "); tuning on timings alone");
      if (!why.empty()) counters_note = "unavailable: " + why;
      backends.push_back(std::make_unique<CudaBackend>(dev, bo, std::move(counters)));
    }
  } catch (const std::exception& e) {
    throw TuneError(Kind::Failure, std::string("setting up the GPU: ") + e.what());
  }
  return backends;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", s);
  return buf;
}

// The shard's part of the plan (the whole plan without a shard), and how it was balanced.
TunePlan shard_plan(const TuneRequest& r, const TunePlan& plan, const model::GpuSpec* spec, std::string& balance) {
  const Shard& shard = r.shard;
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
  note(r, "shard " + shard.text() + ": " + std::to_string(mine.pairs.size()) + " of " +
              std::to_string(plan.pairs.size()) + " pairs, predicted " + seconds_text(part) + " s of " +
              seconds_text(total) + " s (balanced by " + balance + ")");
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

TunePlan make_tune_plan(const TuneRequest& r, const model::GpuSpec* spec, const model::ModelProfile& ranking) {
  PlanOptions po;
  po.strategy = r.strategy;
  po.top_k = r.top_k;
  po.precision = r.precision;
  po.gpu = spec;
  po.profile = ranking;
  try {
    return make_plan(r.workloads, compiled_configs(), po);
  } catch (const PlanError& e) {
    throw TuneError(Kind::Unsupported, e.what());
  }
}

}  // namespace

TuneOutcome run_tune(const TuneRequest& r) {
  // Host-side plan check first (a d nothing implements), so the message is the same without a GPU.
  PlanOptions host_check;
  host_check.precision = r.precision;
  try {
    make_plan(r.workloads, compiled_configs(), host_check);
  } catch (const PlanError& e) {
    throw TuneError(Kind::Unsupported, e.what());
  }

  TuneOutcome out;
  out.devices = devices_of(r);
  const std::vector<GpuIdentity> ids = gpu_identities(r, out.devices);
  out.gpu = ids.front();
  const GpuIdentity& gpu = out.gpu;
  out.profile_path = r.profile_path.empty() ? "profiles/" + gpu.spec + ".json" : r.profile_path;
  const std::string& path = out.profile_path;

  // Held until the tune ends: a second tune or fit of this profile is refused, naming this one.
  std::optional<ProfileLock> lock;
  try {
    lock.emplace(ProfileLock::acquire(path, "flashtune tune", r.wait_lock_s));
  } catch (const ProfileLockError& e) {
    throw TuneError(Kind::Usage, e.what());
  }

  const std::optional<model::GpuSpec> spec = tune_spec(gpu.spec);
  if (r.strategy == TuneStrategy::Model && !spec)
    throw TuneError(Kind::Usage, "the model strategy needs a spec of " + gpu.name + " in " +
                                     model::default_gpu_spec_dir() + "; use --strategy exhaustive");
  // Shards rank on the spec alone: each has its own profile, and all must plan the same pairs.
  const bool ranked = r.strategy == TuneStrategy::Model;
  const model::ModelProfile ranking = ranked && r.shard.whole() ? ranking_profile(path) : model::ModelProfile{};
  std::string balance;
  out.plan = shard_plan(r, make_tune_plan(r, spec ? &*spec : nullptr, ranking), spec ? &*spec : nullptr, balance);
  out.workloads = planned_workloads(out.plan);

  nlohmann::json settings = settings_json(r, out.devices);
  if (!r.shard.whole()) settings["shard"] = shard_settings(r.shard, balance);
  Profile initial = open_profile(r, path, gpu, out.workloads, settings);
  initial.tune_settings = settings;

  std::vector<std::unique_ptr<MeasurementBackend>> backends = make_backends(r, out.devices, out.counters_note);

  std::unique_ptr<ProfileStore> store;
  try {
    store = std::make_unique<ProfileStore>(path, std::move(initial));
  } catch (const ProfileError& e) {
    throw TuneError(Kind::Usage, std::string(e.what()) + " (tune resumes from the profile and its journal)");
  }
  out.replayed = store->replayed();
  if (out.replayed.added || out.replayed.torn_tail)
    note(r, std::to_string(out.replayed.added) + " pairs folded in from the journal of a run that stopped" +
                (out.replayed.torn_tail ? " (its last, unfinished line dropped)" : ""));
  std::size_t remaining = 0;
  for (const WorkloadWork& w : remaining_work(out.plan, DoneIndex(store->snapshot()))) remaining += w.configs.size();
  const std::size_t n = out.devices.size();
  note(r, gpu.name + " on " + std::to_string(n) + " GPU" + (n == 1 ? "" : "s") + " (" + gpu.spec + "), " +
              std::to_string(out.workloads.size()) + " workloads, " + std::to_string(out.plan.pairs.size()) +
              " pairs (" + strategy_name(out.plan.strategy) + "), " + std::to_string(out.plan.pairs.size() - remaining) +
              " already in " + path);

  if (r.before_measuring) r.before_measuring();
  std::optional<Progress> progress;
  if (r.progress) progress.emplace(remaining, r.progress);
  RunnerOptions ro;
  ro.stop = r.stop;
  ro.progress = progress ? &*progress : nullptr;
  std::vector<MeasurementBackend*> raw;
  for (auto& b : backends) raw.push_back(b.get());
  out.summary = run_plan(out.plan, *store, raw, ro);
  out.profile = store->snapshot();
  return out;
}

}  // namespace flashtune
