// Every registered kernel instantiation against the double-precision GPU reference (itself checked
// against the CPU reference on small cases): N not a multiple of any tile, causal and not, inputs
// in [-3, 3] and inputs scaled so that scores reach +-50, output poisoned with NaN first, every
// element checked. Skips without a CUDA device.
//
// Environment: FLASHTUNE_KERNEL_FILTER=<substring> limits the configs (by name);
// FLASHTUNE_TEST_QUICK=1 runs one small workload per d (for compute-sanitizer);
// FLASHTUNE_TEST_REPORT=<file.json> writes the worst relative L2 error per variant.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "kernels/reference.h"
#include "kernels/registry.h"
#include "cuda_test_support.h"

namespace flashtune {
namespace {


std::string device_problem() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return cudaGetErrorString(e);
  if (n == 0) return "cudaGetDeviceCount returned 0";
  return "";
}

#define SKIP_WITHOUT_DEVICE()                                                  \
  do {                                                                         \
    const std::string why_ = device_problem();                                 \
    if (!why_.empty()) GTEST_SKIP() << "no CUDA device: " << why_;             \
  } while (0)

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

template <class T>
using DeviceBuffer = testing_support::DeviceArray<T>;

// Uniform in [-amp, amp]. Scores are scale * q.k with q, k of variance amp^2/3 and 3: amp_q = 3 gives
// scores of standard deviation 3; amp_q = 15 gives 15, so that the largest of ~10^4+ scores per
// batch entry pass +-50 (the online softmax must rescale without overflow).
std::vector<float> random_values(std::size_t n, float amp, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-amp, amp);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

struct Inputs {
  Workload w;
  std::vector<float> q, k, v;
};

Inputs make_inputs(long long B, long long N, int d, bool causal, float amp_q, std::mt19937& rng) {
  Inputs in;
  in.w.B = B;
  in.w.N = N;
  in.w.d = d;
  in.w.causal = causal;
  const std::size_t n = std::size_t(B * N * d);
  in.q = random_values(n, amp_q, rng);
  in.k = random_values(n, 3.0f, rng);
  in.v = random_values(n, 3.0f, rng);
  return in;
}

std::string describe(const Workload& w, float amp_q) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "B=%lld N=%lld d=%d causal=%d q in [-%g, %g]", w.B, w.N, w.d, int(w.causal),
                double(amp_q), double(amp_q));
  return buf;
}

TEST(KernelsCorrectness, GpuReferenceMatchesCpuReference) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng(7);
  for (int d : {32, 64, 128})
    for (bool causal : {false, true})
      for (long long N : {1LL, 77LL, 256LL}) {
        const float amp = 15.0f;
        const Inputs in = make_inputs(2, N, d, causal, amp, rng);
        const std::size_t n = in.q.size();
        std::vector<double> cpu(n), gpu(n);
        attention_reference_cpu(in.q.data(), in.k.data(), in.v.data(), cpu.data(), in.w);
        DeviceBuffer<float> q(n), k(n), v(n);
        DeviceBuffer<double> o(n);
        CUDA_OK(cudaMemcpy(q.ptr, in.q.data(), n * 4, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(k.ptr, in.k.data(), n * 4, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(v.ptr, in.v.data(), n * 4, cudaMemcpyHostToDevice));
        CUDA_OK(attention_reference_gpu(q.ptr, k.ptr, v.ptr, o.ptr, in.w, nullptr));
        CUDA_OK(cudaMemcpy(gpu.data(), o.ptr, n * 8, cudaMemcpyDeviceToHost));
        double worst = 0;
        for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(cpu[i] - gpu[i]));
        EXPECT_LT(worst, 1e-9) << describe(in.w, amp);
        if (N == 256 && !causal) {
          // The large-score inputs really reach |score| >= 50.
          double max_score = 0;
          const double scale = in.w.effective_scale();
          for (long long i = 0; i < N; ++i)
            for (long long j = 0; j < N; ++j) {
              double s = 0;
              for (int c = 0; c < d; ++c) s += double(in.q[i * d + c]) * double(in.k[j * d + c]);
              max_score = std::max(max_score, std::fabs(s * scale));
            }
          EXPECT_GE(max_score, 50.0) << describe(in.w, amp);
        }
      }
}

struct Worst {
  double rel_l2 = 0;
  double max_abs = 0;
  std::string where;
  long long checks = 0;
};

