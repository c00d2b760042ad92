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
#include <cuda_fp16.h>
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
#include "gpu_test_support.h"
#include "kernels/reference.h"
#include "kernels/registry.h"

namespace flashtune {
namespace {

template <class T>
using DeviceBuffer = testing_support::DeviceArray<T>;

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

#define SKIP_WITHOUT_DEVICE()                                                        \
  do {                                                                               \
    const std::string why_ = testing_support::no_gpu_reason();                       \
    if (!why_.empty()) GTEST_SKIP() << "no CUDA device: " << why_;                   \
  } while (0)

// Host rounding to the dtype (nearest even) and back, exactly as the device stores it.
uint16_t to_bits(float x, DType t) {
  if (t == DType::Fp16) {
    const __half h = __float2half_rn(x);
    uint16_t u;
    std::memcpy(&u, &h, 2);
    return u;
  }
  uint32_t b;
  std::memcpy(&b, &x, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((b >> 16) | 0x40u);  // NaN stays NaN
  b += 0x7fffu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}
float from_bits(uint16_t u, DType t) {
  if (t == DType::Fp16) {
    __half h;
    std::memcpy(&h, &u, 2);
    return __half2float(h);
  }
  const uint32_t b = static_cast<uint32_t>(u) << 16;
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

// Uniform in [-amp, amp], rounded to the dtype: bits for the kernel, floats (exact) for the reference.
struct Operand {
  std::vector<uint16_t> bits;
  std::vector<float> exact;
};
Operand random_operand(std::size_t n, float amp, DType t, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-amp, amp);
  Operand o;
  o.bits.resize(n);
  o.exact.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    o.bits[i] = to_bits(dist(rng), t);
    o.exact[i] = from_bits(o.bits[i], t);
  }
  return o;
}

std::vector<const KernelInstance*> mma16_instances() {
  const char* filter = env("FLASHTUNE_KERNEL_FILTER");
  std::vector<const KernelInstance*> out;
  for (const KernelInstance* k : kernel_registry())
    if (k->config().variant == Variant::Mma16 && (!filter || k->name().find(filter) != std::string::npos))
      out.push_back(k);
  return out;
}

std::string describe(const Workload& w, float amp_q) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "B=%lld N=%lld d=%d causal=%d %s q in [-%g, %g]", w.B, w.N, w.d, int(w.causal),
                dtype_name(w.dtype), double(amp_q), double(amp_q));
  return buf;
}

struct Worst {
  double rel_l2 = 0, max_abs = 0;
  std::string where;
  long long checks = 0;
};

TEST(KernelsMma16, EveryInstanceMatchesTheDoubleReferenceOnRoundedInputs) {
  SKIP_WITHOUT_DEVICE();
  const DeviceLimits dev = DeviceLimits::query(0);
  const auto kernels = mma16_instances();
  if (kernels.empty()) GTEST_SKIP() << "no mma16 instance compiled (or none matches the filter)";
  const bool quick = env("FLASHTUNE_TEST_QUICK") != nullptr;
  struct Shape {
    long long B, N;
  };
  // N = 1, 17, 1000, 2049: no multiple of any tile; 512: a multiple of every tile.
  const std::vector<Shape> shapes =
      quick ? std::vector<Shape>{{2, 77}} : std::vector<Shape>{{3, 1}, {3, 17}, {2, 512}, {2, 1000}, {1, 2049}};
  std::map<std::string, Worst> worst;  // per dtype
  std::mt19937 rng(16);
  for (DType t : {DType::Bf16, DType::Fp16})
    for (int d : {32, 64, 128}) {
      std::vector<const KernelInstance*> ks;
      for (const KernelInstance* k : kernels)
        if (k->config().d == d && k->config().dtype == t) ks.push_back(k);
      if (ks.empty()) continue;
      for (const Shape& shape : shapes)
        for (bool causal : {false, true})
          for (float amp : {3.0f, 15.0f}) {
            if (quick && amp > 3.0f) continue;
            Workload w;
            w.B = shape.B;
            w.N = shape.N;
            w.d = d;
            w.causal = causal;
            w.dtype = t;
            const std::size_t n = static_cast<std::size_t>(w.B * w.N * d);
            // Scores: q of amp 15 against k of amp 3 reach past +-50 for N >= a few hundred.
            const Operand q = random_operand(n, amp, t, rng), k = random_operand(n, 3.0f, t, rng),
                          v = random_operand(n, 3.0f, t, rng);
            DeviceBuffer<float> qf(n), kf(n), vf(n);
            DeviceBuffer<double> ref_d(n);
            DeviceBuffer<uint16_t> qb(n), kb(n), vb(n), ob(n);
            ASSERT_TRUE(qf.ptr && kf.ptr && vf.ptr && ref_d.ptr && qb.ptr && kb.ptr && vb.ptr && ob.ptr);
            CUDA_OK(cudaMemcpy(qf.ptr, q.exact.data(), n * 4, cudaMemcpyHostToDevice));
            CUDA_OK(cudaMemcpy(kf.ptr, k.exact.data(), n * 4, cudaMemcpyHostToDevice));
            CUDA_OK(cudaMemcpy(vf.ptr, v.exact.data(), n * 4, cudaMemcpyHostToDevice));
            Workload wr = w;
            wr.dtype = DType::Fp32;
            CUDA_OK(attention_reference_gpu(qf.ptr, kf.ptr, vf.ptr, ref_d.ptr, wr, nullptr));
            std::vector<double> ref(n);
            CUDA_OK(cudaMemcpy(ref.data(), ref_d.ptr, n * 8, cudaMemcpyDeviceToHost));
            CUDA_OK(cudaMemcpy(qb.ptr, q.bits.data(), n * 2, cudaMemcpyHostToDevice));
            CUDA_OK(cudaMemcpy(kb.ptr, k.bits.data(), n * 2, cudaMemcpyHostToDevice));
            CUDA_OK(cudaMemcpy(vb.ptr, v.bits.data(), n * 2, cudaMemcpyHostToDevice));
            std::vector<uint16_t> out_bits(n);
            std::vector<float> out(n);
            for (const KernelInstance* kern : ks) {
              const std::string where = kern->name() + " " + describe(w, amp);
              const Support s = kern->can_implement(w, dev);
              ASSERT_TRUE(s) << where << ": " << s.reason;
              CUDA_OK(cudaMemset(ob.ptr, 0xFF, n * 2));  // NaN in both dtypes
              CUDA_OK(kern->launch(qb.ptr, kb.ptr, vb.ptr, ob.ptr, w, nullptr));
              CUDA_OK(cudaDeviceSynchronize());
              CUDA_OK(cudaMemcpy(out_bits.data(), ob.ptr, n * 2, cudaMemcpyDeviceToHost));
              for (std::size_t i = 0; i < n; ++i) out[i] = from_bits(out_bits[i], t);
              const ErrorStats e = compare_to_reference(out.data(), ref.data(), n);
              EXPECT_TRUE(e.passes(rel_l2_tolerance(t)))
                  << where << ": rel_l2 " << e.rel_l2 << " max_abs " << e.max_abs << " non-finite " << e.nonfinite;
              Worst& wv = worst[dtype_name(t)];
              ++wv.checks;
              if (e.rel_l2 >= wv.rel_l2 || e.nonfinite > 0) {
                wv.rel_l2 = e.nonfinite > 0 ? INFINITY : e.rel_l2;
                wv.where = where;
              }
              wv.max_abs = std::max(wv.max_abs, e.max_abs);
            }
          }
    }
  nlohmann::json report;
  report["device"] = dev.name;
  for (const auto& [dt, wv] : worst) {
    std::printf("worst rel L2 mma16 %-5s %.3e  (max abs %.3e, %lld checks) at %s\n", dt.c_str(), wv.rel_l2, wv.max_abs,
                wv.checks, wv.where.c_str());
    report["worst"][dt] = {{"rel_l2", wv.rel_l2}, {"max_abs", wv.max_abs}, {"checks", wv.checks}, {"where", wv.where}};
  }
  for (DType t : {DType::Bf16, DType::Fp16}) report["tolerance_rel_l2"][dtype_name(t)] = rel_l2_tolerance(t);
  if (const char* path = env("FLASHTUNE_TEST_REPORT")) std::ofstream(path) << report.dump(2) << "\n";
}

