// The tune use case without a command line (docs/tuning.md): a request of plain fields, executed
// by run_tune(). It plans the (workload, config) pairs (every compiled config of the workload's d,
// or the model's top K; one balanced shard of them with --shard), opens or resumes the GPU's
// profile under its lock, measures the pairs not yet in it on one backend per GPU (the CUDA one
// over the pair measurement `run` shares, tuner/pair_measurement.h, or the fake one of the CI
// tests), and returns what a front end reports. Checks that need no GPU come first, so bad input
// gets the same answer on machines without one.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/traits/tile_config.h"
#include "model/gpu_spec.h"
#include "profile/profile.h"
#include "profile/profile_journal.h"
#include "profile/workload_set.h"
#include "tuner/timing_harness.h"
#include "tuner/tune_plan.h"
#include "tuner/tune_runner.h"
#include "tuner/tune_shard.h"

namespace flashtune {

enum class TuneBackendKind {
  Cuda,  // the GPUs of this machine
  Fake,  // no GPU: made-up deterministic measurements (tests of tune, resume, shards, Slurm)
};

struct TuneRequest {
  // What to measure.
  std::vector<NamedWorkload> workloads;  // at least one, names unique (merge_workloads)
  TuneStrategy strategy = TuneStrategy::Exhaustive;
  int top_k = 0;                          // model strategy: the K best-predicted configs per workload
  Precision precision = Precision::Fp32;  // which configs are planned (tune_plan.h)
  Shard shard;                            // the part of the plan this tune measures; whole by default
  // Where and how.
  std::string profile_path;  // empty: profiles/<gpu spec>.json
  int device = 0;
  bool all_devices = false;  // one worker per visible GPU (identical ones), one profile
  TuneBackendKind backend = TuneBackendKind::Cuda;
  int fake_delay_ms = 0;     // fake backend: sleep per pair
  bool counters = true;      // CUPTI counter passes after the timed runs
  HarnessOptions harness;    // sampling: stopping rule and warm-up of every pair
  std::uint64_t seed = 1;    // the inputs of workload w come from hash(seed, w's name)
  double wait_lock_s = 0;    // wait this long for another writer of the profile before refusing
  // How the tune talks and stops.
  const std::atomic<bool>* stop = nullptr;  // set (e.g. by SIGINT): finish the current pair, then stop
  std::function<void()> before_measuring;   // called once set up, right before the first pair
  std::function<void(const std::string&)> note;  // a line for the person watching (warnings, the plan)
  std::FILE* progress = stderr;                  // where the progress display goes; nullptr: none
};

// Why a tune could not start: the kind says which exit a front end gives it.
class TuneError : public std::runtime_error {
 public:
  enum class Kind {
    Usage,        // bad input: a profile of another GPU or shard, a corrupt profile, a locked one
    Unsupported,  // a workload no compiled config implements
    NoDevice,     // no usable CUDA GPU (the message is the CUDA error alone)
    Failure,      // the GPU could not be set up
  };
  TuneError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

struct TuneOutcome {
  std::string profile_path;
  GpuIdentity gpu;
  std::vector<int> devices;
  TunePlan plan;                          // the part of the plan this tune measured
  std::vector<NamedWorkload> workloads;   // the workloads of its pairs, plan order
  RunSummary summary;
  Profile profile;                        // the profile as the tune left it
  std::string counters_note;              // "ok" or "unavailable: <why>"
  JournalReplay replayed;                 // pairs folded in from the journal of a run that stopped
};

// Runs the request. Throws TuneError before the first pair; afterwards the outcome's summary says
// how the run ended (complete, interrupted, or stopped by a backend's error).
TuneOutcome run_tune(const TuneRequest& request);

}  // namespace flashtune
