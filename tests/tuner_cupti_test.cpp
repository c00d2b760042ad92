// The CUPTI collector checked against physics: a 256 MiB copy must read (and write) 256 MiB of
// DRAM, a 32-way shared-memory bank conflict must show 32 wavefronts per load and the padded
// layout one, an FFMA chain and an exp chain must count their instructions. The host-side tests
// (metric names, pass packing, unavailable paths) need libcupti but no GPU; the GPU tests skip
// without a device and skip, with the reason, when CUPTI reports insufficient privileges.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cupti_test_kernels.h"
#include "kernels/cuda_check.h"
#include "kernels/registry.h"
#include "tuner/cupti_host.h"
#include "tuner/cupti_profiler.h"
#include "tuner/device_buffer.h"
#include "tuner/device_check.h"
#include "tuner/timing_harness.h"
#include "tuner/verify.h"

namespace flashtune {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- host side: no GPU needed -------------------------------------------------------------

// H100 and H200 are both "GH100" to CUPTI; the metric names are checked against that chip.
std::optional<CuptiHost> hopper_host() {
  try {
    return std::make_optional<CuptiHost>("GH100", std::vector<std::uint8_t>{});
  } catch (const CuptiError&) {
    return std::nullopt;
  }
}

#define HOPPER_HOST_OR_SKIP(var)                                                              \
  std::optional<CuptiHost> var = hopper_host();                                               \
  if (!var) GTEST_SKIP() << "CUPTI host API unavailable (libnvperf_host not loadable?)"

TEST(CuptiHostHopper, EveryDefaultMetricIsValidOnGH100) {
  HOPPER_HOST_OR_SKIP(host);
  for (const std::string& m : CuptiProfiler::default_metrics())
    EXPECT_EQ(host->metric_problem(m), std::nullopt) << m;
}

TEST(CuptiHostHopper, DefaultMetricsPackIntoFewPasses) {
  HOPPER_HOST_OR_SKIP(host);
  const CuptiConfigImage image = host->config_image(CuptiProfiler::default_metrics());
  EXPECT_FALSE(image.bytes.empty());
  EXPECT_GE(image.passes, 1u);
  // Added together, CUPTI packs the 28 metrics into 5 passes on GH100 (28 when added one by one;
  // the first 12 took 3, the instruction counts per pipe and the L2 request counts one more, and
  // either TMA byte count one more again: the wgmma and TMA instruction counts alone fit in 4).
  EXPECT_LE(image.passes, 5u);
  EXPECT_THROW(host->config_image({"dram__bytes_read.sum"}), std::logic_error);
}

// The wgmma and TMA counts exist on Hopper only: on an Ampere chip the same default set loses
// exactly them (so the tuner keeps collecting the rest there), while an unknown metric that is not
// one of them still refuses the set.
TEST(CuptiHostHopper, PreHopperChipDropsOnlyTheHopperMetrics) {
  HOPPER_HOST_OR_SKIP(gh100);
  const auto problem_on = [](const CuptiHost& h) {
    return [&h](const std::string& m) { return h.metric_problem(m); };
  };
  const std::vector<std::string> all = CuptiProfiler::default_metrics();
  EXPECT_EQ(CuptiProfiler::metrics_for_chip(all, "GH100", problem_on(*gh100)), all);
  for (const std::string& m : CuptiProfiler::hopper_metrics())
    EXPECT_NE(std::find(all.begin(), all.end(), m), all.end()) << m << " is not in the default set";

  std::optional<CuptiHost> ga100;
  try {
    ga100.emplace("GA100", std::vector<std::uint8_t>{});
  } catch (const CuptiError& e) {
    GTEST_SKIP() << "no GA100 host object: " << e.what();
  }
  std::vector<std::string> expected;
  for (const std::string& m : all) {
    const auto& hopper = CuptiProfiler::hopper_metrics();
    if (std::find(hopper.begin(), hopper.end(), m) == hopper.end()) expected.push_back(m);
  }
  for (const std::string& m : CuptiProfiler::hopper_metrics()) EXPECT_TRUE(ga100->metric_problem(m).has_value()) << m;
  EXPECT_EQ(CuptiProfiler::metrics_for_chip(all, "GA100", problem_on(*ga100)), expected);
  try {
    CuptiProfiler::metrics_for_chip({"dram__bytes_read.sum", "dram__bytes_sideways.sum"}, "GH100", problem_on(*gh100));
    ADD_FAILURE() << "an unknown metric outside the Hopper set was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "metric 'dram__bytes_sideways.sum' is not valid on GH100")) << e.what();
  }
}

TEST(CuptiHostHopper, UnknownMetricIsReported) {
  HOPPER_HOST_OR_SKIP(host);
  const auto problem = host->metric_problem("dram__bytes_sideways.sum");
  ASSERT_TRUE(problem.has_value());
  EXPECT_TRUE(contains(*problem, "INVALID_METRIC_NAME")) << *problem;
}

TEST(CuptiProfilerUnavailable, MissingDeviceGivesReasonNotException) {
  CuptiProfiler p = CuptiProfiler::create(-1, CuptiProfiler::default_metrics());
  EXPECT_FALSE(p.available());
  EXPECT_TRUE(contains(p.reason(), "no CUDA device")) << p.reason();
  EXPECT_EQ(p.passes(), 0);
  bool launched = false;
  const CounterResult r = p.measure([&] { launched = true; }, [] {});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.status.rfind("unavailable: ", 0), 0u) << r.status;
  EXPECT_TRUE(r.values.empty());
  EXPECT_FALSE(launched);
}

TEST(CuptiProfilerUnavailable, MovedFromProfilerIsUnavailable) {
  CuptiProfiler a = CuptiProfiler::create(-1, {"dram__bytes_read.sum"});
  CuptiProfiler b = std::move(a);
  EXPECT_FALSE(a.available());  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  EXPECT_FALSE(a.reason().empty());
  EXPECT_FALSE(b.available());
  EXPECT_TRUE(contains(b.reason(), "no CUDA device")) << b.reason();
}

// ---- GPU: counters against known traffic --------------------------------------------------

void print_values(const std::string& what, const CounterResult& r) {
  std::printf("[counters] %s: %s\n", what.c_str(), r.status.c_str());
  for (const auto& [name, value] : r.values) std::printf("[counters]   %-58s %.6g\n", name.c_str(), value);
}

class CuptiGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = cuda_device_problem(0)) GTEST_SKIP() << "no CUDA device: " << *why;
    profiler_.emplace(CuptiProfiler::create(0, CuptiProfiler::default_metrics()));
    if (!profiler_->available()) {
      if (contains(profiler_->reason(), "INSUFFICIENT_PRIVILEGES"))
        GTEST_SKIP() << "CUPTI counters not permitted: " << profiler_->reason();
      FAIL() << "CUPTI profiler unavailable: " << profiler_->reason();
    }
    int l2 = 0;
    FLASHTUNE_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    flush_ = DeviceBuffer<float4>(2 * std::size_t(l2) / sizeof(float4));
    sink_ = DeviceBuffer<float>(65536);
  }

  // The timing harness's flush: write 2x L2. It leaves L2 full of dirty lines of the flush
  // buffer, which the next kernel's traffic writes back to DRAM.
  void memset_flush() { FLASHTUNE_CUDA_CHECK(cudaMemset(flush_.data(), 0, flush_.bytes())); }

  // memset, then read the buffer back: the reads evict the dirty lines (written back during the
  // flush, not during the kernel) and leave L2 holding clean lines only.
  void clean_flush() {
    memset_flush();
    FLASHTUNE_CUDA_CHECK(cupti_test::launch_read(flush_.data(), flush_.size(), sink_.data()));
  }

  CounterResult measure(const std::string& what, const std::function<void()>& launch,
                        const std::function<void()>& before_pass) {
    const auto t0 = std::chrono::steady_clock::now();
    CounterResult r = profiler_->measure(launch, before_pass);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    print_values(what + " (" + std::to_string(profiler_->passes()) + " passes, " + std::to_string(ms) + " ms)", r);
    return r;
  }

  std::optional<CuptiProfiler> profiler_;
  DeviceBuffer<float4> flush_;
  DeviceBuffer<float> sink_;
};

