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
#include "gpu_test_support.h"
#include "half_operands.h"
#include "kernels/reference.h"
#include "kernels/registry.h"
#include "kernels/traits/variants.h"

namespace flashtune {
namespace {

using testing_support::from_bits;
using testing_support::HalfOperand;
using testing_support::random_half_operand;
template <class T>
using DeviceBuffer = testing_support::DeviceArray<T>;

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// No device, or a device without wgmma: skip, saying which.
#define SKIP_WITHOUT_SM90()                                                                      \
  do {                                                                                           \
    const std::string why_ = testing_support::no_gpu_reason();                                   \
    if (!why_.empty()) GTEST_SKIP() << "no CUDA device: " << why_;                               \
    const DeviceLimits d_ = DeviceLimits::query(0);                                              \
    if (d_.cc_major * 10 + d_.cc_minor < kWgmmaMinComputeCapability)                             \
      GTEST_SKIP() << "wgmma16 needs sm_90a; " << d_.name << " is " << d_.cc_major << "." << d_.cc_minor; \
  } while (0)

std::vector<const KernelInstance*> instances_of(Variant v) {
  const char* filter = env("FLASHTUNE_KERNEL_FILTER");
  std::vector<const KernelInstance*> out;
  for (const KernelInstance* k : kernel_registry())
    if (k->config().variant == v && (!filter || k->name().find(filter) != std::string::npos)) out.push_back(k);
  return out;
}

std::string describe(const Workload& w, float amp_q) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "B=%lld N=%lld d=%d causal=%d %s q in [-%g, %g]", w.B, w.N, w.d, int(w.causal),
                dtype_name(w.dtype), double(amp_q), double(amp_q));
  return buf;
}

