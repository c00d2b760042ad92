// Hardware counters for one kernel launch through the CUDA 13 CUPTI Range Profiler
// (cupti_range_profiler.h) and its Host API (cupti_profiler_host.h). User replay, auto range:
// the launch is run once per pass the metric set needs, with before_pass() (an L2 flush) ahead of
// every pass, and the kernel it launches is the one range. Counters come from these replay
// passes only, never from timed runs: the range profiler is enabled on the context just for the
// duration of measure(). docs/counters.md lists the metrics and what they were checked against.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flashtune {

struct CounterResult {
  bool ok = false;
  std::string status;                     // "ok" or "unavailable: <reason>"
  std::map<std::string, double> values;   // metric name -> value (empty unless ok)
};

class CuptiProfiler {
 public:
  // The metrics the model is checked against (docs/counters.md), all valid on GH100 (sm_90).
  static std::vector<std::string> default_metrics();
  // Those of them only Hopper (sm_90) and later chips have: wgmma (GMMA) and TMA counts. create()
  // leaves them out where the chip does not know them, so the same set works on earlier GPUs.
  static const std::vector<std::string>& hopper_metrics();
  // `metrics` less the Hopper-only ones `problem` (the chip's metric check: empty when valid)
  // rejects; any other metric it rejects throws std::invalid_argument("metric '<name>' is not
  // valid on <chip>: <problem>").
  static std::vector<std::string> metrics_for_chip(
      const std::vector<std::string>& metrics, const std::string& chip,
      const std::function<std::optional<std::string>(const std::string&)>& problem);

  // Never throws for missing permission, another profiler holding the device, no CUPTI support,
  // no device or an unknown metric: returns a profiler whose available() is false and whose
  // reason() says why, e.g. "cuptiRangeProfilerEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES".
  // Hopper-only metrics the chip lacks are dropped instead (metrics() lists what is collected).
  static CuptiProfiler create(int device, std::vector<std::string> metrics);

  bool available() const;
  const std::string& reason() const;  // empty when available
  const std::vector<std::string>& metrics() const;  // those collected (after create() dropped any)
  int passes() const;  // replay passes one measure() runs (0 when unavailable)

  // Replays `launch` once per pass the metric set needs (user replay; the range is the one kernel
  // that `launch` starts, which must be the same in every pass and must not depend on its own
  // earlier output); before_pass() runs before every pass, outside the range. Returns the value
  // of every metric, or ok=false with "unavailable: <reason>" when CUPTI fails or `launch` did not
  // start exactly one kernel. Exceptions from `launch` / `before_pass`, and CUDA errors after the
  // launch (flashtune::CudaError), propagate after profiling was switched off again.
  CounterResult measure(const std::function<void()>& launch, const std::function<void()>& before_pass);

  ~CuptiProfiler();
  CuptiProfiler(CuptiProfiler&&) noexcept;
  CuptiProfiler& operator=(CuptiProfiler&&) noexcept;
  CuptiProfiler(const CuptiProfiler&) = delete;
  CuptiProfiler& operator=(const CuptiProfiler&) = delete;

 private:
  struct Impl;
  explicit CuptiProfiler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashtune
