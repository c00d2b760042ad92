// The decode family's traits (work split, shared memory, what it refuses) and its model (bytes
// over bandwidth, waves of split blocks, the split count it picks). Host only.
#include <gtest/gtest.h>

#include <string>

#include "kernels/traits/decode_traits.h"
#include "kernels/traits/variants.h"
#include "model/coefficients.h"
#include "model/decode_model.h"
#include "model/gpu_spec.h"

namespace flashtune {
namespace {

using traits::Decode;

model::GpuSpec h100() { return model::load_gpu_spec(std::string(FLASHTUNE_TEST_GPU_DIR) + "/nvidia-h100-sxm.json"); }

TileConfig bf16_d128() { return {Variant::Decode, 128, 16, 32, Layout::Swizzled, DType::Bf16, 2, false}; }

TEST(DecodeTraits, EveryCompiledConfigBuildsAndNamesRoundTrip) {
  int n = 0;
  for (const TileConfig& c : compiled_configs()) {
    if (c.variant != Variant::Decode) continue;
    ++n;
    EXPECT_FALSE(tile_rejection(c)) << c.name();
    EXPECT_LE(Decode::smem_bytes(c), traits::kMaxSmemOptinBytes) << c.name();
    const auto back = parse_config_name(c.name());
    ASSERT_TRUE(back) << c.name();
    EXPECT_EQ(*back, c);
  }
  EXPECT_GT(n, 0);
}

TEST(DecodeTraits, RefusalsNameTheKnob) {
  TileConfig c = bf16_d128();
  c.d = 32;
  EXPECT_NE(tile_rejection(c)->find("d in {64, 128}"), std::string::npos);
  c = bf16_d128();
  c.Br = 8;
  EXPECT_NE(tile_rejection(c)->find("Br"), std::string::npos);
  c = bf16_d128();
  c.dtype = DType::Fp32;  // fp32 takes Br 1..16 and Bc 16 / 32, but 4 warps x 2 stages of 32 fp32 keys
  EXPECT_NE(tile_rejection(c)->find("shared memory"), std::string::npos);  // at d = 128 are 256 KB
  c.d = 64;
  EXPECT_FALSE(tile_rejection(c));
  c.Bc = 64;
  EXPECT_NE(tile_rejection(c)->find("Bc"), std::string::npos);
  c = bf16_d128();
  c.layout = Layout::Padded;
  EXPECT_NE(tile_rejection(c)->find("swizzled"), std::string::npos);
  c = bf16_d128();
  c.stages = 5;
  EXPECT_NE(tile_rejection(c)->find("stages"), std::string::npos);
}

TEST(DecodeTraits, ShapeCoversEveryKeyTileOnceInWholeBlockTiles) {
  const TileConfig c = bf16_d128();
  for (long long keys : {1LL, 127LL, 4097LL, 131071LL})
    for (int asked : {1, 3, 7, 64, 1 << 20}) {
      const Decode::Shape s = Decode::shape(c, 2, 32, 8, 4, keys, asked);
      EXPECT_EQ(s.kv_entries, 2 * 4);
      EXPECT_EQ(s.rows, 32);
      EXPECT_EQ(s.row_tiles, 2);
      EXPECT_EQ(s.chunk_tiles % Decode::kWarps, 0);
      EXPECT_GE(s.splits, 1);
      EXPECT_LE(s.splits, asked);
      EXPECT_GE(s.chunk_tiles * s.splits, s.key_tiles);            // every tile in some chunk
      EXPECT_LT(s.chunk_tiles * (s.splits - 1), s.key_tiles);      // no empty chunk
      EXPECT_EQ(s.blocks, s.kv_entries * s.row_tiles * s.splits);
    }
}

TEST(DecodeTraits, DefaultSplitAboutOneBlockPerSm) {
  const TileConfig c = bf16_d128();
  // 8 K/V heads x 32768 keys on 132 SMs: round(132 / 8) = 17 (16.5 rounds up).
  EXPECT_EQ(Decode::default_splits(c, 1, 32, 4, 1, 32768, 132), 17);
  // 256 K/V entries already fill the SMs: one split, no combine.
  EXPECT_EQ(Decode::default_splits(c, 8, 32, 1, 1, 4096, 132), 1);
  // A short cache keeps chunks of at least 8 tiles per warp: 4096 keys = 32 block tiles -> 4.
  EXPECT_EQ(Decode::default_splits(c, 1, 32, 4, 1, 4096, 132), 4);
}

TEST(DecodeModel, MemoryBoundAtScaleAndSplitsWhereTheGridIsSmall) {
  const model::GpuSpec gpu = h100();
  const model::Coefficients k;
  Workload big;
  big.B = 8 * 32, big.N = 1, big.d = 128, big.dtype = DType::Bf16, big.kv_len = 65536, big.kv_group = 1;
  const model::DecodePrediction p = model::pick_decode_splits(big, bf16_d128(), gpu, k);
  ASSERT_TRUE(p.refusal.empty()) << p.refusal;
  EXPECT_EQ(p.bound, "dram");
  // Never faster than its bytes at the datasheet bandwidth.
  EXPECT_GT(p.time_s, p.dram_bytes / gpu.dram_bytes_per_s());
  EXPECT_LT(p.time_s, 1.3 * p.dram_bytes / (gpu.dram_bytes_per_s() * k.dram_efficiency));

  Workload small = big;
  small.B = 32, small.kv_group = 4, small.kv_len = 32768;  // 8 K/V heads
  const model::DecodePrediction one = model::predict_decode(small, bf16_d128(), gpu, k, 1);
  const model::DecodePrediction best = model::pick_decode_splits(small, bf16_d128(), gpu, k);
  EXPECT_EQ(one.bound, "stream");  // 8 blocks cannot pull the bandwidth
  EXPECT_GT(best.splits, 1);
  EXPECT_LT(best.time_s, 0.5 * one.time_s);
  EXPECT_GT(best.combine_s, 0.0);
}

TEST(DecodeModel, RefusesWhatTheFamilyDoesNotServe) {
  const model::GpuSpec gpu = h100();
  Workload w;
  w.B = 32, w.N = 128, w.d = 128, w.dtype = DType::Bf16, w.kv_len = 4096;
  EXPECT_FALSE(model::predict_decode(w, bf16_d128(), gpu, {}, 0).refusal.empty());
  w.N = 1;
  w.kv_group = 3;  // 32 is not a multiple of 3
  EXPECT_FALSE(model::predict_decode(w, bf16_d128(), gpu, {}, 0).refusal.empty());
}

}  // namespace
}  // namespace flashtune
