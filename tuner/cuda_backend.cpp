#include "tuner/cuda_backend.h"
#include "model/number_text.h"

#include <chrono>
#include <cstdio>
#include <functional>
#include <utility>

#include "kernels/cuda_check.h"
#include "kernels/reference.h"

namespace flashtune {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// FNV-1a: a stable seed per workload name, so a rerun sees the same inputs.
std::uint64_t name_hash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

TimingSummary summary_of(const TimingResult& r, const StoppingRule& rule) {
  TimingSummary t;
  const TimingStats& s = r.stats;
  t.median_ms = s.median_ms;
  t.min_ms = s.min_ms;
  t.max_ms = s.max_ms;
  t.mean_ms = s.mean_ms;
  t.stdev_ms = s.stdev_ms;
  t.rel_stdev = s.rel_stdev;
  t.samples = s.samples;
  t.dropped = s.dropped;
  t.sm_clock_mhz = s.clock_known ? s.clock_median_mhz : 0;
  t.stop = stop_reason_name(s.stop_reason);
  SampleSet set(rule);
  for (const Sample& x : r.samples) set.add(x);
  const std::vector<bool> kept = set.kept_mask();
  for (std::size_t i = 0; i < r.samples.size(); ++i)
    if (kept[i]) t.samples_ms.push_back(r.samples[i].ms);
  return t;
}

}  // namespace

CudaBackend::CudaBackend(int device, CudaBackendOptions options, std::unique_ptr<CounterSource> counters)
    : options_(options),
      counters_(std::move(counters)),
      pair_(device, DeviceLimits::query(device), options.harness),
      flush_(static_cast<std::size_t>(2 * pair_.limits().l2_bytes)) {}

CudaBackend::~CudaBackend() = default;

void CudaBackend::flush_l2() {
  FLASHTUNE_CUDA_CHECK(cudaMemsetAsync(flush_.data(), 0, flush_.bytes(), pair_.stream()));
}

WorkloadSetup CudaBackend::begin_workload(const NamedWorkload& nw) {
  const int device = pair_.device();
  FLASHTUNE_CUDA_CHECK(cudaSetDevice(device));
  pair_.drop_inputs();
  workload_ = nw.name;
  const Workload& w = nw.workload;
  const double elements = double(attention_elements(w)), kv = double(kv_elements(w));
  // Q, K, V, O as float plus the reference's double output while it is computed.
  const double need = elements * (2 * sizeof(float) + sizeof(double)) + kv * 2 * sizeof(float);
  std::size_t free_bytes = 0, total_bytes = 0;
  FLASHTUNE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (need > 0.9 * double(free_bytes))
    return {false, status::kResources,
            "inputs, output and reference need " + number_text(need / double(1 << 30)) + " GiB, the device has " +
                number_text(double(free_bytes) / double(1 << 30)) + " GiB free"};
  try {
    pair_.use_random_inputs(w, options_.range, options_.seed ^ name_hash(nw.name));
    // Computed before the first config, so that every config's elapsed time is its own.
    pair_.reference();
  } catch (const CudaError& e) {
    pair_.drop_inputs();
    pair_.note_cuda_error("preparing " + nw.name);
    if (!pair_.usable()) throw CudaError(pair_.unusable_reason());
    return {false, status::kResources, std::string("preparing inputs and reference: ") + e.what()};
  }
  return {};
}

Measurement CudaBackend::measure(const NamedWorkload& nw, const TileConfig& c) {
  const auto start = std::chrono::steady_clock::now();
  Measurement m;
  m.workload = nw.name;
  m.config = c.name();
  m.device_index = pair_.device();
  m.counters_status = "unavailable: config not timed";
  if (!pair_.has_inputs() || workload_ != nw.name) throw CudaError("measure(" + nw.name + ") before begin_workload");

  PairOptions po;  // verified, and timed only when right
  const PairResult r = pair_.measure(c, po);
  m.status = r.status;
  m.reason = r.reason;
  if (r.resources)
    m.resources = ResourceUsage{r.resources->registers, r.resources->static_smem_bytes, r.resources->dynamic_smem_bytes,
                                r.resources->local_bytes, r.resources->threads_per_block};
  if (r.check) m.verify = VerifyResult{r.check->rel_l2, r.check->max_abs};
  if (r.timing) m.timing = summary_of(*r.timing, pair_.harness_options().rule);
  if (r.ok() && r.timing) {
    const KernelInstance* kernel = find_kernel(c);
    try {
      const CounterResult cr = counters_->measure(
          [&] { FLASHTUNE_CUDA_CHECK(pair_.launch(*kernel)); }, [&] { flush_l2(); });
      m.counters_status = cr.status;
      if (cr.ok) m.counters = cr.values;
    } catch (const CudaError& e) {
      m.counters_status = std::string("unavailable: ") + e.what();
      pair_.note_cuda_error(c.name() + " (counter passes)");
    }
  }
  m.elapsed_s = seconds_since(start);
  m.timestamp = utc_timestamp();
  return m;
}

}  // namespace flashtune
