#include "tuner/cuda_backend.h"

#include <chrono>
#include <cstdio>
#include <functional>
#include <utility>

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

std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
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
    : device_(device),
      options_(options),
      counters_(std::move(counters)),
      limits_(DeviceLimits::query(device)),
      harness_(device, options.harness),
      flush_(static_cast<std::size_t>(2 * limits_.l2_bytes)) {}

CudaBackend::~CudaBackend() = default;

void CudaBackend::flush_l2() {
  check_cuda(cudaMemsetAsync(flush_.data(), 0, flush_.bytes(), harness_.stream()), "cudaMemsetAsync(L2 flush)");
}

void CudaBackend::check_context(const std::string& after) {
  cudaGetLastError();  // clear a non-sticky error
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess)
    unusable_ = "device " + std::to_string(device_) + ": CUDA context lost after " + after + " (" +
                cudaGetErrorName(err) + "); rerun the same command to resume";
}

WorkloadSetup CudaBackend::begin_workload(const NamedWorkload& nw) {
  check_cuda(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")");
  inputs_.reset();
  out_ = DeviceBuffer<float>();
  reference_.clear();
  reference_.shrink_to_fit();
  workload_ = nw.name;
  const Workload& w = nw.workload;
  const double elements = double(attention_elements(w));
  // Q, K, V, O as float plus the reference's double output while it is computed.
  const double need = elements * (4 * sizeof(float) + sizeof(double));
  std::size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  if (need > 0.9 * double(free_bytes))
    return {false, status::kResources,
            "inputs, output and reference need " + number_text(need / double(1 << 30)) + " GiB, the device has " +
                number_text(double(free_bytes) / double(1 << 30)) + " GiB free"};
  try {
    inputs_ = random_inputs(w, -options_.range, options_.range, options_.seed ^ name_hash(nw.name), harness_.stream());
    out_ = DeviceBuffer<float>(inputs_->elements());
    reference_ = reference_on_host(*inputs_, harness_.stream());
  } catch (const CudaError& e) {
    inputs_.reset();
    check_context("preparing " + nw.name);
    if (!usable()) throw CudaError(unusable_);
    return {false, status::kResources, std::string("preparing inputs and reference: ") + e.what()};
  }
  return {};
}

Measurement CudaBackend::measure(const NamedWorkload& nw, const TileConfig& c) {
  const auto start = std::chrono::steady_clock::now();
  check_cuda(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")");
  Measurement m;
  m.workload = nw.name;
  m.config = c.name();
  m.device_index = device_;
  m.counters_status = "unavailable: config not timed";
  auto done = [&]() -> Measurement {
    m.elapsed_s = seconds_since(start);
    m.timestamp = utc_timestamp();
    return m;
  };
  const Workload& w = nw.workload;
  const KernelInstance* kernel = find_kernel(c);
  if (!kernel) {
    m.status = status::kCompile;
    m.reason = "not compiled into this build";
    return done();
  }
  const KernelResources r = kernel->resources();
  m.resources = ResourceUsage{r.registers, r.static_smem_bytes, r.dynamic_smem_bytes, r.local_bytes, r.threads_per_block};
  const Support support = kernel->can_implement(w, limits_);
  if (!support) {
    m.status = status::kResources;
    m.reason = support.reason;
    return done();
  }
  if (!inputs_ || workload_ != nw.name) throw CudaError("measure(" + nw.name + ") before begin_workload");

  const float *q = inputs_->q.data(), *k = inputs_->k.data(), *v = inputs_->v.data();
  float* o = out_.data();
  const cudaStream_t stream = harness_.stream();
  try {
    const std::vector<float> out = run_once(*kernel, *inputs_, out_, stream);
    const ErrorStats e = compare_to_reference(out.data(), reference_.data(), out.size());
    m.verify = VerifyResult{e.rel_l2, e.max_abs};
    const double tolerance = rel_l2_tolerance(variant_precision(c.variant));
    if (!e.passes(tolerance)) {
      m.status = status::kWrongResult;
      m.reason = "rel_l2 " + number_text(e.rel_l2) + " (tolerance " + number_text(tolerance) + "), " +
                 std::to_string(e.nonfinite) + " non-finite";
      return done();
    }
    const TimingResult t = harness_.time([=](cudaStream_t s) { return kernel->launch(q, k, v, o, w, s); });
    m.timing = summary_of(t, harness_.options().rule);
  } catch (const CudaError& e) {
    m.status = status::kLaunch;
    m.reason = e.what();
    m.timing.reset();
    check_context(c.name());
    return done();
  }
  try {
    const CounterResult cr = counters_->measure(
        [&] { check_cuda(kernel->launch(q, k, v, o, w, stream), "launch " + c.name()); }, [&] { flush_l2(); });
    m.counters_status = cr.status;
    if (cr.ok) m.counters = cr.values;
  } catch (const CudaError& e) {
    m.counters_status = std::string("unavailable: ") + e.what();
    check_context(c.name() + " (counter passes)");
  }
  return done();
}

}  // namespace flashtune
