// A MeasurementBackend without a GPU, for CI tests of the tune runner and resume: deterministic
// "times" from the workload and config, a few configs that fail verification or do not fit, and
// switches that simulate a crash (throw after k measurements) or a slow GPU (sleep per pair).
#pragma once

#include <atomic>
#include <string>

#include "tuner/tune_runner.h"

namespace flashtune {

struct FakeBackendOptions {
  long long fail_after = -1;  // >= 0: measure() throws once it has returned this many results
  int delay_ms = 0;           // sleep in every measure() (for kill tests)
  int device_index = 0;
  bool counters = true;
};

class FakeBackend : public MeasurementBackend {
 public:
  explicit FakeBackend(FakeBackendOptions options = {}) : options_(options) {}
  WorkloadSetup begin_workload(const NamedWorkload& w) override;
  Measurement measure(const NamedWorkload& w, const TileConfig& c) override;
  long long measure_calls() const { return calls_.load(); }
  long long workloads_begun() const { return workloads_.load(); }

  // The median the fake reports for a pair (ms): grows with the work, varies with the tile.
  static double fake_time_ms(const Workload& w, const TileConfig& c);
  // Pairs the fake reports as wrong-result (plain layout with Br == Bc == 64): never timed.
  static bool fake_wrong(const TileConfig& c);

 private:
  FakeBackendOptions options_;
  std::atomic<long long> calls_{0}, returned_{0}, workloads_{0};
};

// The GPU a fake-backend profile records ("Fake GPU", spec "fake-gpu": no spec file, so nothing
// mistakes its made-up times for a real GPU's).
GpuIdentity fake_gpu_identity();

}  // namespace flashtune
