// The 16-bit tensor-core family (mma16) on the device: every compiled instance against the double
// reference computed on the inputs rounded to the instance's dtype (fresh random inputs, output
// poisoned with NaN first, every element checked, rel L2 under rel_l2_tolerance(dtype)); odd N
// (1, 17, 1000, 2049), causal, scores up to +-50 (no inf or NaN, fp16 included); strided operands
// ([batch, N, heads, d]) bit for bit against the packed launch with O's gaps untouched; and a
// disabled timing of the seed cases (L2 flushed, median). Skips without a CUDA device.
//
// Environment: FLASHTUNE_KERNEL_FILTER=<substring> limits the configs; FLASHTUNE_TEST_QUICK=1 runs
// one small workload per config; FLASHTUNE_TEST_REPORT=<file.json> writes the worst errors;
// FLASHTUNE_TIMING_REPORT=<file.json> the timings.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "half_operands.h"
#include "kernel_check_support.h"
#include "kernels/reference.h"
#include "kernels/registry.h"

namespace flashtune {
namespace {

using testing_support::env;
using testing_support::HalfOperand;
using testing_support::instances_of;
using testing_support::random_half_operand;
template <class T>
using DeviceBuffer = testing_support::DeviceArray<T>;

std::vector<const KernelInstance*> mma16_instances() { return instances_of(Variant::Mma16); }

TEST(KernelsMma16, EveryInstanceMatchesTheDoubleReferenceOnRoundedInputs) {
  SKIP_WITHOUT_DEVICE();
  const auto kernels = mma16_instances();
  if (kernels.empty()) GTEST_SKIP() << "no mma16 instance compiled (or none matches the filter)";
  std::mt19937 rng(16);
  testing_support::WorstByDtype worst;
  testing_support::check_every_half_instance(kernels, rng, worst);
  if (HasFatalFailure()) return;
  testing_support::report_worst("mma16", worst, DeviceLimits::query(0));
}

// [batch, N, heads, d] views (heads = 3) with O in a buffer whose rows have 8 elements of gap:
// bit for bit the packed launch, nothing written outside O's rows.
TEST(KernelsMma16, StridedOperandsMatchThePackedLaunchBitForBit) {
  SKIP_WITHOUT_DEVICE();
  const auto kernels = mma16_instances();
  if (kernels.empty()) GTEST_SKIP() << "no mma16 instance compiled";
  testing_support::check_strided_half_launches(kernels);
}

TEST(KernelsMma16, LaunchRefusesAnotherDtypeAndNoSpills) {
  SKIP_WITHOUT_DEVICE();
  const DeviceLimits dev = DeviceLimits::query(0);
  for (const KernelInstance* kern : mma16_instances()) {
    Workload w;
    w.d = kern->config().d;
    w.N = 64;
    w.dtype = DType::Fp32;
    EXPECT_FALSE(kern->can_implement(w, dev)) << kern->name();
    EXPECT_EQ(kern->launch(nullptr, nullptr, nullptr, nullptr, w, nullptr), cudaErrorInvalidValue) << kern->name();
    const KernelResources r = kern->resources();
    // No instance touches local memory (issue 24); the d = 128 Br 128 x Bc 64 s2 tiles get there
    // at ptxas -O1 (Mma16::ptxas_o1).
    EXPECT_EQ(r.local_bytes, 0) << kern->name() << " uses local memory (spills)";
    std::printf("%-44s regs %3d  local %d  threads %4d  smem %6d B\n", kern->name().c_str(), r.registers,
                r.local_bytes, r.threads_per_block, r.dynamic_smem_bytes);
  }
}

// The seed cases in bf16 (and n1k_d128 causal): every mma16 bf16 instance of the case's d, L2
// flushed before each launch, median of 15 after 3 warm-ups. Run with
// --gtest_also_run_disabled_tests --gtest_filter='*Mma16Timing*'.
TEST(KernelsMma16Timing, DISABLED_SeedCasesBf16) {
  SKIP_WITHOUT_DEVICE();
  struct Case {
    const char* name;
    long long B, N;
    int d;
    bool causal;
  };
  const Case cases[] = {{"t10", 10, 2048, 64, false},        {"t11", 13600, 128, 32, false},
                        {"t22", 500, 2048, 64, false},       {"t29", 4, 32768, 32, false},
                        {"t30", 2, 32768, 64, false},        {"n1k_d128", 64, 1024, 128, false},
                        {"n1k_d128_causal", 64, 1024, 128, true}, {"n4k_d128", 16, 4096, 128, false}};
  const DeviceLimits dev = DeviceLimits::query(0);
  testing_support::L2FlushedTimer timer;
  ASSERT_TRUE(timer.ready());
  nlohmann::json report = nlohmann::json::array();
  std::mt19937 rng(1);
  for (const Case& c : cases) {
    Workload w;
    w.B = c.B;
    w.N = c.N;
    w.d = c.d;
    w.causal = c.causal;
    w.dtype = DType::Bf16;
    const std::size_t n = static_cast<std::size_t>(w.B * w.N * w.d);
    const HalfOperand q = random_half_operand(n, 1.0f, w.dtype, rng);
    DeviceBuffer<uint16_t> qb(n), kb(n), vb(n), ob(n);
    ASSERT_TRUE(qb.ptr && kb.ptr && vb.ptr && ob.ptr);
    CUDA_OK(cudaMemcpy(qb.ptr, q.bits.data(), n * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(kb.ptr, q.bits.data(), n * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(vb.ptr, q.bits.data(), n * 2, cudaMemcpyHostToDevice));
    double best = 1e30;
    std::string best_name;
    for (const KernelInstance* kern : mma16_instances()) {
      if (kern->config().d != c.d || kern->config().dtype != w.dtype || !kern->can_implement(w, dev)) continue;
      double med = 0;
      timer.median_ms([&] { return kern->launch(qb.ptr, kb.ptr, vb.ptr, ob.ptr, w, nullptr); }, med);
      if (HasFatalFailure()) return;
      const double tflops = w.nominal_flops() / (med * 1e-3) / 1e12;
      std::printf("%-16s %-44s %9.4f ms %7.1f TFLOP/s\n", c.name, kern->name().c_str(), med, tflops);
      report.push_back({{"case", c.name}, {"config", kern->name()}, {"median_ms", med}, {"tflops", tflops}});
      if (med < best) {
        best = med;
        best_name = kern->name();
      }
    }
    std::printf("BEST %-16s %-44s %9.4f ms %7.1f TFLOP/s\n", c.name, best_name.c_str(), best,
                w.nominal_flops() / (best * 1e-3) / 1e12);
  }
  if (const char* path = env("FLASHTUNE_TIMING_REPORT")) std::ofstream(path) << report.dump(2) << "\n";
}

}  // namespace
}  // namespace flashtune