TEST(KernelsWgmma16, EveryInstanceMatchesTheDoubleReferenceOnRoundedInputs) {
  SKIP_WITHOUT_SM90();
  const DeviceLimits dev = DeviceLimits::query(0);
  const auto kernels = instances_of(Variant::Wgmma16);
  if (kernels.empty()) GTEST_SKIP() << "no wgmma16 instance compiled (or none matches the filter)";
  const bool quick = env("FLASHTUNE_TEST_QUICK") != nullptr;
  struct Shape {
    long long B, N;
  };
  // N = 1, 17, 1000, 2049: no multiple of any tile; 512: a multiple of every tile.
  const std::vector<Shape> shapes =
      quick ? std::vector<Shape>{{2, 77}} : std::vector<Shape>{{3, 1}, {3, 17}, {2, 512}, {2, 1000}, {1, 2049}};
  struct Worst {
    double rel_l2 = 0, max_abs = 0;
    std::string where;
    long long checks = 0;
  };
  std::map<std::string, Worst> worst;  // per dtype
  std::mt19937 rng(25);
  for (DType t : {DType::Bf16, DType::Fp16})
    for (int d : {64, 128}) {
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
            const HalfOperand q = random_half_operand(n, amp, t, rng), k = random_half_operand(n, 3.0f, t, rng),
                              v = random_half_operand(n, 3.0f, t, rng);
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
  for (const auto& [dt, wv] : worst)
    std::printf("worst rel L2 wgmma16 %-5s %.3e  (max abs %.3e, %lld checks; tolerance %.0e) at %s\n", dt.c_str(),
                wv.rel_l2, wv.max_abs, wv.checks, rel_l2_tolerance(*parse_dtype(dt)), wv.where.c_str());
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
// persistent grid, its last round partial), under causal too.
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
  long long checks = 0, twins = 0;
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
        const std::size_t nq = static_cast<std::size_t>(w.B * w.N * w.d);
        const std::size_t nkv = static_cast<std::size_t>(w.B / w.kv_group * w.keys() * w.d);
        const HalfOperand q = random_half_operand(nq, 6.0f, c.dtype, rng), k = random_half_operand(nkv, 3.0f, c.dtype, rng),
                          v = random_half_operand(nkv, 3.0f, c.dtype, rng);
        DeviceBuffer<float> qf(nq), kf(nkv), vf(nkv);
        DeviceBuffer<double> ref_d(nq);
        DeviceBuffer<uint16_t> qb(nq), kb(nkv), vb(nkv), ob(nq), tb(nq);
        ASSERT_TRUE(qf.ptr && kf.ptr && vf.ptr && ref_d.ptr && qb.ptr && kb.ptr && vb.ptr && ob.ptr && tb.ptr);
        CUDA_OK(cudaMemcpy(qf.ptr, q.exact.data(), nq * 4, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(kf.ptr, k.exact.data(), nkv * 4, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(vf.ptr, v.exact.data(), nkv * 4, cudaMemcpyHostToDevice));
        Workload wr = w;
        wr.dtype = DType::Fp32;
        CUDA_OK(attention_reference_gpu(qf.ptr, kf.ptr, vf.ptr, ref_d.ptr, wr, nullptr));
        std::vector<double> ref(nq);
        CUDA_OK(cudaMemcpy(ref.data(), ref_d.ptr, nq * 8, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(qb.ptr, q.bits.data(), nq * 2, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(kb.ptr, k.bits.data(), nkv * 2, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(vb.ptr, v.bits.data(), nkv * 2, cudaMemcpyHostToDevice));
        char buf[160];
        std::snprintf(buf, sizeof buf, " B=%lld Nq=%lld Nkv=%lld g=%d%s", w.B, w.N, w.keys(), w.kv_group,
                      causal ? " causal" : "");
        const std::string where = kern->name() + buf;
        const Support s = kern->can_implement(w, dev);
        ASSERT_TRUE(s) << where << ": " << s.reason;
        CUDA_OK(cudaMemset(ob.ptr, 0xFF, nq * 2));  // NaN in both dtypes
        CUDA_OK(kern->launch(qb.ptr, kb.ptr, vb.ptr, ob.ptr, w, nullptr));
        CUDA_OK(cudaDeviceSynchronize());
        std::vector<uint16_t> out_bits(nq);
        std::vector<float> out(nq);
        CUDA_OK(cudaMemcpy(out_bits.data(), ob.ptr, nq * 2, cudaMemcpyDeviceToHost));
        for (std::size_t i = 0; i < nq; ++i) out[i] = from_bits(out_bits[i], c.dtype);
        const ErrorStats e = compare_to_reference(out.data(), ref.data(), nq);
        EXPECT_TRUE(e.passes(rel_l2_tolerance(c.dtype)))
            << where << ": rel_l2 " << e.rel_l2 << " max_abs " << e.max_abs << " non-finite " << e.nonfinite;
        ++checks;
        if (e.nonfinite > 0 || e.rel_l2 >= worst) {
          worst = e.nonfinite > 0 ? INFINITY : e.rel_l2;
          worst_where = where;
        }
        if (twin) {
          CUDA_OK(cudaMemset(tb.ptr, 0xFF, nq * 2));
          CUDA_OK(twin->launch(qb.ptr, kb.ptr, vb.ptr, tb.ptr, w, nullptr));
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
  std::printf("worst rel L2 wgmma16 %s %.3e (%lld checks, %lld bit-for-bit against the twin without it) at %s\n", knob,
              worst, checks, twins, worst_where.c_str());
  EXPECT_GT(checks, 0);
  EXPECT_GT(twins, 0) << "no " << knob << " config has a twin without the knob compiled";
}

TEST(KernelsWgmma16, OverlapMatchesTheReferenceAndTheSerialLoopOnInferenceShapes) {
  SKIP_WITHOUT_SM90();
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
  SKIP_WITHOUT_SM90();
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
// the ping-pong's turns carry over a block's tiles, and causal blocks skip different suffixes from
// tile to tile, where a slip hangs the block or reads a stale Q; each tile computes what the
// one-block-per-tile launch computes, so each output is bit for bit its twin's without /pe (the same
// tile, stages, dtype, overlap and ping-pong).
TEST(KernelsWgmma16, PersistentMatchesTheReferenceAndItsTwinOnInferenceShapes) {
  SKIP_WITHOUT_SM90();
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
  SKIP_WITHOUT_SM90();
  const DeviceLimits dev = DeviceLimits::query(0);
  const auto kernels = instances_of(Variant::Wgmma16);
  if (kernels.empty()) GTEST_SKIP() << "no wgmma16 instance compiled";
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
        const HalfOperand q = random_half_operand(one, 3.0f, c.dtype, rng), k = random_half_operand(one, 3.0f, c.dtype, rng),
                          v = random_half_operand(one, 3.0f, c.dtype, rng);
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
        ASSERT_TRUE(kern->can_address(t, w)) << where << ": " << kern->can_address(t, w).reason;
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
  SKIP_WITHOUT_SM90();
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
  SKIP_WITHOUT_SM90();
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
  const std::size_t flush_bytes = 256u << 20;
  DeviceBuffer<char> flush(flush_bytes);
  ASSERT_TRUE(flush.ptr);
  nlohmann::json report = nlohmann::json::array();
  std::mt19937 rng(1);
  cudaEvent_t start, stop;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&stop));
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
      std::printf("%-18s %-46s %9.4f ms %7.1f TFLOP/s\n", c.name, kern->name().c_str(), med, tflops);
      report.push_back({{"case", c.name}, {"config", kern->name()}, {"median_ms", med}, {"tflops", tflops}});
      auto& b = best[kern->config().variant];
      if (b.second.empty() || med < b.first) b = {med, kern->name()};
    }
    for (const auto& [var, b] : best)
      std::printf("BEST %-18s %-8s %-46s %9.4f ms %7.1f TFLOP/s\n", c.name, variant_name(var), b.second.c_str(), b.first,
                  w.nominal_flops() / (b.first * 1e-3) / 1e12);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (const char* path = env("FLASHTUNE_TIMING_REPORT")) std::ofstream(path) << report.dump(2) << "\n";
}

}  // namespace
}  // namespace flashtune
