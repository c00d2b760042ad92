// The Hopper-native 16-bit family (wgmma16: TMA, mbarriers, wgmma, sm_90a) on the device: every
// compiled instance against the double reference computed on the inputs rounded to its dtype
// (fresh random inputs, output poisoned with NaN first, every element checked, rel L2 under
// rel_l2_tolerance(dtype)); odd N (1, 17, 1000, 2049), causal, scores up to +-50; strided operands
// ([batch, N, heads, d], O with gaps) bit for bit against the packed launch with the gaps untouched;
// the refusals (below sm_90, operands TMA cannot address); no local memory; and a disabled timing
// of the seed cases beside mma16 (L2 flushed, median); the overlap (/ov), ping-pong (/pp) and
// persistent (/pe) configs on KV-cache, grouped and causal shapes (/pe also on grids of more tiles
// than SMs), against the reference and bit for bit against their twins without the knob. Skips
// without a CUDA device or below sm_90.
//
// Environment: FLASHTUNE_KERNEL_FILTER=<substring> limits the configs; FLASHTUNE_TEST_QUICK=1 runs
// one small workload per config; FLASHTUNE_TIMING_REPORT=<file.json> writes the timings.
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
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "half_operands.h"
#include "kernel_check_support.h"
#include "kernels/reference.h"
#include "kernels/registry.h"
#include "kernels/traits/variants.h"

