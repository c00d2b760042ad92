// Times one kernel launch the careful way (docs/measurement.md): warm-up, then samples, each with
// L2 flushed first and CUDA events around the launch alone; the SM clock read around every sample
// and samples taken while it sagged dropped. The statistics and stopping logic live in
// sample_stats.h; this part only drives the GPU. It never sets clocks.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cuda_check.h"  // CudaError, FLASHTUNE_CUDA_CHECK
#include "tuner/sample_stats.h"

namespace flashtune {

// How a sample's L2 flush empties the cache. Write (memset of 2x the L2): the tool's method since
// the start, and every profile's; the flush's own zeros are left dirty in L2 and written back to
// DRAM beside the timed call's first reads (about half the L2 on the H100: ~10 us of a 50 us decode
// call). Read (a kernel reads 2x the L2): the lines the call finds are clean, as after the
// read-mostly work that precedes attention in a model's decode step (the weights of the previous
// matrix products; the activations it writes are kilobytes).
enum class L2Flush { Write, Read };
const char* l2_flush_name(L2Flush f);
// The flush named "write" or "read" (l2_flush_name's names); nullopt for any other text.
std::optional<L2Flush> parse_l2_flush(const std::string& name);

struct HarnessOptions {
  StoppingRule rule;
  int warmup_min_launches = 3;  // warm-up runs at least this many launches ...
  double warmup_min_ms = 50;    // ... and at least this long (lets the clock ramp up)
  int warmup_max_launches = 1000;
  bool flush_l2 = true;
  L2Flush flush_kind = L2Flush::Write;
};

struct TimingResult {
  TimingStats stats;
  std::vector<Sample> samples;  // every sample taken, dropped ones included
  int warmup_launches = 0;
  double sampling_s = 0;        // wall time spent sampling
  long long flush_bytes = 0;    // bytes written (or read) before each sample to flush L2 (0: no flush)
  L2Flush flush_kind = L2Flush::Write;
  std::string clock_source;     // "nvml", or why the clock is unknown
};

// Launches one kernel on the stream it is given and returns the launch error.
using LaunchFn = std::function<cudaError_t(cudaStream_t)>;

class TimingHarness {
 public:
  // Allocates the L2 flush buffer (2x the device's L2), a stream and events on `device`, and opens
  // NVML (loaded at run time; without it the clock is recorded as unknown). Throws CudaError.
  explicit TimingHarness(int device = 0, HarnessOptions options = {});
  ~TimingHarness();
  TimingHarness(const TimingHarness&) = delete;
  TimingHarness& operator=(const TimingHarness&) = delete;

  // Throws CudaError when a launch or a CUDA call fails.
  TimingResult time(const LaunchFn& launch);

  cudaStream_t stream() const;
  const HarnessOptions& options() const;
  void set_options(const HarnessOptions& options);
  // "nvml" when SM clocks are read, else the reason they are not.
  std::string clock_source() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashtune
