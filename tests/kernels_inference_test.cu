// Inference operands on every compiled kernel family: fewer query rows than keys (KV cache, causal
// aligned bottom-right: row i sees keys j <= i + Nkv - Nq) and grouped heads (kv_group query heads
// read one K/V head, no copy), against the double reference, in the dtype of each instance (fp32,
// bf16, fp16) at its own tolerance. A fast subset per family: Nq in {1, 4, 16, 64} x odd Nkv
// {1000, 4097} x causal x kv_group {1, 4}, packed operands; then [batch, heads, N, d] and
// [batch, N, heads, d] with grouped heads. Skips without a CUDA device.
//
// Environment: FLASHTUNE_KERNEL_FILTER=<substring> limits the configs (by name).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "kernels/reference.h"
#include "kernels/registry.h"
#include "kernels/support_checks.h"
#include "kernels/traits/variants.h"
#include "tuner/laid_out_operands.h"
#include "tuner/verify.h"

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

std::vector<const KernelInstance*> selected_kernels() {
  const char* filter = std::getenv("FLASHTUNE_KERNEL_FILTER");
  std::vector<const KernelInstance*> out;
  for (const KernelInstance* k : kernel_registry())
    if (!filter || !*filter || k->name().find(filter) != std::string::npos) out.push_back(k);
  return out;
}

// The bar of the instance: its dtype's for 16-bit data, its variant's precision's for fp32.
double tolerance(const TileConfig& c) {
  return c.dtype != DType::Fp32 ? rel_l2_tolerance(c.dtype) : rel_l2_tolerance(variant_precision(c.variant));
}

Workload inference(long long B, long long nq, long long nkv, int d, bool causal, int group, DType dtype) {
  Workload w;
  w.B = B;
  w.N = nq;
  w.d = d;
  w.causal = causal;
  w.dtype = dtype;
  w.kv_len = nkv;
  w.kv_group = group;
  return w;
}

std::string describe(const Workload& w) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "B=%lld Nq=%lld Nkv=%lld g=%d d=%d %s %s", w.B, w.N, w.keys(), w.kv_group, w.d,
                w.causal ? "causal" : "non-causal", dtype_name(w.dtype));
  return buf;
}

struct Worst {
  double rel_l2 = 0;
  std::string where;
  long long checks = 0;
};

void report(const std::map<std::string, Worst>& worst) {
  for (const auto& [family, wv] : worst)
    std::printf("worst rel L2 %-18s %.3e (%lld checks) at %s\n", family.c_str(), wv.rel_l2, wv.checks,
                wv.where.c_str());
}

void record(std::map<std::string, Worst>& worst, const TileConfig& c, const ErrorStats& e, const std::string& where) {
  Worst& wv = worst[std::string(variant_name(c.variant)) + "/" + dtype_name(c.dtype)];
  ++wv.checks;
  const double err = e.nonfinite > 0 ? INFINITY : e.rel_l2;
  if (err >= wv.rel_l2) {
    wv.rel_l2 = err;
    wv.where = where;
  }
}

// The GPU double reference, the oracle below, against the CPU loop on the same shapes.
TEST(KernelsInference, GpuReferenceMatchesCpuReference) {
  SKIP_WITHOUT_DEVICE();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (bool causal : {false, true})
    for (long long nq : {1LL, 5LL, 77LL}) {
      const Workload w = inference(8, nq, 301, 64, causal, 4, DType::Fp32);
      AttentionInputs in = random_inputs(w, -3.0f, 3.0f, 7 + nq, stream);
      const std::vector<double> gpu = reference_on_host(in, stream);
      const std::vector<float> q = in.q.to_host(), k = in.k.to_host(), v = in.v.to_host();
      std::vector<double> cpu(gpu.size());
      attention_reference_cpu(q.data(), k.data(), v.data(), cpu.data(), w);
      double worst = 0;
      for (std::size_t i = 0; i < cpu.size(); ++i) worst = std::max(worst, std::fabs(cpu[i] - gpu[i]));
      EXPECT_LT(worst, 1e-9) << describe(w);
    }
  cudaStreamDestroy(stream);
}

