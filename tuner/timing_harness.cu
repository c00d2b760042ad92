#include "tuner/timing_harness.h"

#include <algorithm>
#include <chrono>

#include "tuner/sm_clock_reader.h"

namespace flashtune {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string pci_bus_id(int device) {
  char id[32] = {};
  FLASHTUNE_CUDA_CHECK(cudaDeviceGetPCIBusId(id, int(sizeof id), device));
  return id;
}
// Reads n 16-byte words through L2 (ld.global.cg: not kept in L1), so that they displace every line
// there. The sum is stored only when it takes a value the zeroed buffer cannot give, which keeps
// the loads without a write per sample.
__global__ void read_through_l2(const float4* __restrict__ words, long long n, float* sink) {
  float acc = 0.0f;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const float4 w = __ldcg(words + i);
    acc += w.x + w.y + w.z + w.w;
  }
  if (acc == 1.0f) *sink = acc;
}
}  // namespace

const char* l2_flush_name(L2Flush f) { return f == L2Flush::Read ? "read" : "write"; }

std::optional<L2Flush> parse_l2_flush(const std::string& name) {
  for (L2Flush f : {L2Flush::Write, L2Flush::Read})
    if (name == l2_flush_name(f)) return f;
  return std::nullopt;
}

struct TimingHarness::Impl {
  int device = 0;
  HarnessOptions options;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  void* flush = nullptr;
  long long flush_bytes = 0;
  int sm_count = 1;
  std::unique_ptr<SmClockReader> clock;

  ~Impl() {
    if (flush) cudaFree(flush);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }

  // Writing a buffer twice the L2's size evicts everything the previous launch left there, so each
  // sample starts cold (the kernel's own Q/K/V come from DRAM, as in a real model forward pass).
  // The read flush leaves clean lines instead (L2Flush says when that is the state to time).
  void flush_l2(bool enabled) const {
    if (!enabled) return;
    if (options.flush_kind == L2Flush::Write) {
      FLASHTUNE_CUDA_CHECK(cudaMemsetAsync(flush, 0, size_t(flush_bytes), stream));
      return;
    }
    const long long words = flush_bytes / 16;
    read_through_l2<<<sm_count * 4, 512, 0, stream>>>(static_cast<const float4*>(flush), words,
                                                     static_cast<float*>(flush));
    FLASHTUNE_CUDA_CHECK(cudaGetLastError());
  }

  Sample one_sample(const LaunchFn& launch, bool flush_enabled) const {
    const double before = clock->read_mhz();
    flush_l2(flush_enabled);
    FLASHTUNE_CUDA_CHECK(cudaEventRecord(start, stream));
    FLASHTUNE_CUDA_CHECK(launch(stream));
    FLASHTUNE_CUDA_CHECK(cudaEventRecord(stop, stream));
    FLASHTUNE_CUDA_CHECK(cudaEventSynchronize(stop));
    const double after = clock->read_mhz();
    float ms = 0;
    FLASHTUNE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    Sample s;
    s.ms = double(ms);
    // The lower of the two readings: a sag at either end marks the sample as suspect.
    s.sm_clock_mhz = (before > 0 && after > 0) ? std::min(before, after) : 0.0;
    return s;
  }
};

TimingHarness::TimingHarness(int device, HarnessOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.device = device;
  m.options = options;
  FLASHTUNE_CUDA_CHECK(cudaSetDevice(device));
  FLASHTUNE_CUDA_CHECK(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
  FLASHTUNE_CUDA_CHECK(cudaEventCreate(&m.start));
  FLASHTUNE_CUDA_CHECK(cudaEventCreate(&m.stop));
  int l2 = 0;
  FLASHTUNE_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  // At least 2x the L2 (and 32 MiB when the attribute is 0) so no line of the last launch survives.
  // Allocated by the first timing that flushes: a check-only run (run --no-time) holds no buffer it
  // never writes (compute-sanitizer initcheck --track-unused-memory reports one).
  m.flush_bytes = std::max<long long>(2LL * l2, 32LL << 20);
  FLASHTUNE_CUDA_CHECK(cudaDeviceGetAttribute(&m.sm_count, cudaDevAttrMultiProcessorCount, device));
  m.clock = std::make_unique<SmClockReader>(pci_bus_id(device));
}

TimingHarness::~TimingHarness() = default;

cudaStream_t TimingHarness::stream() const { return impl_->stream; }
const HarnessOptions& TimingHarness::options() const { return impl_->options; }
void TimingHarness::set_options(const HarnessOptions& options) { impl_->options = options; }
std::string TimingHarness::clock_source() const { return impl_->clock->source(); }

TimingResult TimingHarness::time(const LaunchFn& launch) {
  Impl& m = *impl_;
  FLASHTUNE_CUDA_CHECK(cudaSetDevice(m.device));
  TimingResult r;
  r.flush_bytes = m.options.flush_l2 ? m.flush_bytes : 0;
  r.clock_source = m.clock->source();
  const bool flush = m.options.flush_l2;
  r.flush_kind = m.options.flush_kind;
  if (flush && !m.flush) {
    FLASHTUNE_CUDA_CHECK(cudaMalloc(&m.flush, size_t(m.flush_bytes)));
    // Zeroed once, so that the read flush reads defined values and its sum stays 0.
    FLASHTUNE_CUDA_CHECK(cudaMemsetAsync(m.flush, 0, size_t(m.flush_bytes), m.stream));
  }

  // Warm-up: loads the module, lets the clock ramp up; same flush + launch as a sample.
  const Clock::time_point warm0 = Clock::now();
  while (r.warmup_launches < m.options.warmup_max_launches &&
         (r.warmup_launches < m.options.warmup_min_launches ||
          seconds_since(warm0) * 1e3 < m.options.warmup_min_ms)) {
    m.flush_l2(flush);
    FLASHTUNE_CUDA_CHECK(launch(m.stream));
    FLASHTUNE_CUDA_CHECK(cudaStreamSynchronize(m.stream));
    ++r.warmup_launches;
  }

  SampleSet set(m.options.rule);
  const Clock::time_point t0 = Clock::now();
  StopReason reason = StopReason::NotStopped;
  while (reason == StopReason::NotStopped) {
    set.add(m.one_sample(launch, flush));
    reason = set.should_stop(seconds_since(t0));
  }
  r.sampling_s = seconds_since(t0);
  r.stats = set.stats(reason);
  r.samples = set.samples();
  return r;
}

}  // namespace flashtune