TEST(KernelsCorrectness, EveryInstanceMatchesTheDoubleReference) {
  SKIP_WITHOUT_DEVICE();
  const DeviceLimits dev = DeviceLimits::query(0);
  const char* filter = env("FLASHTUNE_KERNEL_FILTER");
  const bool quick = env("FLASHTUNE_TEST_QUICK") != nullptr;
  std::printf("device: %s (sm_%d%d, %d SMs, %d B shared per block)\n", dev.name.c_str(), dev.cc_major, dev.cc_minor,
              dev.sm_count, dev.smem_per_block_optin);

  struct Shape {
    long long B, N;
  };
  // N = 1, 77, 1000, 4097 are no multiple of any tile; 512 is a multiple of every tile; B = 70000
  // exceeds grid.y (65535) so the batch is folded into grid.x.
  const std::vector<Shape> shapes = quick ? std::vector<Shape>{{2, 77}}
                                          : std::vector<Shape>{{3, 1}, {3, 77}, {2, 512}, {2, 1000}, {2, 4097}, {70000, 3}};
  std::map<std::string, Worst> worst;  // per variant
  std::mt19937 rng(2024);
  for (int d : {32, 64, 128}) {
    std::vector<const KernelInstance*> kernels;
    for (const KernelInstance* k : kernel_registry())
      // fp32 instances only: the 16-bit ones (mma16) take rounded inputs and their own bar, in
      // tests/kernels_mma16_test.cu. The decode family serves N <= 64 only: its own test,
      // tests/kernels_decode_test.cu.
      if (k->config().d == d && k->config().dtype == DType::Fp32 && k->config().variant != Variant::Decode &&
          (!filter || k->name().find(filter) != std::string::npos))
        kernels.push_back(k);
    if (kernels.empty()) continue;
    for (const Shape& shape : shapes)
      for (bool causal : {false, true})
        for (float amp : {3.0f, 15.0f}) {
          if (shape.B > 1000 && (causal || amp > 3.0f)) continue;  // the folded grid once is enough
          if (quick && amp > 3.0f) continue;
          const Inputs in = make_inputs(shape.B, shape.N, d, causal, amp, rng);
          const std::size_t n = in.q.size();
          DeviceBuffer<float> q(n), k(n), v(n), o(n);
          DeviceBuffer<double> ref_d(n);
          ASSERT_TRUE(q.ptr && k.ptr && v.ptr && o.ptr && ref_d.ptr) << "cudaMalloc failed for " << describe(in.w, amp);
          CUDA_OK(cudaMemcpy(q.ptr, in.q.data(), n * 4, cudaMemcpyHostToDevice));
          CUDA_OK(cudaMemcpy(k.ptr, in.k.data(), n * 4, cudaMemcpyHostToDevice));
          CUDA_OK(cudaMemcpy(v.ptr, in.v.data(), n * 4, cudaMemcpyHostToDevice));
          // One reference per (workload, inputs), reused by every config of this d.
          CUDA_OK(attention_reference_gpu(q.ptr, k.ptr, v.ptr, ref_d.ptr, in.w, nullptr));
          std::vector<double> ref(n);
          CUDA_OK(cudaMemcpy(ref.data(), ref_d.ptr, n * 8, cudaMemcpyDeviceToHost));
          std::vector<float> out(n);
          for (const KernelInstance* kern : kernels) {
            const std::string where = kern->name() + " " + describe(in.w, amp);
            const Support s = kern->can_implement(in.w, dev);
            ASSERT_TRUE(s) << where << ": " << s.reason;
            CUDA_OK(cudaMemset(o.ptr, 0xFF, n * 4));  // NaN: an unwritten element shows as non-finite
            CUDA_OK(kern->launch(q.ptr, k.ptr, v.ptr, o.ptr, in.w, nullptr));
            CUDA_OK(cudaDeviceSynchronize());
            CUDA_OK(cudaMemcpy(out.data(), o.ptr, n * 4, cudaMemcpyDeviceToHost));
            const ErrorStats e = compare_to_reference(out.data(), ref.data(), n);
            EXPECT_TRUE(e.passes(rel_l2_tolerance(variant_precision(kern->config().variant))))
                << where << ": rel_l2 " << e.rel_l2 << " max_abs " << e.max_abs << " non-finite " << e.nonfinite;
            Worst& wv = worst[variant_name(kern->config().variant)];
            ++wv.checks;
            if (e.rel_l2 >= wv.rel_l2 || e.nonfinite > 0) {
              wv.rel_l2 = e.nonfinite > 0 ? INFINITY : e.rel_l2;
              wv.where = where;
            }
            wv.max_abs = std::max(wv.max_abs, e.max_abs);
          }
        }
  }
  ASSERT_FALSE(worst.empty()) << "no kernel matched the filter";
  nlohmann::json report;
  report["schema_version"] = 1;
  report["device"] = dev.name;
  for (Precision pr : kAllPrecisions) report["tolerance_rel_l2"][precision_name(pr)] = rel_l2_tolerance(pr);
  for (const auto& [variant, wv] : worst) {
    std::printf("worst rel L2 %-12s %.3e  (max abs %.3e, %lld checks) at %s\n", variant.c_str(), wv.rel_l2,
                wv.max_abs, wv.checks, wv.where.c_str());
    report["worst"][variant] = {{"rel_l2", wv.rel_l2}, {"max_abs", wv.max_abs}, {"checks", wv.checks},
                                {"where", wv.where}};
  }
  if (const char* path = env("FLASHTUNE_TEST_REPORT")) std::ofstream(path) << report.dump(2) << "\n";
}

