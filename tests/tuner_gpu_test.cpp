// The timing harness, the random fill and the verification helper on a real GPU and a real
// kernel (skipped where there is no CUDA device).
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cuda_check.h"
#include "kernels/registry.h"
#include "tuner/device_buffer.h"
#include "tuner/device_check.h"
#include "tuner/timing_harness.h"
#include "tuner/verify.h"

namespace flashtune {
namespace {

#define SKIP_WITHOUT_GPU()                                                       \
  do {                                                                           \
    if (const auto why = cuda_device_problem()) GTEST_SKIP() << "no CUDA device: " << *why; \
  } while (0)

Workload small_workload() {
  Workload w;
  w.B = 4;
  w.N = 1000;
  w.d = 64;
  return w;
}

// A pointer, not a reference: g++ 13 warns (-Wdangling-reference) about a reference returned
// from a call that takes a temporary Workload.
const KernelInstance* default_kernel(const Workload& w) {
  const KernelInstance* k = find_kernel(default_config(w));
  return k ? k : kernel_registry().front();
}

Workload workload_for(const KernelInstance& k) {
  Workload w = small_workload();
  w.d = k.config().d;
  return w;
}

TEST(TimingHarnessGpu, RealKernelGivesAtLeastTenFiniteSamples) {
  SKIP_WITHOUT_GPU();
  const KernelInstance& k = *default_kernel(small_workload());
  const Workload w = workload_for(k);
  HarnessOptions opt;
  opt.rule.time_cap_s = 0.5;
  TimingHarness harness(0, opt);
  AttentionInputs in = random_inputs(w, -1, 1, 7, harness.stream());
  DeviceBuffer<float> o(in.elements());
  const TimingResult r = harness.time([&](cudaStream_t s) {
    return k.launch(in.q.data(), in.k.data(), in.v.data(), o.data(), w, s);
  });
  EXPECT_GE(r.stats.samples, 10);
  EXPECT_GE(r.warmup_launches, opt.warmup_min_launches);
  EXPECT_EQ(int(r.samples.size()), r.stats.samples + r.stats.dropped);
  EXPECT_TRUE(std::isfinite(r.stats.median_ms));
  EXPECT_GT(r.stats.min_ms, 0.0);
  EXPECT_LE(r.stats.min_ms, r.stats.median_ms);
  EXPECT_LE(r.stats.median_ms, r.stats.max_ms);
  EXPECT_TRUE(std::isfinite(r.stats.rel_stdev));
  EXPECT_NE(r.stats.stop_reason, StopReason::NotStopped);
  EXPECT_GT(r.flush_bytes, 0);
  // The sampling loop honours the hard cap even when the clock sags.
  EXPECT_LT(r.sampling_s, opt.rule.hard_cap_factor * opt.rule.time_cap_s + 1.0);
  if (r.clock_source == "nvml") {
    EXPECT_TRUE(r.stats.clock_known);
    EXPECT_GT(r.stats.clock_min_mhz, 100.0);
  }
  std::printf("harness: %s median %.4f ms min %.4f rel_sd %.2f%% samples %d dropped %d stop %s clock %s %.0f MHz\n",
              k.name().c_str(), r.stats.median_ms, r.stats.min_ms, 100 * r.stats.rel_stdev, r.stats.samples,
              r.stats.dropped, stop_reason_name(r.stats.stop_reason), r.clock_source.c_str(), r.stats.clock_median_mhz);
}

// The read flush empties L2 as the write flush does, and leaves no dirty line behind. An 8 MB copy
// after the read flush reads its source from DRAM: it takes longer than a second copy of the same
// source queued right behind it (read from L2), where a flush that left the source in L2 would make
// the two alike. (A copy timed with no flush at all carries the CPU's launch gap, which the flush
// otherwise covers, so it is no baseline.) After the write flush the same copy also writes back
// the flush's dirty lines: it is no faster than after the read flush.
TEST(TimingHarnessGpu, ReadFlushEvictsAsTheWriteFlushDoes) {
  SKIP_WITHOUT_GPU();
  const std::size_t n = 2u << 20;  // 8 MB of floats each way: in L2 on every GPU that runs this
  DeviceBuffer<float> src(n), dst(n);
  FLASHTUNE_CUDA_CHECK(cudaMemset(src.data(), 0, n * sizeof(float)));
  auto copy = [&](cudaStream_t s) {
    return cudaMemcpyAsync(dst.data(), src.data(), n * sizeof(float), cudaMemcpyDeviceToDevice, s);
  };
  auto copy_twice = [&](cudaStream_t s) {
    const cudaError_t e = copy(s);
    return e != cudaSuccess ? e : copy(s);
  };
  auto median = [&](L2Flush kind, const LaunchFn& launch) {
    HarnessOptions opt;
    opt.rule.time_cap_s = 0.3;
    opt.flush_kind = kind;
    TimingHarness harness(0, opt);
    const TimingResult r = harness.time(launch);
    EXPECT_EQ(r.flush_kind, kind);
    EXPECT_GT(r.flush_bytes, 0);
    return r.stats.median_ms;
  };
  const double cold = median(L2Flush::Read, copy);
  const double twice = median(L2Flush::Read, copy_twice);
  const double after_write = median(L2Flush::Write, copy);
  std::printf("8 MB copy after the read flush %.4f ms, twice %.4f ms (the second %.4f ms), after the write flush %.4f ms\n",
              cold, twice, twice - cold, after_write);
  EXPECT_GT(cold, twice - cold);
  EXPECT_LE(cold, after_write * 1.02);
  EXPECT_STREQ(l2_flush_name(L2Flush::Read), "read");
  EXPECT_STREQ(l2_flush_name(L2Flush::Write), "write");
}

TEST(TimingHarnessGpu, LaunchErrorIsReported) {
  SKIP_WITHOUT_GPU();
  TimingHarness harness;
  EXPECT_THROW(harness.time([](cudaStream_t) { return cudaErrorInvalidConfiguration; }), CudaError);
}

TEST(DeviceFillGpu, MatchesHostMirrorAndRange) {
  SKIP_WITHOUT_GPU();
  const std::size_t n = 100003;
  DeviceBuffer<float> buf(n);
  fill_uniform(buf.data(), n, -3.0f, 3.0f, 42, nullptr);
  FLASHTUNE_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> host = buf.to_host();
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(host[i], uniform_value(42, i, -3.0f, 3.0f)) << i;
    ASSERT_GE(host[i], -3.0f);
    ASSERT_LE(host[i], 3.0f);
    sum += host[i];
  }
  EXPECT_NEAR(sum / double(n), 0.0, 0.05);  // uniform on [-3, 3]: mean 0, sd of the mean ~0.005
}

TEST(DeviceBufferGpu, PoisonIsNaN) {
  SKIP_WITHOUT_GPU();
  DeviceBuffer<float> f(17);
  DeviceBuffer<double> d(5);
  f.poison_nan();
  d.poison_nan();
  FLASHTUNE_CUDA_CHECK(cudaDeviceSynchronize());
  for (float x : f.to_host()) EXPECT_TRUE(std::isnan(x));
  for (double x : d.to_host()) EXPECT_TRUE(std::isnan(x));
}

TEST(VerifyGpu, DefaultConfigPassesOnRandomInputs) {
  SKIP_WITHOUT_GPU();
  const KernelInstance& k = *default_kernel(small_workload());
  Workload w = workload_for(k);
  for (bool causal : {false, true}) {
    w.causal = causal;
    const ErrorStats e = verify_on_random_inputs(k, w, -3, 3, 11);
    EXPECT_EQ(e.count, (long long)attention_elements(w));
    EXPECT_EQ(e.nonfinite, 0);
    EXPECT_LE(e.rel_l2, kRelL2Tolerance) << k.name() << (causal ? " causal" : "");
  }
}

}  // namespace
}  // namespace flashtune