TEST_F(CuptiGpu, CopyOf256MiBMovesItsBytesThroughDram) {
  const std::size_t n = std::size_t(256 * kMiB) / sizeof(float4);
  const double bytes = double(n * sizeof(float4));
  DeviceBuffer<float4> src(n), dst(n);
  FLASHTUNE_CUDA_CHECK(cudaMemset(src.data(), 1, src.bytes()));
  const auto copy = [&] { FLASHTUNE_CUDA_CHECK(cupti_test::launch_copy(src.data(), dst.data(), n)); };

  const CounterResult dirty = measure("copy 256 MiB, memset flush", copy, [&] { memset_flush(); });
  const CounterResult clean = measure("copy 256 MiB, clean flush", copy, [&] { clean_flush(); });
  ASSERT_TRUE(dirty.ok) << dirty.status;
  ASSERT_TRUE(clean.ok) << clean.status;

  const double l2 = double(flush_.bytes()) / 2;
  for (const CounterResult* r : {&dirty, &clean}) {
    EXPECT_NEAR(r->values.at("dram__bytes_read.sum") / bytes, 1.0, 0.05);
    // DRAM writes are the write-backs that happen inside the range: up to one L2 of the copy's
    // own output may still sit dirty in L2 when the kernel ends (H200, clean flush: 0.93 of the
    // bytes), and dirty lines left by the flush may be evicted into the range (memset flush: 1.01).
    EXPECT_GE(r->values.at("dram__bytes_write.sum"), bytes - l2);
    EXPECT_LE(r->values.at("dram__bytes_write.sum"), bytes + l2);
    // Every byte is requested from L2 on the way in and on the way out; the H200 counts about 3x
    // the bytes (docs/counters.md), so only a band is asserted.
    EXPECT_GE(r->values.at("lts__t_bytes.sum") / bytes, 0.95 * 2);
    EXPECT_LE(r->values.at("lts__t_bytes.sum") / bytes, 3.5);
    EXPECT_GT(r->values.at("gpu__time_duration.sum"), 0.0);
    EXPECT_LT(r->values.at("gpu__time_duration.sum"), 10e6);  // ns: 512 MiB at >= 50 GB/s
    EXPECT_EQ(r->values.at("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"), 0.0);
    EXPECT_EQ(r->values.at("sm__sass_thread_inst_executed_op_ffma_pred_on.sum"), 0.0);
  }
}

TEST_F(CuptiGpu, BankConflictsAppearWithoutPaddingAndVanishWithIt) {
  const int blocks = 264, iterations = 64;
  DeviceBuffer<float> out(std::size_t(blocks) * 1024);
  const double warps = blocks * 32.0;
  const double loads = warps * iterations;  // warp-level LDS instructions
  const auto run = [&](bool padded) {
    return measure(padded ? "shared columns, padded" : "shared columns, 32-way conflict", [&] {
      FLASHTUNE_CUDA_CHECK(cupti_test::launch_shared_columns(out.data(), blocks, iterations, 1, padded));
    }, [&] { memset_flush(); });
  };
  const CounterResult conflicted = run(false);
  const CounterResult padded = run(true);
  ASSERT_TRUE(conflicted.ok) << conflicted.status;
  ASSERT_TRUE(padded.ok) << padded.status;

  const auto& c = conflicted.values;
  const auto& p = padded.values;
  // 32 lanes on one bank: 32 wavefronts per load and per store; padded: one.
  EXPECT_NEAR(c.at("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum") / (32 * loads), 1.0, 0.02);
  EXPECT_NEAR(p.at("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum") / loads, 1.0, 0.02);
  EXPECT_NEAR(c.at("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum") / (32 * warps), 1.0, 0.05);
  EXPECT_NEAR(p.at("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum") / warps, 1.0, 0.05);
  // Conflicts: about 31 extra wavefronts per access without padding, about none with it.
  EXPECT_GT(c.at("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"), 0.5 * 31 * loads);
  EXPECT_GT(c.at("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"), 0.5 * 31 * warps);
  EXPECT_LT(p.at("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
            0.01 * c.at("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"));
  EXPECT_LT(p.at("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
            0.01 * c.at("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"));
  // One FFMA per load per thread, in both layouts.
  for (const auto* v : {&c, &p})
    EXPECT_NEAR(v->at("sm__sass_thread_inst_executed_op_ffma_pred_on.sum") / (32 * loads), 1.0, 0.01);
  // 1024-thread blocks, two per SM, over one or two full waves: occupancy well above half.
  EXPECT_GT(c.at("sm__warps_active.avg.pct_of_peak_sustained_active"), 50.0);
  EXPECT_LE(c.at("sm__warps_active.avg.pct_of_peak_sustained_active"), 100.0);
}

TEST_F(CuptiGpu, ExpChainCountsOneXuInstructionPerExp) {
  const int blocks = 264, threads = 256, iterations = 256;
  DeviceBuffer<float> out(std::size_t(blocks) * threads);
  const CounterResult r = measure("exp chain", [&] {
    FLASHTUNE_CUDA_CHECK(cupti_test::launch_exp_chain(out.data(), blocks, threads, iterations));
  }, [&] { memset_flush(); });
  ASSERT_TRUE(r.ok) << r.status;
  const double exps = double(blocks) * threads * iterations;
  const double xu = r.values.at("smsp__thread_inst_executed_pipe_xu_pred_on.sum");
  EXPECT_GE(xu / exps, 0.99);
  EXPECT_LE(xu / exps, 1.10);
}

TEST_F(CuptiGpu, LaunchOfTwoKernelsIsReportedNotMixed) {
  DeviceBuffer<float> out(std::size_t(8) * 256);
  const CounterResult r = measure("two kernels", [&] {
    FLASHTUNE_CUDA_CHECK(cupti_test::launch_exp_chain(out.data(), 8, 256, 4));
    FLASHTUNE_CUDA_CHECK(cupti_test::launch_exp_chain(out.data(), 8, 256, 4));
  }, [] {});
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.status, "2 kernels")) << r.status;
}