TEST(KernelsCorrectness, DeviceLimitsAndResources) {
  SKIP_WITHOUT_DEVICE();
  const DeviceLimits dev = DeviceLimits::query(0);
  EXPECT_GT(dev.sm_count, 0);
  EXPECT_GE(dev.smem_per_block_optin, 48 * 1024);
  EXPECT_THROW(DeviceLimits::query(1 << 20), std::runtime_error);
  for (const KernelInstance* k : kernel_registry()) {
    const KernelResources r = k->resources();
    EXPECT_GT(r.registers, 0) << k->name();
    // No instance may touch local memory (issue 24; ptxas, nvcc 13.0, sm_90: row_reg d64 and
    // row_smem d128 64x32 padded are spill-free since the spills change, docs/kernels.md "Strided
    // operands"; mma16 d128 Br 128 x Bc 64 s2 at ptxas -O1, docs/kernels.md "mma16").
    EXPECT_EQ(r.local_bytes, 0) << k->name() << " uses local memory (spills)";
    EXPECT_LE(r.threads_per_block, r.max_threads_per_block) << k->name();
    std::printf("%-36s regs %3d  local %d  threads %4d  smem %6d B\n", k->name().c_str(), r.registers, r.local_bytes,
                r.threads_per_block, r.dynamic_smem_bytes);
  }
  // A config refused on this device keeps the message format (shared memory limit below its need).
  const KernelInstance* k = kernel_registry().front();
  DeviceLimits small = dev;
  small.smem_per_block_optin = 1024;
  Workload w;
  w.d = k->config().d;
  w.N = 100;
  EXPECT_EQ(k->can_implement(w, small).reason.rfind("needs ", 0), 0u) << k->can_implement(w, small).reason;
}

// Times every config on the seed cases (median of 5 launches after a warm-up, no L2 flush: a
// quick ranking, not the harness). Disabled by default: run with --gtest_also_run_disabled_tests.
TEST(KernelsTiming, DISABLED_SeedCases) {
  SKIP_WITHOUT_DEVICE();
  struct Case {
    const char* name;
    long long B, N;
    int d;
  };
  const Case cases[] = {{"t10", 10, 2048, 64}, {"t11", 13600, 128, 32}, {"t22", 500, 2048, 64},
                        {"t29", 4, 32768, 32}, {"t30", 2, 32768, 64},   {"d128", 64, 1024, 128}};
  const DeviceLimits dev = DeviceLimits::query(0);
  nlohmann::json report = nlohmann::json::array();
  std::mt19937 rng(1);
  for (const Case& c : cases) {
    const Inputs in = make_inputs(c.B, c.N, c.d, false, 3.0f, rng);
    const std::size_t n = in.q.size();
    DeviceBuffer<float> q(n), k(n), v(n), o(n);
    CUDA_OK(cudaMemcpy(q.ptr, in.q.data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(k.ptr, in.k.data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(v.ptr, in.v.data(), n * 4, cudaMemcpyHostToDevice));
    cudaEvent_t start, stop;
    CUDA_OK(cudaEventCreate(&start));
    CUDA_OK(cudaEventCreate(&stop));
    for (const KernelInstance* kern : kernel_registry()) {
      if (kern->config().d != c.d || !kern->can_implement(in.w, dev)) continue;
      for (int i = 0; i < 2; ++i) CUDA_OK(kern->launch(q.ptr, k.ptr, v.ptr, o.ptr, in.w, nullptr));
      std::vector<float> ms;
      for (int i = 0; i < 5; ++i) {
        CUDA_OK(cudaEventRecord(start));
        CUDA_OK(kern->launch(q.ptr, k.ptr, v.ptr, o.ptr, in.w, nullptr));
        CUDA_OK(cudaEventRecord(stop));
        CUDA_OK(cudaEventSynchronize(stop));
        float t = 0;
        CUDA_OK(cudaEventElapsedTime(&t, start, stop));
        ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      const double med = ms[ms.size() / 2];
      const double tflops = in.w.nominal_flops() / (med * 1e-3) / 1e12;
      std::printf("%-5s %-36s %9.3f ms %7.2f TFLOP/s\n", c.name, kern->name().c_str(), med, tflops);
      report.push_back({{"case", c.name}, {"config", kern->name()}, {"median_ms", med}, {"tflops", tflops}});
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  if (const char* path = env("FLASHTUNE_TIMING_REPORT")) std::ofstream(path) << report.dump(2) << "\n";
}

}  // namespace
}  // namespace flashtune
