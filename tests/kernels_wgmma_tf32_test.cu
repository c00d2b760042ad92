// The Hopper-native fp32 family (wgmma_3xtf32, wgmma_1xtf32: TMA, mbarriers, wgmma .tf32 with V
// transposed in shared memory, sm_90a) on the device: every compiled instance against the double
// reference (fresh random inputs, output poisoned with NaN first, every element checked, rel L2
// under rel_l2_tolerance of the variant's precision: 1e-4 for 3xTF32, 1e-2 for 1xTF32) on odd N,
// causal, KV caches and grouped heads; [batch, N, heads, d] operands bit for bit against the packed
// launch; the refusals (below sm_90, operands TMA cannot address); no local memory; and a disabled
// timing of the fp32 seed cases beside mma_3xtf32 / mma_1xtf32. The host-side tests (names,
// refusals, the transposer's bank-conflict freedom) run without a GPU. Skips without a CUDA device
// or below sm_90.
//
// Environment: FLASHTUNE_KERNEL_FILTER=<substring> limits the configs; FLASHTUNE_TIMING_REPORT=<file.json>
// writes the timings.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "kernel_check_support.h"
#include "kernels/reference.h"
#include "kernels/registry.h"
#include "kernels/traits/variants.h"

namespace flashtune {
namespace {

using testing_support::env;
template <class T>
using DeviceBuffer = testing_support::DeviceArray<T>;

bool is_tf32_wgmma(Variant v) { return v == Variant::WgmmaTf32x3 || v == Variant::WgmmaTf32x1; }

std::vector<const KernelInstance*> instances() {
  return testing_support::instances_where([](const TileConfig& c) { return is_tf32_wgmma(c.variant); });
}

std::vector<float> random_operand(std::size_t n, float amp, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-amp, amp);
  std::vector<float> x(n);
  for (float& v : x) v = u(rng);
  return x;
}

struct Shape {
  long long B, N, nkv;
  int group;
  bool causal;
};

// Runs every instance of head dim d on workload w (random q of amplitude amp_q, k and v of 1) and
// checks it against the double reference; returns the worst rel L2 per variant.
void check_shape(const std::vector<const KernelInstance*>& ks, const Workload& w, float amp_q, std::mt19937& rng,
                 std::map<Variant, std::pair<double, std::string>>& worst) {
  const DeviceLimits dev = DeviceLimits::query(0);
  const std::size_t nq = static_cast<std::size_t>(w.B * w.N * w.d);
  const std::size_t nkv = static_cast<std::size_t>(w.B / w.kv_group * w.keys() * w.d);
  const std::vector<float> q = random_operand(nq, amp_q, rng), k = random_operand(nkv, 1.0f, rng),
                           v = random_operand(nkv, 1.0f, rng);
  DeviceBuffer<float> qd(nq), kd(nkv), vd(nkv), od(nq);
  DeviceBuffer<double> refd(nq);
  ASSERT_TRUE(qd.ptr && kd.ptr && vd.ptr && od.ptr && refd.ptr);
  CUDA_OK(cudaMemcpy(qd.ptr, q.data(), nq * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(kd.ptr, k.data(), nkv * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(vd.ptr, v.data(), nkv * 4, cudaMemcpyHostToDevice));
  CUDA_OK(attention_reference_gpu(qd.ptr, kd.ptr, vd.ptr, refd.ptr, w, nullptr));
  std::vector<double> ref(nq);
  CUDA_OK(cudaMemcpy(ref.data(), refd.ptr, nq * 8, cudaMemcpyDeviceToHost));
  std::vector<float> out(nq);
  for (const KernelInstance* kern : ks) {
    if (kern->config().d != w.d) continue;
    char buf[200];
    std::snprintf(buf, sizeof buf, " B=%lld Nq=%lld Nkv=%lld g=%d causal=%d q in +-%g", w.B, w.N, w.keys(), w.kv_group,
                  int(w.causal), double(amp_q));
    const std::string where = kern->name() + buf;
    const Support s = kern->can_implement(w, dev);
    ASSERT_TRUE(s) << where << ": " << s.reason;
    CUDA_OK(cudaMemset(od.ptr, 0xFF, nq * 4));  // NaN
    CUDA_OK(kern->launch(qd.ptr, kd.ptr, vd.ptr, od.ptr, w, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(out.data(), od.ptr, nq * 4, cudaMemcpyDeviceToHost));
    const ErrorStats e = compare_to_reference(out.data(), ref.data(), nq);
    const double tol = rel_l2_tolerance(variant_precision(kern->config().variant));
    EXPECT_TRUE(e.passes(tol)) << where << ": rel L2 " << e.rel_l2 << " (tolerance " << tol << "), max abs "
                               << e.max_abs << ", non-finite " << e.nonfinite;
    auto& wv = worst[kern->config().variant];
    if (e.rel_l2 >= wv.first) wv = {e.rel_l2, where};
  }
}

TEST(KernelsWgmmaTf32, EveryInstanceMatchesTheDoubleReference) {
  SKIP_WITHOUT_SM90("wgmma .tf32");
  const auto ks = instances();
  if (ks.empty()) GTEST_SKIP() << "no wgmma_tf32 instance compiled (or none matches the filter)";
  // Self-attention at N = 1, 17, 1000, 2049 (no multiple of any tile) and 512 (a multiple of
  // every tile), causal or not; then KV caches, grouped heads and both (causal bottom-right).
  std::vector<Shape> shapes;
  for (const auto& bn : std::vector<std::pair<long long, long long>>{{3, 1}, {3, 17}, {2, 512}, {2, 1000}, {1, 2049}})
    for (bool causal : {false, true}) shapes.push_back({bn.first, bn.second, 0, 1, causal});
  shapes.push_back({4, 17, 1000, 1, true});
  shapes.push_back({4, 1, 333, 1, false});
  shapes.push_back({8, 300, 300, 4, true});
  shapes.push_back({8, 129, 700, 2, true});
  shapes.push_back({8, 64, 2049, 8, false});
  std::map<Variant, std::pair<double, std::string>> worst;
  std::mt19937 rng(2025);
  for (int d : {64, 128})
    for (const Shape& s : shapes)
      for (float amp : {1.0f, 8.0f}) {
        Workload w;
        w.B = s.B;
        w.N = s.N;
        w.d = d;
        w.causal = s.causal;
        w.kv_len = s.nkv;
        w.kv_group = s.group;
        check_shape(ks, w, amp, rng, worst);
      }
  for (const auto& [v, e] : worst) std::printf("worst %-14s rel L2 %.3e  %s\n", variant_name(v), e.first, e.second.c_str());
}

TEST(KernelsWgmmaTf32, StridedOperandsMatchThePackedLaunchBitForBit) {
  SKIP_WITHOUT_SM90("wgmma .tf32");
  const auto ks = instances();
  if (ks.empty()) GTEST_SKIP() << "no wgmma_tf32 instance compiled";
  std::mt19937 rng(7);
  for (const KernelInstance* kern : ks) {
    const int heads = 3;
    Workload w;
    w.B = 2 * heads;
    w.N = 333;
    w.d = kern->config().d;
    w.causal = true;
    const std::size_t n = static_cast<std::size_t>(w.B * w.N * w.d);
    const std::vector<float> q = random_operand(n, 2.0f, rng), k = random_operand(n, 1.0f, rng),
                             v = random_operand(n, 1.0f, rng);
    // [batch, N, heads, d]: the packed tensors' entries interleaved by head.
    auto to_bnhd = [&](const std::vector<float>& x) {
      std::vector<float> y(n);
      const long long b = w.B / heads;
      for (long long bi = 0; bi < b; ++bi)
        for (int h = 0; h < heads; ++h)
          for (long long r = 0; r < w.N; ++r)
            for (int c = 0; c < w.d; ++c)
              y[((bi * w.N + r) * heads + h) * w.d + c] = x[(((bi * heads + h) * w.N) + r) * w.d + c];
      return y;
    };
    DeviceBuffer<float> pq(n), pk(n), pv(n), po(n), sq(n), sk(n), sv(n), so(n);
    ASSERT_TRUE(pq.ptr && pk.ptr && pv.ptr && po.ptr && sq.ptr && sk.ptr && sv.ptr && so.ptr);
    CUDA_OK(cudaMemcpy(pq.ptr, q.data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(pk.ptr, k.data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(pv.ptr, v.data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(sq.ptr, to_bnhd(q).data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(sk.ptr, to_bnhd(k).data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(sv.ptr, to_bnhd(v).data(), n * 4, cudaMemcpyHostToDevice));
    AttentionTensors t{sq.ptr, sk.ptr, sv.ptr, so.ptr, AttentionStrides::uniform(heads, {w.N * heads * w.d, w.d, heads * w.d})};
    ASSERT_TRUE(kern->can_address(t, w)) << kern->name();
    CUDA_OK(kern->launch(pq.ptr, pk.ptr, pv.ptr, po.ptr, w, nullptr));
    CUDA_OK(kern->launch(t, w, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<float> packed(n), strided(n);
    CUDA_OK(cudaMemcpy(packed.data(), po.ptr, n * 4, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(strided.data(), so.ptr, n * 4, cudaMemcpyDeviceToHost));
    EXPECT_EQ(to_bnhd(packed), strided) << kern->name();
  }
}

TEST(KernelsWgmmaTf32, NoLocalMemory) {
  SKIP_WITHOUT_SM90("wgmma .tf32");
  for (const KernelInstance* kern : instances()) {
    const KernelResources r = kern->resources();
    EXPECT_EQ(r.local_bytes, 0) << kern->name();
    std::printf("%-44s regs %3d  local %d  threads %4d  smem %6d B\n", kern->name().c_str(), r.registers, r.local_bytes,
                r.threads_per_block, r.dynamic_smem_bytes);
  }
}

// ---- host-side: names, refusals, precision, the transposer's mapping (no GPU needed) --------------

TEST(KernelsWgmmaTf32Host, NamesPrecisionAndRefusals) {
  const auto c3 = parse_config_name("wgmma_3xtf32/d64/br128xbc64/swizzled/s2");
  ASSERT_TRUE(c3);
  EXPECT_EQ(c3->variant, Variant::WgmmaTf32x3);
  EXPECT_EQ(variant_precision(Variant::WgmmaTf32x3), Precision::Fp32);
  EXPECT_EQ(variant_precision(Variant::WgmmaTf32x1), Precision::Tf32);
  EXPECT_FALSE(precision_admits(Precision::Fp32, Variant::WgmmaTf32x1));
  EXPECT_TRUE(precision_admits(Precision::Tf32, Variant::WgmmaTf32x1));
  EXPECT_EQ(variant_min_compute_capability(Variant::WgmmaTf32x3), kWgmmaMinComputeCapability);
  EXPECT_FALSE(tile_rejection(*c3)) << *tile_rejection(*c3);
  TileConfig bad = *c3;
  bad.dtype = DType::Bf16;
  ASSERT_TRUE(tile_rejection(bad));
  EXPECT_NE(tile_rejection(bad)->find("multiplies fp32 operands as TF32"), std::string::npos);
  bad = *c3;
  bad.d = 32;
  ASSERT_TRUE(tile_rejection(bad));
  EXPECT_NE(tile_rejection(bad)->find("needs d in {64, 128}"), std::string::npos);
  bad = *c3;
  bad.d = 128;  // Q, Q lo and two stages of four tiles: past 227 KB
  ASSERT_TRUE(tile_rejection(bad));
  EXPECT_NE(tile_rejection(bad)->find("shared"), std::string::npos) << *tile_rejection(bad);
  bad = *c3;
  bad.ping_pong = true;
  EXPECT_TRUE(tile_rejection(bad));
  for (const TileConfig& c : traits::WgmmaTf32x3::kCompiled) {
    EXPECT_FALSE(tile_rejection(c));
    EXPECT_EQ(parse_config_name(c.name()), c);
  }
  for (const TileConfig& c : traits::WgmmaTf32x1::kCompiled) {
    EXPECT_FALSE(tile_rejection(c));
    EXPECT_EQ(parse_config_name(c.name()), c);
  }
}

TEST(KernelsWgmmaTf32Host, RefusesOlderGpusAndOperandsTmaCannotAddress) {
  const auto ks = instances();
  if (ks.empty()) GTEST_SKIP() << "no wgmma_tf32 instance compiled (the build does not target sm_90)";
  for (const KernelInstance* k : ks) {
    DeviceLimits a100;
    a100.name = "NVIDIA A100-SXM4-80GB";
    a100.cc_major = 8;
    a100.max_threads_per_block = 1024;
    a100.smem_per_block_optin = 227 * 1024;
    Workload w;
    w.B = 2;
    w.N = 100;
    w.d = k->config().d;
    const Support old = k->can_implement(w, a100);
    EXPECT_FALSE(old);
    EXPECT_EQ(old.reason, std::string(variant_name(k->config().variant)) +
                              " needs an sm_90a GPU (wgmma, TMA): NVIDIA A100-SXM4-80GB is compute capability 8.0");
    alignas(16) static float dummy[16];
    const long long huge = 1LL << 38;  // 2^40 bytes of fp32
    AttentionTensors t{dummy, dummy, dummy, dummy, AttentionStrides::uniform(1, {huge, 0, w.d})};
    ASSERT_TRUE(check_tensors(t, w)) << check_tensors(t, w).reason;
    const Support far = k->can_address(t, w);
    EXPECT_FALSE(far);
    EXPECT_NE(far.reason.find("q batch stride 274877906944 elements cannot be addressed by TMA"), std::string::npos)
        << far.reason;
  }
}

// The transposer's units cover every (key, d column) once, each load and store lands where the
// layout says, and the 8 lanes of every quarter-warp touch 8 different 16-byte chunk positions.
template <class R>
void check_transposer(const TileConfig& c) {
  const int units = R::transpose_units(c);
  std::set<std::pair<int, int>> seen;
  for (int u = 0; u < units; ++u) {
    const auto un = R::transpose_unit(c.Bc, u);
    for (int r = 0; r < 4; ++r) {
      const int key = R::transpose_key(un.kq, r);
      ASSERT_LT(key, c.Bc);
      EXPECT_EQ(R::v_slot_of_key(key), 4 * un.kq + r);
      for (int e = 0; e < 4; ++e) seen.insert({key, 32 * un.b + 4 * un.dc + e});
      EXPECT_EQ(R::transpose_store_byte(c.d, un, r), R::element_byte(c.d, 32 * un.b + 4 * un.dc + r, 4 * un.kq));
    }
  }
  EXPECT_EQ(static_cast<int>(seen.size()), c.Bc * c.d) << c.name();
  for (int q0 = 0; q0 < units; q0 += 8)
    for (int r = 0; r < 4; ++r) {
      std::set<int> ld, st;
      for (int i = 0; i < 8 && q0 + i < units; ++i) {
        const auto un = R::transpose_unit(c.Bc, q0 + i);
        ld.insert((R::transpose_load_byte(c.Bc, un, r) / 16) % 8);
        st.insert((R::transpose_store_byte(c.d, un, r) / 16) % 8);
      }
      EXPECT_EQ(ld.size(), 8u) << c.name() << " load " << r << " at unit " << q0;
      EXPECT_EQ(st.size(), 8u) << c.name() << " store " << r << " at unit " << q0;
    }
  for (int k = 0; k < 64; ++k) EXPECT_EQ(R::v_key_of_slot(R::v_slot_of_key(k)), k);
}

TEST(KernelsWgmmaTf32Host, TransposerCoversTheTileWithoutBankConflicts) {
  for (const TileConfig& c : traits::WgmmaTf32x3::kCompiled) check_transposer<traits::WgmmaTf32x3>(c);
  for (const TileConfig& c : traits::WgmmaTf32x1::kCompiled) check_transposer<traits::WgmmaTf32x1>(c);
}

// ---- timing (disabled): the fp32 seed cases -------------------------------------------------------
// Every wgmma_tf32 and mma_tf32 instance of the case's d, L2 flushed before each launch, median of
// 15 after 3 warm-ups; the best per variant. Run with --gtest_also_run_disabled_tests
// --gtest_filter='*WgmmaTf32Timing*'.
TEST(KernelsWgmmaTf32Timing, DISABLED_SeedCasesFp32BesideMmaTf32) {
  SKIP_WITHOUT_SM90("wgmma .tf32");
  struct Case {
    const char* name;
    long long B, N;
    int d;
    bool causal;
  };
  const Case cases[] = {{"t10", 10, 2048, 64, false},         {"t22", 500, 2048, 64, false},
                        {"t30", 2, 32768, 64, false},         {"h16k", 16, 4096, 64, false},
                        {"n1k_d128", 64, 1024, 128, false},   {"n1k_d128_causal", 64, 1024, 128, true},
                        {"n1999_d64_causal", 24, 1999, 64, true}, {"n4k_d128", 16, 4096, 128, false}};
  const DeviceLimits dev = DeviceLimits::query(0);
  testing_support::L2FlushedTimer timer;
  ASSERT_TRUE(timer.ready());
  nlohmann::json report = nlohmann::json::array();
  std::mt19937 rng(1);
  std::vector<const KernelInstance*> kernels = instances();
  for (const KernelInstance* k : kernel_registry())
    if (k->config().variant == Variant::MmaTf32x3 || k->config().variant == Variant::MmaTf32x1) kernels.push_back(k);
  for (const Case& c : cases) {
    Workload w;
    w.B = c.B;
    w.N = c.N;
    w.d = c.d;
    w.causal = c.causal;
    const std::size_t n = static_cast<std::size_t>(w.B * w.N * w.d);
    const std::vector<float> q = random_operand(n, 1.0f, rng), k = random_operand(n, 1.0f, rng),
                             v = random_operand(n, 1.0f, rng);
    DeviceBuffer<float> qd(n), kd(n), vd(n), od(n);
    ASSERT_TRUE(qd.ptr && kd.ptr && vd.ptr && od.ptr);
    CUDA_OK(cudaMemcpy(qd.ptr, q.data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(kd.ptr, k.data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(vd.ptr, v.data(), n * 4, cudaMemcpyHostToDevice));
    std::map<Variant, std::pair<double, std::string>> best;
    for (const KernelInstance* kern : kernels) {
      if (kern->config().d != c.d || !kern->can_implement(w, dev)) continue;
      double med = 0;
      timer.median_ms([&] { return kern->launch(qd.ptr, kd.ptr, vd.ptr, od.ptr, w, nullptr); }, med);
      if (HasFatalFailure()) return;
      const double tflops = w.nominal_flops() / (med * 1e-3) / 1e12;
      std::printf("%-18s %-46s %9.4f ms %7.1f TFLOP/s\n", c.name, kern->name().c_str(), med, tflops);
      report.push_back({{"case", c.name}, {"config", kern->name()}, {"median_ms", med}, {"tflops", tflops}});
      auto& b = best[kern->config().variant];
      if (b.second.empty() || med < b.first) b = {med, kern->name()};
    }
    for (const auto& [var, b] : best)
      std::printf("BEST %-18s %-13s %-46s %9.4f ms %7.1f TFLOP/s\n", c.name, variant_name(var), b.second.c_str(), b.first,
                  w.nominal_flops() / (b.first * 1e-3) / 1e12);
  }
  if (const char* path = env("FLASHTUNE_TIMING_REPORT")) std::ofstream(path) << report.dump(2) << "\n";
}

}  // namespace
}  // namespace flashtune