TEST_F(CuptiGpu, ThrowingLaunchLeavesProfilerUsable) {
  DeviceBuffer<float> out(std::size_t(8) * 256);
  EXPECT_THROW(profiler_->measure([] { throw std::runtime_error("launch failed"); }, [] {}), std::runtime_error);
  const CounterResult r = measure("after a throwing launch", [&] {
    FLASHTUNE_CUDA_CHECK(cupti_test::launch_exp_chain(out.data(), 8, 256, 4));
  }, [] {});
  EXPECT_TRUE(r.ok) << r.status;
}

// Every compiled FlashAttention kernel after an L2 flush: Q, K and V must come from DRAM at least
// once; a layout with padding or swizzle on must show fewer bank conflicts than the same tile
// with it off (issue 4, counter sanity).
TEST_F(CuptiGpu, FlashAttentionKernelsReadAtLeastQkvFromDram) {
  Workload w;
  w.B = 16;
  w.N = 2048;
  w.d = 64;
  const DeviceLimits dev = DeviceLimits::query(0);
  AttentionInputs in = random_inputs(w, -1, 1, 3, nullptr);
  DeviceBuffer<float> o(in.elements());
  const double qkv_bytes = 3.0 * double(in.elements()) * sizeof(float);
  std::map<std::string, double> conflicts;  // config name -> shared load + store conflicts
  for (const KernelInstance* k : kernel_registry()) {
    w.d = k->config().d;
    if (w.d != 64 || !k->can_implement(w, dev)) continue;
    const CounterResult r = measure(k->name(), [&] {
      FLASHTUNE_CUDA_CHECK(k->launch(in.q.data(), in.k.data(), in.v.data(), o.data(), w, nullptr));
    }, [&] { memset_flush(); });
    ASSERT_TRUE(r.ok) << k->name() << ": " << r.status;
    EXPECT_GE(r.values.at("dram__bytes_read.sum"), 0.99 * qkv_bytes) << k->name();
    conflicts[k->name()] = r.values.at("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum") +
                           r.values.at("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum");
  }
  for (const auto& [name, plain] : conflicts) {
    const std::size_t at = name.rfind("/plain");
    if (at == std::string::npos) continue;
    for (const char* layout : {"/padded", "/swizzled"}) {
      const auto other = conflicts.find(name.substr(0, at) + layout);
      if (other == conflicts.end()) continue;
      std::printf("[counters] bank conflicts %s: %.6g, %s: %.6g\n", name.c_str(), plain, other->first.c_str(),
                  other->second);
      EXPECT_LT(other->second, plain) << other->first << " vs " << name;
    }
  }
}

// Two profilers in one process (say, one per device in a multi-GPU tune): destroying one must not
// switch CUPTI off under the other.
TEST_F(CuptiGpu, SecondProfilerLeavesFirstUsable) {
  DeviceBuffer<float> out(std::size_t(8) * 256);
  {
    CuptiProfiler second = CuptiProfiler::create(0, {"dram__bytes_read.sum"});
    ASSERT_TRUE(second.available()) << second.reason();
    const CounterResult r2 = second.measure([&] {
      FLASHTUNE_CUDA_CHECK(cupti_test::launch_exp_chain(out.data(), 8, 256, 4));
    }, [] {});
    EXPECT_TRUE(r2.ok) << r2.status;
  }
  const CounterResult r = measure("after a second profiler", [&] {
    FLASHTUNE_CUDA_CHECK(cupti_test::launch_exp_chain(out.data(), 8, 256, 4));
  }, [] {});
  EXPECT_TRUE(r.ok) << r.status;
}

TEST(CuptiGpuCreate, UnknownMetricMakesProfilerUnavailable) {
  if (const auto why = cuda_device_problem(0)) GTEST_SKIP() << "no CUDA device: " << *why;
  CuptiProfiler p = CuptiProfiler::create(0, {"dram__bytes_read.sum", "dram__bytes_sideways.sum"});
  EXPECT_FALSE(p.available());
  EXPECT_TRUE(contains(p.reason(), "dram__bytes_sideways.sum")) << p.reason();
}

}  // namespace
}  // namespace flashtune
