// The registry and can_implement(), with device limits written by hand: needs no GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "kernels/registry.h"
#include "kernels/support_checks.h"
#include "kernels/traits/variants.h"

namespace flashtune {
namespace {

// An H100-like device, with the shared-memory opt-in limit of an RTX 3090 (99 KB) so that the
// larger tiles are refused.
DeviceLimits small_smem_device() {
  DeviceLimits d;
  d.name = "test device";
  d.cc_major = 9;
  d.sm_count = 132;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.smem_per_block_optin = 101376;
  d.smem_per_sm = 233472;
  d.regs_per_sm = 65536;
  d.global_mem_bytes = 80LL << 30;
  d.l2_bytes = 50 << 20;
  return d;
}

TEST(KernelRegistry, HoldsExactlyTheCompiledConfigsInOrder) {
  const auto& reg = kernel_registry();
  const auto& compiled = compiled_configs();
  ASSERT_EQ(reg.size(), compiled.size());
  for (std::size_t i = 0; i < reg.size(); ++i) {
    EXPECT_EQ(reg[i]->config(), compiled[i]) << reg[i]->name() << " vs " << compiled[i].name();
    EXPECT_EQ(find_kernel(compiled[i]), reg[i]);
  }
  EXPECT_EQ(find_kernel({Variant::RowReg, 128, 64, 32, Layout::Plain}), nullptr);
}

TEST(KernelRegistry, CanImplementRefusesWithOneClearLine) {
  const DeviceLimits dev = small_smem_device();
  const KernelInstance* k = kernel_registry().front();
  const TileConfig& c = k->config();
  Workload w;
  w.B = 2;
  w.N = 1000;
  w.d = c.d;
  EXPECT_TRUE(k->can_implement(w, dev)) << k->can_implement(w, dev).reason;

  Workload other = w;
  other.d = c.d == 64 ? 32 : 64;
  EXPECT_EQ(k->can_implement(other, dev).reason,
            "config is for d=" + std::to_string(c.d) + ", workload has d=" + std::to_string(other.d));
  other.d = 48;
  EXPECT_EQ(k->can_implement(other, dev).reason, "d=48 is not supported (kernels exist for d in {32, 64, 128})");

  Workload bad = w;
  bad.N = 0;
  EXPECT_EQ(k->can_implement(bad, dev).reason, "N must be >= 1 (got 0)");
  bad = w;
  bad.B = 0;
  EXPECT_EQ(k->can_implement(bad, dev).reason, "B must be >= 1 (got 0)");

  const int smem = make_geometry(c).smem_bytes;
  DeviceLimits tiny = dev;
  tiny.smem_per_block_optin = smem - 4;
  EXPECT_EQ(k->can_implement(w, tiny).reason, "needs " + std::to_string(smem) + " B of shared memory, device allows " +
                                                  std::to_string(smem - 4) + " B");

  DeviceLimits few_threads = dev;
  few_threads.max_threads_per_block = 8;
  EXPECT_FALSE(k->can_implement(w, few_threads));

  Workload huge = w;
  huge.B = 1LL << 40;  // B folded into grid.x overflows 2^31 - 1 blocks
  EXPECT_NE(k->can_implement(huge, dev).reason.find("exceeds the device limit"), std::string::npos);
  huge.B = 100000;  // folded grid fits, memory fits
  huge.N = 8;
  EXPECT_TRUE(k->can_implement(huge, dev)) << k->can_implement(huge, dev).reason;
  huge.B = 100;
  huge.N = 1 << 26;  // 16 * 100 * 2^26 * d bytes: more than 80 GB, grid of at most 2^22 x 100 blocks
  EXPECT_NE(k->can_implement(huge, dev).reason.find("of device memory"), std::string::npos);
}

// The grid's order (traits::grid_order): a causal grid of a heavy-first kernel runs batch-fastest
// while its tile count fits grid.y; every other grid runs tile-fastest, B folded into grid.x above
// grid.y's limit.
TEST(LaunchShape, CausalGridsOfHeavyFirstKernelsRunBatchFastest) {
  using kernels::launch_shape;
  using traits::GridOrder;
  const kernels::LaunchShape heavy = launch_shape({64, 1024, 128, true, 0}, 128, true);
  ASSERT_TRUE(heavy.ok);
  EXPECT_EQ(heavy.order, GridOrder::BatchFastest);
  EXPECT_EQ(heavy.grid.x, 64u);
  EXPECT_EQ(heavy.grid.y, 8u);
  EXPECT_EQ(heavy.blocks, 512);
  const kernels::LaunchShape light = launch_shape({64, 1024, 128, true, 0}, 128, false);
  EXPECT_EQ(light.order, GridOrder::TileFastest);
  EXPECT_EQ(light.grid.x, 8u);
  EXPECT_EQ(light.grid.y, 64u);
  EXPECT_EQ(launch_shape({64, 1024, 128, false, 0}, 128, true).order, GridOrder::TileFastest);
  // B above grid.y: batch-fastest still fits (B on x); tile-fastest folds.
  const kernels::LaunchShape wide = launch_shape({100000, 77, 64, true, 0}, 64, true);
  EXPECT_EQ(wide.order, GridOrder::BatchFastest);
  EXPECT_EQ(wide.grid.x, 100000u);
  EXPECT_EQ(wide.grid.y, 2u);
  const kernels::LaunchShape folded = launch_shape({100000, 77, 64, false, 0}, 64, true);
  EXPECT_EQ(folded.order, GridOrder::Folded);
  EXPECT_EQ(folded.grid.x, 200000u);
  // More query tiles than grid.y holds: tile-fastest.
  const kernels::LaunchShape tall = launch_shape({2, 65536LL * 32 + 1, 32, true, 0}, 32, true);
  EXPECT_EQ(tall.order, GridOrder::TileFastest);
  EXPECT_EQ(tall.grid.x, 65537u);
}

TEST(KernelRegistry, OversizeSharedMemoryIsRefusedOnA99KBDevice) {
  const DeviceLimits dev = small_smem_device();
  int refused = 0;
  for (const KernelInstance* k : kernel_registry()) {
    Workload w;
    w.B = 1;
    w.N = k->config().variant == Variant::Decode ? 1 : 128;  // decode serves N <= 64
    w.d = k->config().d;
    w.dtype = k->config().dtype;
    const int smem = make_geometry(k->config()).smem_bytes;
    const Support s = k->can_implement(w, dev);
    if (smem > dev.smem_per_block_optin) {
      ++refused;
      EXPECT_EQ(s.reason, "needs " + std::to_string(smem) + " B of shared memory, device allows 101376 B");
    } else {
      EXPECT_TRUE(s) << k->name() << ": " << s.reason;
    }
  }
#if !FLASHTUNE_SMALL_KERNEL_SET
  EXPECT_GT(refused, 0) << "the full set should hold a config above 99 KB of shared memory";
#endif
}

TEST(KernelRegistry, DefaultConfigIsCompiledForTheWorkloadsD) {
  for (int d : {32, 64, 128}) {
    Workload w;
    w.B = 8;
    w.N = 2048;
    w.d = d;
    const TileConfig c = default_config(w);
    EXPECT_EQ(c.d, d);
    EXPECT_FALSE(tile_rejection(c)) << c.name();
    const bool any_for_d = std::any_of(kernel_registry().begin(), kernel_registry().end(),
                                       [d](const KernelInstance* k) {
                                         return k->config().d == d && k->config().dtype == DType::Fp32;
                                       });
    if (any_for_d) {
      EXPECT_NE(find_kernel(c), nullptr) << c.name();
    }
  }
}

// check_tensors() only looks at addresses, so fake, aligned device addresses stand in here.
TEST(KernelRegistry, CheckTensorsAcceptsTheDenseLayoutsAndRefusesWhatNoKernelCanAddress) {
  Workload w;
  w.B = 6;  // batch 2 x heads 3
  w.N = 77;
  w.d = 64;
  float* const base = reinterpret_cast<float*>(std::uintptr_t{1} << 20);
  const auto tensors = [&](const AttentionStrides& s) { return AttentionTensors{base, base, base, base, s}; };
  for (TensorLayout l : kAllTensorLayouts) {
    const long long heads = l == TensorLayout::Bnd ? 1 : 3;
    EXPECT_TRUE(check_tensors(tensors(AttentionStrides::dense(l, w, heads)), w)) << tensor_layout_name(l);
  }
  const AttentionStrides bnhd = AttentionStrides::dense(TensorLayout::Bnhd, w, 3);
  EXPECT_EQ(bnhd.q.row, 3 * 64);
  EXPECT_EQ(bnhd.q.head, 64);
  EXPECT_EQ(bnhd.q.batch, 77 * 3 * 64);

  AttentionStrides s = bnhd;
  s.k.row = 66;
  EXPECT_EQ(check_tensors(tensors(s), w).reason,
            "k row stride 66 is not a multiple of 4 floats (the kernels load and store 16-byte vectors)");
  s = bnhd;
  s.v.head = -64;
  EXPECT_EQ(check_tensors(tensors(s), w).reason, "v head stride -64 is negative");
  s = bnhd;
  s.o.row = 32;
  EXPECT_EQ(check_tensors(tensors(s), w).reason, "o row stride 32 is below d=64: output rows would overlap");
  s = bnhd;
  s.q.row = 1LL << 32;
  EXPECT_EQ(check_tensors(tensors(s), w).reason, "q row stride 4294967296 is above the kernels' limit 2147483647");
  s = bnhd;
  s.v.head = 128;
  EXPECT_EQ(check_tensors(tensors(s), w).reason,
            "k and v head strides differ (64 and 128): the kernels address an entry's K and V with one offset");
  s = bnhd;
  s.heads = 4;
  EXPECT_EQ(check_tensors(tensors(s), w).reason, "B=6 is not a multiple of heads=4");
  AttentionTensors t = tensors(bnhd);
  t.k = base + 1;
  EXPECT_EQ(check_tensors(t, w).reason,
            "k is not 16-byte aligned (the kernels load and store float4 / cp.async 16 B)");
  t = tensors(bnhd);
  t.o = nullptr;
  EXPECT_EQ(check_tensors(t, w).reason, "o is a null pointer");
  // A stride that never multiplies a non-zero index is free: one head, so the head stride is unused.
  Workload one_head = w;
  one_head.B = 2;
  AttentionStrides s1 = AttentionStrides::dense(TensorLayout::Bnhd, one_head, 1);
  s1.q.head = 3;
  EXPECT_TRUE(check_tensors(tensors(s1), one_head)) << check_tensors(tensors(s1), one_head).reason;
}

}  // namespace
}  // namespace flashtune
