// Command-line config selection, checked against the compiled set (variants.h), no GPU needed.
#include <gtest/gtest.h>

#include <algorithm>

#include "kernels/traits/variants.h"
#include "tuner/config_select.h"

namespace flashtune {
namespace {

std::string usage_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ConfigSelect, HeadDimsAreTheCompiledOnes) {
  const std::vector<int> ds = compiled_head_dims();
  ASSERT_FALSE(ds.empty());
  EXPECT_TRUE(std::is_sorted(ds.begin(), ds.end()));
  // The decode family's head dims are not the tiled families' (compiled_head_dims leaves it out).
  for (const TileConfig& c : compiled_configs())
    if (c.dtype == DType::Fp32 && c.variant != Variant::Decode) EXPECT_NE(std::find(ds.begin(), ds.end(), c.d), ds.end());
  for (DType t : {DType::Bf16, DType::Fp16})
    for (const TileConfig& c : compiled_configs())
      if (c.dtype == t && c.variant != Variant::Decode) EXPECT_NE(std::find(compiled_head_dims(t).begin(), compiled_head_dims(t).end(), c.d), compiled_head_dims(t).end());
}

TEST(ConfigSelect, UnsupportedHeadDimListsCompiled) {
  EXPECT_EQ(usage_error_of([] { require_compiled_head_dim(48); }),
            "unsupported d=48 (compiled: " + join_ints(compiled_head_dims()) + ")");
  EXPECT_EQ(join_ints({32, 64, 128}), "32, 64, 128");
}

TEST(ConfigSelect, UnknownNamesListTheKnownOnes) {
  EXPECT_EQ(usage_error_of([] { parse_variant_or_throw("row_fast"); }),
            "unknown variant 'row_fast' (known: row_smem, row_reg, warp_groups, regtile_2d, mma_3xtf32, mma_1xtf32, mma16, wgmma16, decode, wgmma_3xtf32, wgmma_1xtf32)");
  EXPECT_EQ(usage_error_of([] { parse_precision_or_throw("fp16"); }), "unknown precision 'fp16' (known: fp32, tf32)");
  EXPECT_EQ(parse_precision_or_throw("tf32"), Precision::Tf32);
  EXPECT_EQ(parse_precision_or_throw("fp32"), Precision::Fp32);
  EXPECT_EQ(usage_error_of([] { parse_layout_or_throw("tiled"); }),
            "unknown layout 'tiled' (known: plain, padded, swizzled)");
  EXPECT_EQ(parse_variant_or_throw("warp_groups"), Variant::WarpGroups);
  EXPECT_EQ(parse_layout_or_throw("padded"), Layout::Padded);
}

TEST(ConfigSelect, DefaultWinsWhenCompiled) {
  const TileConfig first = compiled_configs().front();
  EXPECT_EQ(select_config(first.d, {}, first), first);
}

TEST(ConfigSelect, RequestFieldsAreHonoured) {
  for (const TileConfig& c : compiled_configs()) {
    if (c.variant == Variant::Decode) continue;  // served by its own launch (decode_api.h), not select_config
    ConfigRequest r;
    r.precision = variant_precision(c.variant);  // what the variant needs (tf32 for mma_1xtf32)
    r.variant = c.variant;
    r.Br = c.Br;
    r.Bc = c.Bc;
    r.layout = c.layout;
    r.dtype = c.dtype;
    r.stages = c.stages;
    r.q_smem = c.q_smem;
    r.overlap = c.overlap;  // wgmma16's /ov and its serial twin share every other field
    r.ping_pong = c.ping_pong;  // and /pp with its twin without it
    r.persistent = c.persistent;  // and /pe with its one-block-per-tile twin
    EXPECT_EQ(select_config(c.d, r, compiled_configs().front()), c) << c.name();
    ConfigRequest only_variant;
    only_variant.precision = variant_precision(c.variant);
    only_variant.dtype = c.dtype;
    only_variant.variant = c.variant;
    const TileConfig picked = select_config(c.d, only_variant, compiled_configs().front());
    EXPECT_EQ(picked.variant, c.variant);
    EXPECT_EQ(picked.d, c.d);
  }
}

TEST(ConfigSelect, NotCompiledConfigIsNamed) {
  const TileConfig c = compiled_configs().front();
  ConfigRequest r;
  r.variant = c.variant;
  r.Br = 1024;  // no variant tiles 1024 query rows
  const std::string msg = usage_error_of([&] { select_config(c.d, r, c); });
  EXPECT_EQ(msg.rfind("config " + std::string(variant_name(c.variant)) + "/d" + std::to_string(c.d) + "/br1024xbc*/*", 0),
            0u)
      << msg;
  EXPECT_NE(msg.find("is not compiled (compiled for d=" + std::to_string(c.d) + ": " + c.name()), std::string::npos)
      << msg;
}

TEST(ConfigSelect, MatchingConfigsFilterAndKeepOrder) {
  const TileConfig c = compiled_configs().front();
  ConfigRequest r;
  r.variant = c.variant;
  const std::vector<TileConfig> m = matching_configs(c.d, r);
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.front(), c);
  for (const TileConfig& x : m) {
    EXPECT_EQ(x.variant, c.variant);
    EXPECT_EQ(x.d, c.d);
  }
  EXPECT_TRUE(matching_configs(48, {}).empty());
}

TEST(ConfigSelect, PrecisionAdmitsFp32AccurateVariantsByDefault) {
  for (Variant v : kAllVariants) {
    EXPECT_TRUE(precision_admits(Precision::Tf32, v)) << variant_name(v);
    EXPECT_EQ(precision_admits(Precision::Fp32, v), variant_precision(v) == Precision::Fp32) << variant_name(v);
  }
  EXPECT_TRUE(precision_admits(Precision::Fp32, Variant::MmaTf32x3));
  EXPECT_FALSE(precision_admits(Precision::Fp32, Variant::MmaTf32x1));
  EXPECT_EQ(ConfigRequest{}.precision, Precision::Fp32);
}

TEST(ConfigSelect, Tf32ConfigsMatchOnlyUnderTf32) {
  bool any_tf32 = false;
  for (int d : compiled_head_dims()) {
    ConfigRequest fp32, tf32;
    tf32.precision = Precision::Tf32;
    const std::vector<TileConfig> strict = matching_configs(d, fp32), loose = matching_configs(d, tf32);
    for (const TileConfig& c : strict) EXPECT_EQ(variant_precision(c.variant), Precision::Fp32) << c.name();
    std::size_t tf32_only = 0;
    for (const TileConfig& c : compiled_configs())
      if (c.d == d && variant_precision(c.variant) == Precision::Tf32) ++tf32_only;
    any_tf32 = any_tf32 || tf32_only > 0;
    EXPECT_EQ(loose.size(), strict.size() + tf32_only) << "d=" << d;
  }
  EXPECT_TRUE(any_tf32) << "no mma_1xtf32 config compiled";
}

TEST(ConfigSelect, NamedTf32VariantNeedsTf32Precision) {
  for (const TileConfig& c : compiled_configs()) {
    if (variant_precision(c.variant) != Precision::Tf32) continue;
    ConfigRequest r;
    r.variant = c.variant;
    EXPECT_EQ(usage_error_of([&] { select_config(c.d, r, c); }),
              std::string(variant_name(c.variant)) +
                  " is TF32-accurate only (rel L2 up to 1e-02): pass --precision tf32 to use it");
    r.precision = Precision::Tf32;
    EXPECT_EQ(select_config(c.d, r, c), c);
  }
}

}  // namespace
}  // namespace flashtune