// [batch, N, heads, d] views (heads = 3) with O in a buffer whose rows have 8 elements of gap:
// bit for bit the packed launch, nothing written outside O's rows.
TEST(KernelsMma16, StridedOperandsMatchThePackedLaunchBitForBit) {
  SKIP_WITHOUT_DEVICE();
  const DeviceLimits dev = DeviceLimits::query(0);
  const auto kernels = mma16_instances();
  if (kernels.empty()) GTEST_SKIP() << "no mma16 instance compiled";
  std::mt19937 rng(5);
  const long long batch = 2, heads = 3;
  long long compared = 0;
  for (const KernelInstance* kern : kernels)
    for (long long N : {77LL, 300LL})
      for (bool causal : {false, true}) {
        const TileConfig& c = kern->config();
        const int d = c.d;
        Workload w;
        w.B = batch * heads;
        w.N = N;
        w.d = d;
        w.causal = causal;
        w.dtype = c.dtype;
        const std::size_t one = static_cast<std::size_t>(w.B * N * d);
        const Operand q = random_operand(one, 3.0f, c.dtype, rng), k = random_operand(one, 3.0f, c.dtype, rng),
                      v = random_operand(one, 3.0f, c.dtype, rng);
        // Packed [B, N, d] (B = batch * heads, entry b * heads + h) and the [batch, N, heads, d] copy.
        const OperandStrides bnhd{N * heads * d, d, heads * d};
        const OperandStrides o_strided{N * heads * (d + 8), d + 8, heads * (d + 8)};
        const std::size_t o_elems = static_cast<std::size_t>(batch * N * heads * (d + 8));
        std::vector<uint16_t> qs(one), ks(one), vs(one);
        for (long long b = 0; b < batch; ++b)
          for (long long h = 0; h < heads; ++h)
            for (long long r = 0; r < N; ++r)
              for (int col = 0; col < d; ++col) {
                const std::size_t src = static_cast<std::size_t>(((b * heads + h) * N + r) * d + col);
                const std::size_t dst = static_cast<std::size_t>(b * bnhd.batch + h * bnhd.head + r * bnhd.row + col);
                qs[dst] = q.bits[src];
                ks[dst] = k.bits[src];
                vs[dst] = v.bits[src];
              }
        DeviceBuffer<uint16_t> pq(one), pk(one), pv(one), po(one), sq(one), sk(one), sv(one), so(o_elems);
        ASSERT_TRUE(pq.ptr && pk.ptr && pv.ptr && po.ptr && sq.ptr && sk.ptr && sv.ptr && so.ptr);
        CUDA_OK(cudaMemcpy(pq.ptr, q.bits.data(), one * 2, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(pk.ptr, k.bits.data(), one * 2, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(pv.ptr, v.bits.data(), one * 2, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(sq.ptr, qs.data(), one * 2, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(sk.ptr, ks.data(), one * 2, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(sv.ptr, vs.data(), one * 2, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemset(so.ptr, 0xFF, o_elems * 2));
        AttentionTensors t{sq.ptr, sk.ptr, sv.ptr, so.ptr, AttentionStrides::uniform(heads, bnhd)};
        t.strides.o = o_strided;
        const std::string where = kern->name() + " N=" + std::to_string(N) + (causal ? " causal" : "");
        ASSERT_TRUE(check_tensors(t, w)) << where << ": " << check_tensors(t, w).reason;
        ASSERT_TRUE(kern->can_implement(w, dev)) << where;
        CUDA_OK(kern->launch(pq.ptr, pk.ptr, pv.ptr, po.ptr, w, nullptr));
        CUDA_OK(kern->launch(t, w, nullptr));
        CUDA_OK(cudaDeviceSynchronize());
        std::vector<uint16_t> packed(one), strided(o_elems);
        CUDA_OK(cudaMemcpy(packed.data(), po.ptr, one * 2, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(strided.data(), so.ptr, o_elems * 2, cudaMemcpyDeviceToHost));
        std::vector<char> is_row(o_elems, 0);
        long long mismatches = 0, gap_writes = 0;
        for (long long b = 0; b < batch; ++b)
          for (long long h = 0; h < heads; ++h)
            for (long long r = 0; r < N; ++r)
              for (int col = 0; col < d; ++col) {
                const std::size_t i =
                    static_cast<std::size_t>(b * o_strided.batch + h * o_strided.head + r * o_strided.row + col);
                is_row[i] = 1;
                mismatches += strided[i] != packed[static_cast<std::size_t>(((b * heads + h) * N + r) * d + col)];
              }
        for (std::size_t i = 0; i < o_elems; ++i) gap_writes += !is_row[i] && strided[i] != 0xFFFFu;
        EXPECT_EQ(mismatches, 0) << where << ": elements differing from the packed launch";
        EXPECT_EQ(gap_writes, 0) << where << ": elements written outside O's rows";
        ++compared;
      }
  EXPECT_GT(compared, 0);
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
  const std::size_t flush_bytes = 256u << 20;
  DeviceBuffer<char> flush(flush_bytes);
  ASSERT_TRUE(flush.ptr);
  nlohmann::json report = nlohmann::json::array();
  std::mt19937 rng(1);
  cudaEvent_t start, stop;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&stop));
  for (const Case& c : cases) {
    Workload w;
    w.B = c.B;
    w.N = c.N;
    w.d = c.d;
    w.causal = c.causal;
    w.dtype = DType::Bf16;
    const std::size_t n = static_cast<std::size_t>(w.B * w.N * w.d);
    const Operand q = random_operand(n, 1.0f, w.dtype, rng);
    DeviceBuffer<uint16_t> qb(n), kb(n), vb(n), ob(n);
    ASSERT_TRUE(qb.ptr && kb.ptr && vb.ptr && ob.ptr);
    CUDA_OK(cudaMemcpy(qb.ptr, q.bits.data(), n * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(kb.ptr, q.bits.data(), n * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(vb.ptr, q.bits.data(), n * 2, cudaMemcpyHostToDevice));
    double best = 1e30;
    std::string best_name;
    for (const KernelInstance* kern : mma16_instances()) {
      if (kern->config().d != c.d || kern->config().dtype != w.dtype || !kern->can_implement(w, dev)) continue;
      for (int i = 0; i < 3; ++i) CUDA_OK(kern->launch(qb.ptr, kb.ptr, vb.ptr, ob.ptr, w, nullptr));
      std::vector<float> ms;
      for (int i = 0; i < 15; ++i) {
        CUDA_OK(cudaMemsetAsync(flush.ptr, i, flush_bytes));
        CUDA_OK(cudaEventRecord(start));
        CUDA_OK(kern->launch(qb.ptr, kb.ptr, vb.ptr, ob.ptr, w, nullptr));
        CUDA_OK(cudaEventRecord(stop));
        CUDA_OK(cudaEventSynchronize(stop));
        float t = 0;
        CUDA_OK(cudaEventElapsedTime(&t, start, stop));
        ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      const double med = ms[ms.size() / 2];
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
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (const char* path = env("FLASHTUNE_TIMING_REPORT")) std::ofstream(path) << report.dump(2) << "\n";
}

}  // namespace
}  // namespace flashtune