TEST(KernelsInference, EveryFamilyMatchesTheReferenceOnKvCacheAndGroupedShapes) {
  SKIP_WITHOUT_DEVICE();
  const DeviceLimits dev = DeviceLimits::query(0);
  std::printf("device: %s (sm_%d%d, %d SMs)\n", dev.name.c_str(), dev.cc_major, dev.cc_minor, dev.sm_count);
  const std::vector<const KernelInstance*> kernels = selected_kernels();
  ASSERT_FALSE(kernels.empty()) << "no kernel matched the filter";
  std::map<std::pair<int, DType>, std::vector<const KernelInstance*>> by_shape;
  for (const KernelInstance* k : kernels) by_shape[{k->config().d, k->config().dtype}].push_back(k);

  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  std::map<std::string, Worst> worst;
  std::uint64_t seed = 26;
  for (const auto& [shape, group_kernels] : by_shape)
    for (long long nq : {1LL, 4LL, 16LL, 64LL})
      for (long long nkv : {1000LL, 4097LL})
        for (bool causal : {false, true})
          for (int g : {1, 4}) {
            // Packed operands: B = 2 batches x 4 query heads; K/V entry e / g serves query entry e.
            const Workload w = inference(8, nq, nkv, shape.first, causal, g, shape.second);
            AttentionInputs in = random_inputs(w, -2.0f, 2.0f, ++seed, stream);
            const std::vector<double> ref = reference_on_host(in, stream);
            DeviceBuffer<float> o(in.elements());
            for (const KernelInstance* k : group_kernels) {
              const std::string where = k->name() + " " + describe(w);
              const Support s = k->can_implement(w, dev);
              if (const char* why = workload_refusal(k->config(), w)) {  // the /pe grid under causal
                EXPECT_FALSE(s) << where << " serves a workload its traits refuse: " << why;
                continue;
              }
              ASSERT_TRUE(s) << where << ": " << s.reason;
              const std::vector<float> out = run_once(*k, in, o, stream);
              const ErrorStats e = compare_to_reference(out.data(), ref.data(), out.size());
              EXPECT_TRUE(e.passes(tolerance(k->config())))
                  << where << ": rel_l2 " << e.rel_l2 << " max_abs " << e.max_abs << " non-finite " << e.nonfinite;
              record(worst, k->config(), e, where);
            }
          }
  cudaStreamDestroy(stream);
  report(worst);
}

// Grouped heads through strides: [batch, Hq, Nq, d] Q and O beside [batch, Hkv, Nkv, d] K and V
// (and the [batch, N, heads, d] views), Hq = 8, Hkv = 2.
TEST(KernelsInference, GroupedHeadsThroughStridedLayouts) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<const KernelInstance*> kernels = selected_kernels();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  std::map<std::string, Worst> worst;
  for (const KernelInstance* k : kernels) {
    const Workload w = inference(16, 16, 1000, k->config().d, true, 4, k->config().dtype);
    AttentionInputs in = random_inputs(w, -2.0f, 2.0f, 99, stream);
    const std::vector<double> ref = reference_on_host(in, stream);
    for (TensorLayout layout : {TensorLayout::Bhnd, TensorLayout::Bnhd}) {
      LaidOutOperands laid(in, layout, 8, stream);
      const std::vector<float> out = laid.run_once(*k, stream);
      const ErrorStats e = compare_to_reference(out.data(), ref.data(), out.size());
      const std::string where = k->name() + " " + describe(w) + " " + tensor_layout_name(layout) + " Hq=8";
      EXPECT_TRUE(e.passes(tolerance(k->config()))) << where << ": rel_l2 " << e.rel_l2 << " non-finite " << e.nonfinite;
      record(worst, k->config(), e, where);
    }
  }
  cudaStreamDestroy(stream);
  report(worst);
}

// The refusals need no device: can_implement and check_tensors name the bad value in one line.
TEST(KernelsInference, RefusalsNameTheValue) {
  const KernelInstance* k = kernel_registry().front();
  DeviceLimits dev;
  dev.smem_per_block_optin = 228 * 1024;
  dev.max_threads_per_block = 1024;
  Workload w = inference(8, 64, 32, k->config().d, true, 1, k->config().dtype);
  const Support more_queries = k->can_implement(w, dev);
  EXPECT_FALSE(more_queries);
  EXPECT_NE(more_queries.reason.find("N=64"), std::string::npos) << more_queries.reason;
  EXPECT_NE(more_queries.reason.find("kv_len=32"), std::string::npos) << more_queries.reason;
  w.causal = false;  // more queries than keys is fine without the mask
  EXPECT_TRUE(k->can_implement(w, dev)) << k->can_implement(w, dev).reason;

  // Hq = 6 query heads cannot be grouped by 4.
  const Workload g = inference(12, 4, 100, k->config().d, false, 4, k->config().dtype);
  AttentionTensors t;
  alignas(16) static float dummy[4];
  t.q = t.k = t.v = dummy;
  t.o = dummy;
  t.strides = AttentionStrides::dense(TensorLayout::Bhnd, g, 6);
  const Support heads = check_tensors(t, g);
  EXPECT_FALSE(heads);
  EXPECT_NE(heads.reason.find("heads=6"), std::string::npos) << heads.reason;
  EXPECT_NE(heads.reason.find("kv_group=4"), std::string::npos) << heads.reason;
  t.strides = AttentionStrides::dense(TensorLayout::Bhnd, g, 4);
  EXPECT_TRUE(check_tensors(t, g)) << check_tensors(t, g).reason;
}

}  // namespace
}  // namespace flashtune
