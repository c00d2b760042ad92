// Executes a tune plan: for every (workload, config) pair not yet in the profile, a measurement
// from a MeasurementBackend (the CUDA one on a GPU, a fake one in CI), recorded at once (the
// store's journal, profile/profile_store.h), so an interrupted tune resumes where it stopped with
// nothing lost and nothing measured twice. Several backends (one per GPU) pull whole workloads from one
// queue and record into one profile under a mutex. Host-only.
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "profile/profile.h"
#include "profile/profile_store.h"
#include "tuner/progress.h"
#include "tuner/tune_plan.h"

namespace flashtune {

// What preparing a workload gave: ok, or a status (e.g. resources: inputs do not fit the device
// memory) that every config of the workload is then recorded with.
struct WorkloadSetup {
  bool ok = true;
  std::string status, reason;
};

class MeasurementBackend {
 public:
  virtual ~MeasurementBackend() = default;
  // Inputs and reference for a workload, before its first config on this backend.
  virtual WorkloadSetup begin_workload(const NamedWorkload& w) = 0;
  // One pair, start to finish: implement check, verify, time, counters, resources. Failures of the
  // config are a status in the result; an exception means the backend cannot go on.
  virtual Measurement measure(const NamedWorkload& w, const TileConfig& c) = 0;
  // False once the backend cannot measure any more (e.g. a kernel fault lost the CUDA context);
  // unusable_reason() says why. Checked after every recorded measurement.
  virtual bool usable() const { return true; }
  virtual std::string unusable_reason() const { return ""; }
};

struct RunnerOptions {
  const std::atomic<bool>* stop = nullptr;  // set (e.g. by SIGINT): finish the current pair, then stop
  Progress* progress = nullptr;
};

struct RunSummary {
  std::size_t planned = 0;       // pairs in the plan
  std::size_t already_done = 0;  // skipped: in the profile before this run
  std::size_t measured = 0;      // recorded by this run
  std::map<std::string, std::size_t> by_status;  // of the pairs recorded by this run
  bool interrupted = false;      // the stop flag ended the run early
  std::string error;             // non-empty: a backend failed and the run stopped (what happened)
  double elapsed_s = 0;
  bool complete() const { return !interrupted && error.empty() && already_done + measured == planned; }
};

// Runs the plan's pairs that `store` does not hold yet, one thread per backend (inline for one),
// then compacts the store. Never throws for a backend or write failure: the summary says what
// happened; everything recorded before it is in the profile (or its journal, if compaction failed).
RunSummary run_plan(const TunePlan& plan, ProfileStore& store, const std::vector<MeasurementBackend*>& backends,
                    const RunnerOptions& options);

// The plan's pairs not in `done`, grouped by workload (plan order kept).
struct WorkloadWork {
  std::size_t workload = 0;
  std::vector<TileConfig> configs;
};
std::vector<WorkloadWork> remaining_work(const TunePlan& plan, const DoneIndex& done);

}  // namespace flashtune
