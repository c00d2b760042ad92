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

// The read flush empties L2 as the write flush does: a copy whose 8 MB source stays in L2 between
// unflushed samples runs slower after either flush, and the result names the flush that ran.
TEST(TimingHarnessGpu, ReadFlushEvictsAsTheWriteFlushDoes) {
  SKIP_WITHOUT_GPU();
  const std::size_t n = 2u << 20;  // 8 MB of floats each way: in L2 on every GPU that runs this
  DeviceBuffer<float> src(n), dst(n);
  FLASHTUNE_CUDA_CHECK(cudaMemset(src.data(), 0, n * sizeof(float)));
  auto copy = [&](cudaStream_t s) {
    return cudaMemcpyAsync(dst.data(), src.data(), n * sizeof(float), cudaMemcpyDeviceToDevice, s);
  };
  auto median = [&](bool flush, L2Flush kind) {
    HarnessOptions opt;
    opt.rule.time_cap_s = 0.3;
    opt.flush_l2 = flush;
    opt.flush_kind = kind;
    TimingHarness harness(0, opt);
    const TimingResult r = harness.time(copy);
    EXPECT_EQ(r.flush_kind, kind);
    EXPECT_EQ(r.flush_bytes > 0, flush);
    return r.stats.median_ms;
  };
  const double warm = median(false, L2Flush::Write);
  const double read = median(true, L2Flush::Read);
  const double write = median(true, L2Flush::Write);
  std::printf("8 MB copy: L2 warm %.4f ms, after the read flush %.4f ms, after the write flush %.4f ms\n", warm, read,
              write);
  EXPECT_GT(read, warm);
  EXPECT_GT(write, warm);
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
