// `flashtune tune`: on one GPU (or every visible one), measure the (workload, config) pairs of a
// plan (every compiled config of the workload's d, or the model's top K) into a profile: verified
// on fresh random inputs against the double reference, timed by the harness, counters from CUPTI
// where permitted, resources. Each pair is appended to the profile's journal as it finishes and
// the profile is compacted at the end (profile/profile_store.h); the profile is locked against a
// second writer; rerunning the same command resumes; SIGINT/SIGTERM finish the current pair, keep
// everything, exit 130. --shard I/N measures one of N balanced parts of the plan (a Slurm array
// task); --backend fake measures nothing (CI). Bad input is reported (one line) before any CUDA call.
// The tune itself is tuner/tune_request.h's run_tune; this file parses the options into a
// TuneRequest and prints the outcome.
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
#include <string>

#include "cli_options.h"
#include "commands.h"
#include "exit_codes.h"
#include "plan_options.h"
#include "profile/profile_journal.h"
#include "tuner/tune_request.h"

namespace flashtune::app {
namespace {

using nlohmann::ordered_json;

constexpr int kExitInterrupted = 130;  // 128 + SIGINT, what shells report for Ctrl-C

// A tune samples every pair of a plan: shorter than run's one config.
SamplingCliOptions tune_sampling() {
  SamplingCliOptions s;
  s.time_cap_s = 0.5;
  s.max_samples = 200;
  return s;
}

struct TuneOptions {
  PlanCliOptions plan;
  std::string profile;
  int device = 0;
  std::string devices;
  bool no_counters = false;
  SamplingCliOptions sampling = tune_sampling();
  std::uint64_t seed = 1;
  bool json = false;
  std::string shard;              // "I/N": measure shard I of N (tune_shard.h)
  std::string backend = "cuda";   // cuda | fake (no GPU: made-up measurements, for CI)
  int fake_delay_ms = 0;          // fake backend: sleep per pair
  double wait_lock_s = 0;         // wait this long for another writer's lock before refusing
  CLI::Option* device_opt = nullptr;
};

bool given(const CLI::Option* o) { return o != nullptr && o->count() > 0; }

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
  try {
    validate_sampling(o.sampling);
  } catch (const UsageError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
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

// ---- the request and its report -----------------------------------------------------------

TuneRequest request_of(const TuneOptions& o) {
  TuneRequest r;
  r.shard = shard_of_options(o);
  r.workloads = workloads_of(o.plan);
  r.strategy = parse_strategy(o.plan.strategy);
  r.top_k = o.plan.top_k.value_or(0);
  r.precision = precision_of(o.plan);
  r.profile_path = o.profile;
  r.device = o.device;
  r.all_devices = o.devices == "all";
  r.backend = o.backend == "fake" ? TuneBackendKind::Fake : TuneBackendKind::Cuda;
  r.fake_delay_ms = o.fake_delay_ms;
  r.counters = !o.no_counters;
  r.harness = harness_options_of(o.sampling);
  r.seed = o.seed;
  r.wait_lock_s = o.wait_lock_s;
  r.stop = &stop_flag();
  r.before_measuring = install_stop_handlers;
  r.note = [](const std::string& line) { std::fprintf(stderr, "flashtune tune: %s\n", line.c_str()); };
  return r;
}

int exit_code_of(TuneError::Kind kind) {
  switch (kind) {
    case TuneError::Kind::Usage: return kExitUsage;
    case TuneError::Kind::Unsupported: return kExitUnsupported;
    case TuneError::Kind::NoDevice: return kExitNoDevice;
    case TuneError::Kind::Failure: break;
  }
  return kExitFailure;
}

std::string status_counts(const std::map<std::string, std::size_t>& by_status) {
  std::string s;
  for (const auto& [st, n] : by_status) s += (s.empty() ? "" : ", ") + st + " " + std::to_string(n);
  return s.empty() ? "none" : s;
}

void print_summary(const TuneOptions& o, const TuneOutcome& t) {
  const RunSummary& s = t.summary;
  const Profile& done = t.profile;
  if (o.json) {
    ordered_json j;
    j["schema_version"] = 1;
    j["profile"] = t.profile_path;
    j["gpu"] = {{"name", t.gpu.name}, {"spec", t.gpu.spec}, {"devices", t.devices}};
    j["backend"] = o.backend;
    j["strategy"] = strategy_name(t.plan.strategy);
    j["precision"] = o.plan.precision;
    j["shard"] = o.shard;
    j["workloads"] = t.workloads.size();
    j["planned"] = s.planned;
    j["already_done"] = s.already_done;
    j["journal_replayed"] = t.replayed.added;
    j["measured"] = s.measured;
    j["by_status"] = s.by_status;
    j["counters"] = t.counters_note;
    j["interrupted"] = s.interrupted;
    j["complete"] = s.complete();
    j["error"] = s.error;
    j["elapsed_s"] = s.elapsed_s;
    ordered_json best = ordered_json::object();
    for (const NamedWorkload& w : t.workloads)
      if (done.best.count(w.name))
        best[w.name] = {{"config", done.best.at(w.name).config}, {"median_ms", done.best.at(w.name).median_ms}};
    j["best"] = best;
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("profile   %s\n", t.profile_path.c_str());
  std::printf("measured  %zu this run (%s), %zu before, %zu of %zu planned pairs in %.1f s\n", s.measured,
              status_counts(s.by_status).c_str(), s.already_done, s.already_done + s.measured, s.planned, s.elapsed_s);
  for (const NamedWorkload& w : t.workloads) {
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
  TuneOutcome t;
  try {
    t = run_tune(request_of(o));
  } catch (const TuneError& e) {
    const int code = exit_code_of(e.kind());
    throw CommandError{code, code == kExitNoDevice ? std::string("flashtune tune needs a CUDA GPU: ") + e.what()
                                                   : std::string(e.what())};
  }
  print_summary(o, t);
  const RunSummary& s = t.summary;
  if (!s.error.empty()) {
    // Where the pairs are, truthfully: a journal still there (an append or the final compaction
    // failed, e.g. a full disk) holds the pairs the profile does not.
    std::error_code ec;
    const std::string journal = journal_path(t.profile_path);
    if (std::filesystem::exists(std::filesystem::symlink_status(journal, ec)))
      std::fprintf(stderr,
                   "flashtune tune: stopped: %s (the pairs measured since the profile was last written are in %s, "
                   "not yet in %s; rerun the same command once that is fixed to fold them in)\n",
                   s.error.c_str(), journal.c_str(), t.profile_path.c_str());
    else
      std::fprintf(stderr, "flashtune tune: stopped: %s (everything measured so far is in %s)\n", s.error.c_str(),
                   t.profile_path.c_str());
    return kExitFailure;
  }
  if (s.interrupted) {
    std::fprintf(stderr, "flashtune tune: interrupted; %zu of %zu pairs in %s; rerun the same command to resume\n",
                 s.already_done + s.measured, s.planned, t.profile_path.c_str());
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
  add_sampling_options(sub, o->sampling);
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
