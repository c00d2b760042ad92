// The real measurement backend: one GPU, one worker, over the pair measurement `run` uses too
// (tuner/pair_measurement.h). Per workload: fresh random inputs and the double reference, computed
// once and reused by every config. Per config: can_implement on this device, one run with the
// output poisoned (every element checked against the reference; a wrong result is recorded with its
// rel L2 and never timed), timing with the harness (L2 flushed, warm-up, clock-sag rule), counters
// from separate replay passes, and the compiled resources.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/registry.h"
#include "tuner/counter_source.h"
#include "tuner/pair_measurement.h"
#include "tuner/timing_harness.h"
#include "tuner/tune_runner.h"
#include "tuner/verify.h"

namespace flashtune {

struct CudaBackendOptions {
  HarnessOptions harness;
  std::uint64_t seed = 1;  // inputs of workload w come from hash(seed, w's name)
  float range = 1.0f;      // inputs uniform in [-range, range]
};

class CudaBackend : public MeasurementBackend {
 public:
  // Throws CudaError when the device cannot be set up (harness, flush buffer).
  CudaBackend(int device, CudaBackendOptions options, std::unique_ptr<CounterSource> counters);
  ~CudaBackend() override;

  WorkloadSetup begin_workload(const NamedWorkload& w) override;
  Measurement measure(const NamedWorkload& w, const TileConfig& c) override;
  bool usable() const override { return pair_.usable(); }
  std::string unusable_reason() const override { return pair_.unusable_reason(); }
  const DeviceLimits& limits() const { return pair_.limits(); }

 private:
  void flush_l2();

  CudaBackendOptions options_;
  std::unique_ptr<CounterSource> counters_;
  PairMeasurement pair_;
  DeviceBuffer<unsigned char> flush_;  // for the counter passes (the harness flushes its own samples)
  std::string workload_;               // the name of the workload whose inputs pair_ holds
};

}  // namespace flashtune