namespace flashtune {
namespace {

using testing_support::env;
using testing_support::from_bits;
using testing_support::HalfOperand;
using testing_support::instances_of;
using testing_support::random_half_operand;
template <class T>
using DeviceBuffer = testing_support::DeviceArray<T>;

TEST(KernelsWgmma16, EveryInstanceMatchesTheDoubleReferenceOnRoundedInputs) {
  SKIP_WITHOUT_SM90("wgmma16");
  const auto kernels = instances_of(Variant::Wgmma16);
  if (kernels.empty()) GTEST_SKIP() << "no wgmma16 instance compiled (or none matches the filter)";
  std::mt19937 rng(25);
  testing_support::WorstByDtype worst;
  testing_support::check_every_half_instance(kernels, rng, worst);
  if (HasFatalFailure()) return;
  testing_support::report_worst("wgmma16", worst, DeviceLimits::query(0));
}

// The intra-warpgroup overlap (the /ov configs) on the shapes where its bookkeeping can go wrong:
// several query tiles whose two consumer warpgroups skip different causal suffixes, a KV cache
// (Nkv > Nq, causal bottom-right: a warpgroup's first skipped tile moves by Nkv - Nq), grouped
// heads, odd lengths, and one K/V tile only (no overlapped iteration). Each against the double
// reference on the rounded inputs, and bit for bit against the serial loop of the same d, Br, Bc
// and dtype where one is compiled: the overlap reorders when the products run, not the arithmetic
// (O is rescaled by alpha_j before P_j V_j is added, as in the serial loop).
// Each of `kernels` on the inference shapes, against the reference and bit for bit against its
// twin (is_twin: the same tile with the knob under test off; the last one registered).
// many_tiles: also shapes of more tiles than an H100 or H200 has SMs (several tiles per block of a
// persistent grid, its last round partial). A config the traits refuse a shape (the persistent grid
// under causal) must refuse it.
template <class IsTwin>
void check_inference_shapes_against_twins(const std::vector<const KernelInstance*>& kernels, const char* knob,
                                          IsTwin is_twin, bool many_tiles = false) {
  const DeviceLimits dev = DeviceLimits::query(0);
  const bool quick = env("FLASHTUNE_TEST_QUICK") != nullptr;
  struct Shape {
    long long B, nq, nkv;
    int group;
  };
  // B = batch x query heads; K/V hold B / group entries of nkv keys.
  std::vector<Shape> shapes =
      quick ? std::vector<Shape>{{4, 77, 300, 2}}
            : std::vector<Shape>{{2, 1000, 1000, 1}, {3, 259, 259, 1}, {8, 200, 1000, 4},
                                 {4, 777, 4097, 2},  {8, 64, 64, 4},   {4, 130, 131, 1}};
  if (many_tiles) {
    // One query tile x 160 entries (a second, partial round on 132 SMs); 3 query tiles x 256
    // entries (Br = 128: 768 tiles); 8 x 64 grouped by 4; 2 x 96 of a KV cache.
    shapes.push_back({160, 70, 90, 2});
    if (!quick) {
      shapes.push_back({256, 300, 300, 1});
      shapes.push_back({64, 1000, 1000, 4});
      shapes.push_back({96, 130, 700, 2});
    }
  }
  std::mt19937 rng(2525);
  double worst = 0;
  std::string worst_where;
  long long checks = 0, twins = 0, refused = 0;
  for (const KernelInstance* kern : kernels) {
    const TileConfig& c = kern->config();
    const KernelInstance* twin = nullptr;
    for (const KernelInstance* k : kernel_registry())
      if (is_twin(c, k->config())) twin = k;
    for (const Shape& shape : shapes)
      for (bool causal : {false, true}) {
        Workload w;
        w.B = shape.B;
        w.N = shape.nq;
        w.kv_len = shape.nkv;
        w.kv_group = shape.group;
        w.d = c.d;
        w.causal = causal;
        w.dtype = c.dtype;
        // The persistent grid refuses causal workloads (traits::Wgmma16::persistent_refusal).
        if (const char* why = workload_refusal(c, w)) {
          const Support s = kern->can_implement(w, dev);
          EXPECT_FALSE(s) << kern->name() << " serves a causal workload the traits refuse it (" << why << ")";
          EXPECT_EQ(s.reason, why) << kern->name();
          ++refused;
          continue;
        }
        const std::size_t nq = static_cast<std::size_t>(w.B * w.N * w.d);
        const std::size_t nkv = static_cast<std::size_t>(w.B / w.kv_group * w.keys() * w.d);
        const HalfOperand q = random_half_operand(nq, 6.0f, c.dtype, rng), k = random_half_operand(nkv, 3.0f, c.dtype, rng),
                          v = random_half_operand(nkv, 3.0f, c.dtype, rng);
        testing_support::HalfInputsOnDevice in(nq, nkv);
        in.load(w, q, k, v);
        if (::testing::Test::HasFatalFailure()) return;
        DeviceBuffer<uint16_t> ob(nq), tb(nq);
        ASSERT_TRUE(ob.ptr && tb.ptr);
        char buf[160];
        std::snprintf(buf, sizeof buf, " B=%lld Nq=%lld Nkv=%lld g=%d%s", w.B, w.N, w.keys(), w.kv_group,
                      causal ? " causal" : "");
        const std::string where = kern->name() + buf;
        const Support s = kern->can_implement(w, dev);
        ASSERT_TRUE(s) << where << ": " << s.reason;
        CUDA_OK(cudaMemset(ob.ptr, 0xFF, nq * 2));  // NaN in both dtypes
        CUDA_OK(kern->launch(in.q.ptr, in.k.ptr, in.v.ptr, ob.ptr, w, nullptr));
        CUDA_OK(cudaDeviceSynchronize());
        std::vector<uint16_t> out_bits(nq);
        std::vector<float> out(nq);
        CUDA_OK(cudaMemcpy(out_bits.data(), ob.ptr, nq * 2, cudaMemcpyDeviceToHost));
        for (std::size_t i = 0; i < nq; ++i) out[i] = from_bits(out_bits[i], c.dtype);
        const ErrorStats e = compare_to_reference(out.data(), in.reference.data(), nq);
        EXPECT_TRUE(e.passes(rel_l2_tolerance(c.dtype)))
            << where << ": rel_l2 " << e.rel_l2 << " max_abs " << e.max_abs << " non-finite " << e.nonfinite;
        ++checks;
        if (e.nonfinite > 0 || e.rel_l2 >= worst) {
          worst = e.nonfinite > 0 ? INFINITY : e.rel_l2;
          worst_where = where;
        }
        if (twin) {
          CUDA_OK(cudaMemset(tb.ptr, 0xFF, nq * 2));
          CUDA_OK(twin->launch(in.q.ptr, in.k.ptr, in.v.ptr, tb.ptr, w, nullptr));
          CUDA_OK(cudaDeviceSynchronize());
          std::vector<uint16_t> twin_bits(nq);
          CUDA_OK(cudaMemcpy(twin_bits.data(), tb.ptr, nq * 2, cudaMemcpyDeviceToHost));
          long long differ = 0;
          for (std::size_t i = 0; i < nq; ++i) differ += twin_bits[i] != out_bits[i];
          EXPECT_EQ(differ, 0) << where << ": elements differing from " << twin->name();
          ++twins;
        }
      }
  }
  std::printf("worst rel L2 wgmma16 %s %.3e (%lld checks, %lld bit-for-bit against the twin without it, %lld refused) at %s\n",
              knob, worst, checks, twins, refused, worst_where.c_str());
  EXPECT_GT(checks, 0);
  EXPECT_GT(twins, 0) << "no " << knob << " config has a twin without the knob compiled";
}

TEST(KernelsWgmma16, OverlapMatchesTheReferenceAndTheSerialLoopOnInferenceShapes) {
  SKIP_WITHOUT_SM90("wgmma16");
  std::vector<const KernelInstance*> overlapped;
  for (const KernelInstance* k : instances_of(Variant::Wgmma16))
    if (k->config().overlap) overlapped.push_back(k);
  if (overlapped.empty()) GTEST_SKIP() << "no wgmma16 /ov instance compiled (or none matches the filter)";
  // The serial twin: the same tile and dtype without the overlap (the stage count does not enter
  // the arithmetic).
  check_inference_shapes_against_twins(overlapped, "/ov", [](const TileConfig& c, const TileConfig& t) {
    return t.variant == c.variant && !t.overlap && !t.ping_pong && t.persistent == c.persistent && t.d == c.d &&
           t.Br == c.Br && t.Bc == c.Bc && t.dtype == c.dtype;
  });
}

// The ping-pong (the /pp configs: two and three consumers, with and without /ov) on the same
// shapes: the consumers' turns must keep going through the tiles each skips past its causal
// diagonal (several query tiles, a KV cache moving the diagonal, one K/V tile only), or the block
// hangs; and the turns order the issues, not the arithmetic, so each output is bit for bit its
// twin's without /pp (the same tile, dtype and overlap).
TEST(KernelsWgmma16, PingPongMatchesTheReferenceAndItsTwinOnInferenceShapes) {
  SKIP_WITHOUT_SM90("wgmma16");
  std::vector<const KernelInstance*> pp;
  for (const KernelInstance* k : instances_of(Variant::Wgmma16))
    if (k->config().ping_pong) pp.push_back(k);
  if (pp.empty()) GTEST_SKIP() << "no wgmma16 /pp instance compiled (or none matches the filter)";
  check_inference_shapes_against_twins(pp, "/pp", [](const TileConfig& c, const TileConfig& t) {
    return t.variant == c.variant && !t.ping_pong && t.overlap == c.overlap && t.persistent == c.persistent &&
           t.d == c.d && t.Br == c.Br && t.Bc == c.Bc && t.dtype == c.dtype;
  });
}

// The persistent grid (the /pe configs: about one block per SM walking the tiles) on the same shapes
// and on grids of more tiles than SMs: the K/V ring's stages and phases, the Q buffers' barriers and
// the ping-pong's turns carry over a block's tiles, where a slip hangs the block or reads a stale Q;
// each tile computes what the one-block-per-tile launch computes, so each output is bit for bit its
// twin's without /pe (the same tile, stages, dtype, overlap and ping-pong). Causal shapes are refused.
TEST(KernelsWgmma16, PersistentMatchesTheReferenceAndItsTwinOnInferenceShapes) {
  SKIP_WITHOUT_SM90("wgmma16");
  std::vector<const KernelInstance*> pe;
  for (const KernelInstance* k : instances_of(Variant::Wgmma16))
    if (k->config().persistent) pe.push_back(k);
  if (pe.empty()) GTEST_SKIP() << "no wgmma16 /pe instance compiled (or none matches the filter)";
  check_inference_shapes_against_twins(
      pe, "/pe",
      [](const TileConfig& c, const TileConfig& t) {
        TileConfig twin = c;
        twin.persistent = false;
        return t == twin;
      },
      /*many_tiles=*/true);
}

// [batch, N, heads, d] views (heads = 3) with O in a buffer whose rows have 8 elements of gap:
// bit for bit the packed launch, nothing written outside O's rows.
TEST(KernelsWgmma16, StridedOperandsMatchThePackedLaunchBitForBit) {
  SKIP_WITHOUT_SM90("wgmma16");
  const auto kernels = instances_of(Variant::Wgmma16);
  if (kernels.empty()) GTEST_SKIP() << "no wgmma16 instance compiled";
  testing_support::check_strided_half_launches(kernels);
}

// The refusals need no device: an sm_80 device in can_implement, and strides a tensor map cannot
// hold in can_address, each in one line naming the reason.
TEST(KernelsWgmma16, RefusesOlderGpusAndOperandsTmaCannotAddress) {
  const auto kernels = instances_of(Variant::Wgmma16);
  if (kernels.empty()) GTEST_SKIP() << "no wgmma16 instance compiled (the build does not target sm_90)";
  const KernelInstance* k = kernels.front();
  DeviceLimits a100;
  a100.name = "NVIDIA A100-SXM4-80GB";
  a100.cc_major = 8;
  a100.max_threads_per_block = 1024;
  a100.smem_per_block_optin = 227 * 1024;
  Workload w;
  w.B = 2;
  w.N = 100;
  w.d = k->config().d;
  w.dtype = k->config().dtype;
  const Support old = k->can_implement(w, a100);
  EXPECT_FALSE(old);
  EXPECT_EQ(old.reason, "wgmma16 needs an sm_90a GPU (wgmma, TMA): NVIDIA A100-SXM4-80GB is compute capability 8.0");

  // A batch stride of 2^39 elements is 2^40 bytes: past what a tensor map's stride can hold, though
  // every other family addresses it.
  alignas(16) static uint16_t dummy[16];
  const long long huge = 1LL << 39;
  AttentionTensors t{dummy, dummy, dummy, dummy, AttentionStrides::uniform(1, {huge, 0, w.d})};
  ASSERT_TRUE(check_tensors(t, w)) << check_tensors(t, w).reason;
  const Support far = k->can_address(t, w);
  EXPECT_FALSE(far);
  EXPECT_NE(far.reason.find("q batch stride 549755813888 elements cannot be addressed by TMA"), std::string::npos)
      << far.reason;
  EXPECT_EQ(far.reason.find('\n'), std::string::npos);
}

TEST(KernelsWgmma16, LaunchRefusesAnotherDtypeAndNoSpills) {
  SKIP_WITHOUT_SM90("wgmma16");
  const DeviceLimits dev = DeviceLimits::query(0);
  for (const KernelInstance* kern : instances_of(Variant::Wgmma16)) {
    Workload w;
    w.d = kern->config().d;
    w.N = 64;
    w.dtype = DType::Fp32;
    EXPECT_FALSE(kern->can_implement(w, dev)) << kern->name();
    EXPECT_EQ(kern->launch(nullptr, nullptr, nullptr, nullptr, w, nullptr), cudaErrorInvalidValue) << kern->name();
    const KernelResources r = kern->resources();
    EXPECT_EQ(r.local_bytes, 0) << kern->name() << " uses local memory (spills)";
    // Reallocating warpgroups report the launch value exactly; a single consumer what ptxas chose.
    const int estimate = make_geometry(kern->config()).registers_estimate;
    if (traits::Wgmma16::reallocates_registers(kern->config()))
      EXPECT_EQ(r.registers, estimate) << kern->name();
    else
      EXPECT_NEAR(r.registers, estimate, 0.1 * estimate) << kern->name();
    std::printf("%-44s regs %3d  local %d  threads %4d  smem %6d B\n", kern->name().c_str(), r.registers,
                r.local_bytes, r.threads_per_block, r.dynamic_smem_bytes);
  }
}

// The seed cases in bf16 (and n1k_d128 causal, n4k_d128): every wgmma16 and mma16 bf16 instance of
// the case's d, L2 flushed before each launch, median of 15 after 3 warm-ups; the best of each
// family. Run with --gtest_also_run_disabled_tests --gtest_filter='*Wgmma16Timing*'.
TEST(KernelsWgmma16Timing, DISABLED_SeedCasesBf16BesideMma16) {
  SKIP_WITHOUT_SM90("wgmma16");
  struct Case {
    const char* name;
    long long B, N;
    int d;
    bool causal;
  };
  const Case cases[] = {{"t10", 10, 2048, 64, false},         {"t22", 500, 2048, 64, false},
                        {"t30", 2, 32768, 64, false},         {"h16k", 16, 4096, 64, false},
                        {"n1k_d128", 64, 1024, 128, false},   {"n1k_d128_causal", 64, 1024, 128, true},
                        {"n1999_d64_causal", 24, 1999, 64, true}, {"n4k_d128", 16, 4096, 128, false},
                        {"n8k_d128", 8, 8192, 128, false}};
  const DeviceLimits dev = DeviceLimits::query(0);
  testing_support::L2FlushedTimer timer;
  ASSERT_TRUE(timer.ready());
  nlohmann::json report = nlohmann::json::array();
  std::mt19937 rng(1);
  std::vector<const KernelInstance*> kernels = instances_of(Variant::Wgmma16);
  for (const KernelInstance* k : instances_of(Variant::Mma16)) kernels.push_back(k);
  for (const Case& c : cases) {
    Workload w;
    w.B = c.B;
    w.N = c.N;
    w.d = c.d;
    w.causal = c.causal;
    w.dtype = DType::Bf16;
    const std::size_t n = static_cast<std::size_t>(w.B * w.N * w.d);
    const HalfOperand q = random_half_operand(n, 1.0f, w.dtype, rng), k = random_half_operand(n, 1.0f, w.dtype, rng),
                      v = random_half_operand(n, 1.0f, w.dtype, rng);
    DeviceBuffer<uint16_t> qb(n), kb(n), vb(n), ob(n);
    ASSERT_TRUE(qb.ptr && kb.ptr && vb.ptr && ob.ptr);
    CUDA_OK(cudaMemcpy(qb.ptr, q.bits.data(), n * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(kb.ptr, k.bits.data(), n * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(vb.ptr, v.bits.data(), n * 2, cudaMemcpyHostToDevice));
    std::map<Variant, std::pair<double, std::string>> best;
    for (const KernelInstance* kern : kernels) {
      if (kern->config().d != c.d || kern->config().dtype != w.dtype || !kern->can_implement(w, dev)) continue;
      double med = 0;
      timer.median_ms([&] { return kern->launch(qb.ptr, kb.ptr, vb.ptr, ob.ptr, w, nullptr); }, med);
      if (HasFatalFailure()) return;
      const double tflops = w.nominal_flops() / (med * 1e-3) / 1e12;
      std::printf("%-18s %-46s %9.4f ms %7.1f TFLOP/s\n", c.name, kern->name().c_str(), med, tflops);
      report.push_back({{"case", c.name}, {"config", kern->name()}, {"median_ms", med}, {"tflops", tflops}});
      auto& b = best[kern->config().variant];
      if (b.second.empty() || med < b.first) b = {med, kern->name()};
    }
    for (const auto& [var, b] : best)
      std::printf("BEST %-18s %-8s %-46s %9.4f ms %7.1f TFLOP/s\n", c.name, variant_name(var), b.second.c_str(), b.first,
                  w.nominal_flops() / (b.first * 1e-3) / 1e12);
  }
  if (const char* path = env("FLASHTUNE_TIMING_REPORT")) std::ofstream(path) << report.dump(2) << "\n";
}

}  // namespace
}  // namespace flashtune
