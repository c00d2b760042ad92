// Host-only checks of the kernel traits (the geometry the model reads): shared-memory sizes,
// every access site inside the block's shared memory and aligned, tile stores covering their
// tiles exactly, the padding switch changing banks, and the compiled lists being buildable. For
// the tensor-core kernels: the fragment reads' base + step decomposition the kernel relies on,
// and their bank conflicts as the model simulates them (model/bank_sim.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "kernels/traits/mma_tf32_traits.h"
#include "kernels/traits/variants.h"
#include "model/geometry_analysis.h"

namespace flashtune {
namespace {

std::vector<TileConfig> whole_space() {
  std::vector<TileConfig> all;
  for (Variant v : kAllVariants)
    for (int d : {32, 48, 64, 128})
      for (int br : {8, 16, 32, 64, 128})
        for (int bc : {16, 32, 64, 128})
          for (Layout l : kAllLayouts) all.push_back({v, d, br, bc, l});
  return all;
}

std::vector<TileConfig> allowed_space() {
  std::vector<TileConfig> ok;
  for (const TileConfig& c : whole_space())
    if (!tile_rejection(c)) ok.push_back(c);
  return ok;
}

std::vector<TileConfig> allowed_of(Variant v) {
  std::vector<TileConfig> out;
  for (const TileConfig& c : allowed_space())
    if (c.variant == v) out.push_back(c);
  return out;
}

int bank_of(long long byte_address) { return int((byte_address / 4) % 32); }

TEST(KernelTraits, CompiledConfigsAreAllowedUniqueAndOrdered) {
  const auto& compiled = compiled_configs();
  ASSERT_FALSE(compiled.empty());
  for (const TileConfig& c : compiled) EXPECT_FALSE(tile_rejection(c).has_value()) << c.name() << ": " << *tile_rejection(c);
  auto key = [](const TileConfig& c) {
    return std::make_tuple(int(c.variant), c.d, c.Br, c.Bc, int(c.layout), int(c.dtype), c.stages, c.q_smem, c.overlap,
                           c.ping_pong, c.persistent);
  };
  for (std::size_t i = 1; i < compiled.size(); ++i)
    EXPECT_LT(key(compiled[i - 1]), key(compiled[i])) << compiled[i - 1].name() << " before " << compiled[i].name();
  for (Variant v : {Variant::RowSmem, Variant::RowReg, Variant::WarpGroups})
    EXPECT_TRUE(std::any_of(compiled.begin(), compiled.end(), [v](const TileConfig& c) { return c.variant == v; }))
        << variant_name(v) << " has no compiled instantiation";
}

// The one parser of config names (profiles, journals, plots): what name() writes, and only that.
TEST(KernelTraits, ConfigNamesParseBackAndNothingElseDoes) {
  for (const TileConfig& c : compiled_configs()) {
    const auto back = parse_config_name(c.name());
    ASSERT_TRUE(back) << c.name();
    EXPECT_EQ(*back, c);
  }
  const auto c = parse_config_name("regtile_2d/d64/br128xbc32/swizzled");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->Br, 128);
  EXPECT_EQ(c->Bc, 32);
  EXPECT_EQ(c->layout, Layout::Swizzled);
  for (const char* bad : {"", "row_smem", "row_smem/d64/br64xbc32", "row_smem/d64/br64xbc32/fancy",
                          "nope/d64/br64xbc32/plain", "row_smem/d64/br64xbc32x/plain", "row_smem/d64/br64xbc32/plain/x",
                          "row_smem/d64/br64/plain", "row_smem/d64/br64xbc32/diagonal", "row_smem/d064/br64xbc32/plain",
                          "row_smem/d64/br0xbc32/plain", "row_smem/d64/br-16xbc32/plain", "row_smem/d 64/br64xbc32/plain",
                          "row_smem/d64/br99999999999xbc32/plain"})
    EXPECT_FALSE(parse_config_name(bad)) << bad;
}

// fault() is the compile-time check (static_asserts over kCompiled and in every Tile); rejection()
// words it: they must agree on every config, or a compiled tile could be refused at run time.
TEST(KernelTraits, RejectionIsEmptyExactlyWhenFaultIsNone) {
  for (const TileConfig& c : whole_space())
    for (Variant v : kAllVariants)
      traits::visit_variant(v, [&](auto t) {
        using T = decltype(t);
        EXPECT_EQ(T::rejection(c).has_value(), T::fault(c) != traits::TileFault::None)
            << variant_name(v) << " on " << c.name();
        return 0;
      });
}

// A compiled list with a tile its variant cannot build: the index the static_asserts report.
struct RowRegWithD128 {
  static constexpr TileConfig kCompiled[] = {{Variant::RowReg, 64, 64, 32, Layout::Plain},
                                             {Variant::RowReg, 128, 64, 32, Layout::Plain}};
  static constexpr traits::TileFault fault(const TileConfig& c) { return traits::RowReg::fault(c); }
};
static_assert(traits::first_refused_compiled<RowRegWithD128>() == 1);
static_assert(traits::first_refused_compiled<traits::RowReg>() == -1);
static_assert(traits::RowReg::fault({Variant::RowReg, 128, 64, 32, Layout::Plain}) == traits::TileFault::VariantHeadDim);
static_assert(traits::MmaTf32x3::fault({Variant::MmaTf32x3, 64, 16, 64, Layout::Swizzled}) ==
              traits::TileFault::VariantRows);

TEST(KernelTraits, RejectionsNameTheReason) {
  EXPECT_NE(tile_rejection({Variant::RowReg, 128, 64, 32, Layout::Plain})->find("d in {32, 64}"), std::string::npos);
  EXPECT_NE(tile_rejection({Variant::RowSmem, 48, 64, 32, Layout::Plain})->find("d=48"), std::string::npos);
  EXPECT_NE(tile_rejection({Variant::RowSmem, 64, 48, 32, Layout::Plain})->find("Br=48"), std::string::npos);
  EXPECT_NE(tile_rejection({Variant::RowSmem, 64, 64, 32, Layout::Swizzled})->find("plain and padded"),
            std::string::npos);
  EXPECT_NE(tile_rejection({Variant::WarpGroups, 64, 64, 32, Layout::Padded})->find("plain only"),
            std::string::npos);
  // 128 x 129 floats of Q and of S plus 2 x 128 x 128 of K and V: 263168 B > 227 KB.
  const auto big = tile_rejection({Variant::RowSmem, 128, 128, 128, Layout::Padded});
  ASSERT_TRUE(big.has_value());
  EXPECT_NE(big->find("needs 263168 B of shared memory"), std::string::npos) << *big;
  EXPECT_FALSE(tile_rejection({Variant::RowSmem, 64, 64, 32, Layout::Padded}));
}

TEST(KernelTraits, SharedBytesAreTheSumOfTheTiles) {
  for (const TileConfig& c : allowed_space()) {
    const KernelGeometry g = make_geometry(c);
    const int kv = 2 * c.Bc * c.d;  // K and V tiles, unpadded, in every variant of ours
    int floats = -1;
    switch (c.variant) {
      case Variant::RowSmem: {
        const int pad = c.layout == Layout::Padded ? 1 : 0;
        floats = kv + c.Br * (c.d + pad) + c.Br * (c.Bc + pad);
        break;
      }
      case Variant::RowReg: floats = kv + c.Bc * c.Br; break;
      case Variant::WarpGroups: floats = kv; break;
      case Variant::RegTile2D: continue;  // its own test checks its sum
      case Variant::MmaTf32x3:
      case Variant::MmaTf32x1: {
        // Two K/V stages (K rows d + 4 apart when padded, V rows d + 8), Q laid out like K at d = 128.
        const int ks = c.layout == Layout::Padded ? c.d + 4 : c.d, vs = c.layout == Layout::Padded ? c.d + 8 : c.d;
        floats = 2 * c.Bc * (ks + vs) + (c.d > 64 ? c.Br * ks : 0);
        break;
      }
    }
    EXPECT_EQ(g.smem_bytes, 4 * floats) << c.name();
    EXPECT_LE(g.smem_bytes, traits::kMaxSmemOptinBytes) << c.name();
  }
}

TEST(KernelTraits, EverySiteStaysInsideSharedMemoryAndIsAligned) {
  for (const TileConfig& c : allowed_space()) {
    const KernelGeometry g = make_geometry(c);
    ASSERT_EQ(g.config, c);
    ASSERT_GT(g.threads_per_block, 0) << c.name();
    ASSERT_LE(g.threads_per_block, 1024) << c.name();
    ASSERT_FALSE(g.smem_sites.empty()) << c.name();
    for (const SmemSite& s : g.smem_sites) {
      SCOPED_TRACE(c.name() + " site " + s.name);
      ASSERT_TRUE(s.byte_address);
      ASSERT_GE(s.instances, 1);
      ASSERT_TRUE(s.bytes_per_lane == 4 || s.bytes_per_lane == 8 || s.bytes_per_lane == 16);
      ASSERT_LE(s.warps, (g.threads_per_block + 31) / 32);
      long long active = 0;
      for (int w = 0; w < s.warps; ++w)
        for (long long i = 0; i < s.instances; ++i)
          for (int lane = 0; lane < 32; ++lane) {
            const long long a = s.byte_address(w, lane, i);
            if (a < 0) continue;
            ++active;
            ASSERT_EQ(a % s.bytes_per_lane, 0) << "warp " << w << " lane " << lane << " i " << i;
            ASSERT_LE(a + s.bytes_per_lane, g.smem_bytes) << "warp " << w << " lane " << lane << " i " << i;
          }
      EXPECT_GT(active, 0);
    }
  }
}

// The cooperative tile stores write each float of their tile exactly once.
// regtile_2d's are cp.async copies (SmemOp::AsyncCopy, LDGSTS), the others STS from registers.
TEST(KernelTraits, TileStoresCoverTheirTilesOnce) {
  for (Variant v : kAllVariants)
    for (const TileConfig& c : allowed_of(v)) {
      const KernelGeometry g = make_geometry(c);
      for (const SmemSite& s : g.smem_sites) {
        if (s.name.find("tile store") == std::string::npos) continue;
        EXPECT_EQ(s.op, v == Variant::RegTile2D ? SmemOp::AsyncCopy : SmemOp::Store) << c.name() << " " << s.name;
        const int rows = s.name[0] == 'Q' ? c.Br : c.Bc;
        std::multiset<long long> floats;
        for (int w = 0; w < s.warps; ++w)
          for (long long i = 0; i < s.instances; ++i)
            for (int lane = 0; lane < 32; ++lane) {
              const long long a = s.byte_address(w, lane, i);
              if (a < 0) continue;
              for (int b = 0; b < s.bytes_per_lane; b += 4) floats.insert(a + b);
            }
        EXPECT_EQ(floats.size(), std::size_t(rows) * c.d) << c.name() << " " << s.name;
        EXPECT_EQ(std::set<long long>(floats.begin(), floats.end()).size(), floats.size()) << c.name() << " " << s.name;
      }
    }
}

const SmemSite& site(const KernelGeometry& g, const std::string& name) {
  for (const SmemSite& s : g.smem_sites)
    if (s.name == name) return s;
  throw std::runtime_error("no site " + name + " in " + g.config.name());
}

// row_smem's access widths are those of the kernel's source (and of its SASS: see
// scripts/sass_site_check.sh): plain rows are 16-byte aligned, so Q is read as float4 and S as
// float2 (two keys per PV step below d = 128); padded rows are not, so both are scalar.
TEST(KernelTraits, RowSmemAccessWidthsFollowRowAlignment) {
  for (int d : {32, 64, 128}) {
    const TileConfig plain{Variant::RowSmem, d, 64, 32, Layout::Plain};
    TileConfig padded = plain;
    padded.layout = Layout::Padded;
    const KernelGeometry gp = make_geometry(plain), gq = make_geometry(padded);
    EXPECT_EQ(site(gp, "Q read in QK^T").bytes_per_lane, 16) << d;
    EXPECT_EQ(site(gp, "Q read in QK^T").instances, 32LL * d / 4) << d;
    EXPECT_EQ(site(gq, "Q read in QK^T").bytes_per_lane, 4) << d;
    EXPECT_EQ(site(gq, "Q read in QK^T").instances, 32LL * d) << d;
    EXPECT_EQ(site(gp, "S read in PV").bytes_per_lane, d < 128 ? 8 : 4) << d;
    EXPECT_EQ(site(gq, "S read in PV").bytes_per_lane, 4) << d;
    // Lane t's Q chunk k of key j: the float4 at Q[t][4k] (instance j * d/4 + k).
    EXPECT_EQ(site(gp, "Q read in QK^T").byte_address(0, 3, d / 4 + 2),
              4LL * (traits::RowSmem::q_offset(plain) + 3 * d + 8));
  }
}

// row_smem's layout switch: lanes reading Q[row][k] all hit one bank when plain (row stride d is
// a multiple of 32 words), 32 distinct banks when padded.
TEST(KernelTraits, PaddingSpreadsRowSmemQReadsOverAllBanks) {
  for (int d : {32, 64, 128}) {
    const TileConfig plain{Variant::RowSmem, d, 64, 32, Layout::Plain};
    TileConfig padded = plain;
    padded.layout = Layout::Padded;
    for (const char* name : {"Q read in QK^T", "S store", "S read in PV"}) {
      const KernelGeometry gp = make_geometry(plain), gq = make_geometry(padded);
      const SmemSite& sp = site(gp, name);
      const SmemSite& sq = site(gq, name);
      std::set<int> banks_plain, banks_padded;
      for (int lane = 0; lane < 32; ++lane) {
        banks_plain.insert(bank_of(sp.byte_address(0, lane, 1)));
        banks_padded.insert(bank_of(sq.byte_address(0, lane, 1)));
      }
      EXPECT_EQ(banks_padded.size(), 32u) << name << " d=" << d;
      EXPECT_LT(banks_plain.size(), 32u) << name << " d=" << d;
      if (std::string(name) == "Q read in QK^T") {
        EXPECT_EQ(banks_plain.size(), 1u) << "d=" << d;
      }
      EXPECT_NE(sp.byte_address(0, 1, 1), sq.byte_address(0, 1, 1)) << name;
    }
  }
}

// row_reg's transposed S tile: consecutive lanes, consecutive words. Its K/V reads: broadcasts.
TEST(KernelTraits, RowRegScoresAreConflictFreeAndKvReadsBroadcast) {
  for (const TileConfig& c : allowed_of(Variant::RowReg)) {
    const KernelGeometry g = make_geometry(c);
    const SmemSite& st = site(g, "S^T store");
    std::set<int> banks;
    for (int lane = 0; lane < 32 && lane < c.Br; ++lane) banks.insert(bank_of(st.byte_address(0, lane, 3)));
    EXPECT_EQ(int(banks.size()), std::min(32, c.Br)) << c.name();
    const SmemSite& k = site(g, "K read in QK^T");
    for (int lane = 1; lane < std::min(32, c.Br); ++lane)
      EXPECT_EQ(k.byte_address(0, lane, 5), k.byte_address(0, 0, 5)) << c.name();
  }
}

// warp_groups: the G lanes of a group read G consecutive 16-byte chunks; every group of the warp
// reads the same chunks.
TEST(KernelTraits, WarpGroupsKvReadsAreContiguousChunks) {
  for (const TileConfig& c : allowed_of(Variant::WarpGroups)) {
    const KernelGeometry g = make_geometry(c);
    const int G = traits::WarpGroups::group_lanes(c);
    EXPECT_EQ(g.threads_per_block, c.Br / 2 * G) << c.name();  // two rows per group
    for (const char* name : {"K read in QK^T", "V read in PV"}) {
      const SmemSite& s = site(g, name);
      std::set<long long> addrs;
      for (int lane = 0; lane < 32; ++lane) addrs.insert(s.byte_address(0, lane, 1));
      ASSERT_EQ(int(addrs.size()), G) << c.name() << " " << name;
      EXPECT_EQ(*addrs.rbegin() - *addrs.begin(), 16LL * (G - 1)) << c.name() << " " << name;
    }
  }
}

TEST(KernelTraits, CountsFollowTheLoopStructure) {
  for (const TileConfig& c : allowed_space()) {
    const KernelGeometry g = make_geometry(c);
    // QK^T and PV; regtile_2d also counts its O rescale as FFMA. The tensor-core kernels do them
    // as warp-level m16n8k8 mma (2 x 16 x 8 x 8 FLOP each), 3 per product for 3xTF32.
    if (c.variant == Variant::Mma16 || c.variant == Variant::Wgmma16) {
      EXPECT_DOUBLE_EQ(g.per_kv_tile.mma16 * kMmaM16n8k16Flops, 4.0 * c.Br * c.Bc * c.d) << c.name();
    } else if (uses_tensor_cores(c.variant)) {
      const int products = c.variant == Variant::MmaTf32x3 ? 3 : 1;
      EXPECT_DOUBLE_EQ(g.per_kv_tile.mma / products * 2.0 * 16 * 8 * 8, 4.0 * c.Br * c.Bc * c.d) << c.name();
    } else if (c.variant == Variant::RegTile2D) {
      EXPECT_GE(g.per_kv_tile.ffma, 2.0 * c.Br * c.Bc * c.d) << c.name();
    } else {
      EXPECT_DOUBLE_EQ(g.per_kv_tile.ffma, 2.0 * c.Br * c.Bc * c.d) << c.name();
    }
    EXPECT_GE(g.per_kv_tile.exp, double(c.Br) * c.Bc) << c.name();
    EXPECT_GE(g.per_kv_tile.barriers, 1) << c.name();
    EXPECT_EQ(g.kv_bytes_per_kv_tile, 2LL * dtype_bytes(c.dtype) * c.Bc * c.d) << c.name();
    EXPECT_EQ(g.q_bytes_per_block, 1LL * dtype_bytes(c.dtype) * c.Br * c.d) << c.name();
    if (c.variant == Variant::WarpGroups) {
      EXPECT_GT(g.per_kv_tile.shuffles, 0) << c.name();
    }
  }
}

// ---- tensor-core kernels (kernels/traits/mma_tf32_traits.h) -------------------------------

std::vector<TileConfig> compiled_mma() {
  std::vector<TileConfig> out;
  for (const TileConfig& c : compiled_configs())
    if (c.variant == Variant::MmaTf32x3 || c.variant == Variant::MmaTf32x1) out.push_back(c);
  return out;
}

// The kernel keeps per-lane bases and adds compile-time steps (mma_tf32_traits.h): the split must
// give the offset the layout defines, for every lane, S tile j, k-step pair kk, O quad q, warp and
// half. Checked on Tf32x3's functions (both precisions share MmaTf32<P>'s layout code; Tf32x1's
// are compared to them).
TEST(KernelTraits, MmaFragmentOffsetsSplitIntoBasePlusStep) {
  using M = traits::MmaTf32x3;
  using M1 = traits::MmaTf32x1;
  const std::vector<TileConfig> configs = compiled_mma();
  ASSERT_FALSE(configs.empty());
  std::set<Variant> variants;
  long long checked = 0;
  for (const TileConfig& c : configs) {
    variants.insert(c.variant);
    const int d = c.d;
    const Layout l = c.layout;
    for (int lane = 0; lane < 32; ++lane) {
      for (int j = 0; j < M::s_tiles(c.Bc); ++j)
        for (int kk = 0; kk < d / 16; ++kk) {
          const int want = M::k_offset(d, l, M::key_of(j, M::group_of(lane)), M::qk_col(kk, lane));
          ASSERT_EQ(want, M::k_frag_base(d, l, lane, kk % 2) + M::k_frag_step(d, l, j, kk / 2))
              << c.name() << " K lane " << lane << " j " << j << " kk " << kk;
          ASSERT_EQ(want, M1::k_frag_base(d, l, lane, kk % 2) + M1::k_frag_step(d, l, j, kk / 2)) << c.name();
          ++checked;
        }
      for (int j = 0; j < M::s_tiles(c.Bc); ++j)
        for (int h = 0; h < 2; ++h)
          for (int q = 0; q < M::o_tiles(d) / 4; ++q) {
            const int want = M::v_offset(d, l, 8 * j + 4 * h + M::thread_in_group(lane), M::v_col(q, lane));
            ASSERT_EQ(want, M::v_frag_base(d, l, lane, h) + M::v_frag_step(d, l, j, q))
                << c.name() << " V lane " << lane << " j " << j << " h " << h << " q " << q;
            ASSERT_EQ(want, M1::v_frag_base(d, l, lane, h) + M1::v_frag_step(d, l, j, q)) << c.name();
            ++checked;
          }
      // Q (read from shared memory at d = 128; the decomposition is the layout's, checked at every d).
      for (int warp = 0; warp < M::warps(c); ++warp)
        for (int h = 0; h < 2; ++h)
          for (int kk = 0; kk < d / 16; ++kk) {
            const int want = M::k_offset(d, l, M::q_row(warp, lane, h), M::qk_col(kk, lane));
            ASSERT_EQ(want, M::q_frag_base(d, l, warp, lane, kk % 2) + M::q_frag_step(kk / 2) +
                                h * M::q_frag_half_step(d, l))
                << c.name() << " Q warp " << warp << " lane " << lane << " h " << h << " kk " << kk;
            ++checked;
          }
    }
  }
  EXPECT_GT(checked, 0);
  EXPECT_EQ(variants.size(), 2u) << "both tensor-core variants should be compiled";
}

// Over one K/V tile the K fragment reads (every lane, j, kk) and the V reads (every lane, j, h, q)
// touch every float4 of their tile: no value of K or V is left out of QK^T or PV.
TEST(KernelTraits, MmaFragmentReadsCoverTheirTiles) {
  using M = traits::MmaTf32x3;
  for (const TileConfig& c : compiled_mma()) {
    std::set<int> k_chunks, v_chunks;
    for (int lane = 0; lane < 32; ++lane) {
      for (int j = 0; j < M::s_tiles(c.Bc); ++j)
        for (int kk = 0; kk < c.d / 16; ++kk)
          k_chunks.insert(M::k_frag_base(c.d, c.layout, lane, kk % 2) + M::k_frag_step(c.d, c.layout, j, kk / 2));
      for (int j = 0; j < M::s_tiles(c.Bc); ++j)
        for (int h = 0; h < 2; ++h)
          for (int q = 0; q < M::o_tiles(c.d) / 4; ++q)
            v_chunks.insert(M::v_frag_base(c.d, c.layout, lane, h) + M::v_frag_step(c.d, c.layout, j, q));
    }
    // Each float4 of the K and V tiles (Bc rows of d / 4 chunks) is read by some lane.
    EXPECT_EQ(k_chunks.size(), std::size_t(c.Bc) * c.d / 4) << c.name();
    EXPECT_EQ(v_chunks.size(), std::size_t(c.Bc) * c.d / 4) << c.name();
  }
}

const model::SiteAnalysis& analysed_site(const model::GeometryAnalysis& a, const std::string& name) {
  for (const model::SiteAnalysis& s : a.sites)
    if (s.name == name) return s;
  throw std::runtime_error("no site " + name + " in " + a.config.name());
}

// The layouts' point (mma_tf32_traits.h's header): padded and swizzled K and V tiles give
// conflict-free fragment reads, plain ones do not. Simulated by the model's bank simulator on
// every lane of every warp of the compiled configs.
TEST(KernelTraits, MmaFragmentReadsConflictFreeUnlessPlain) {
  std::set<Layout> seen;
  for (const TileConfig& c : compiled_mma()) {
    seen.insert(c.layout);
    const model::GeometryAnalysis a = model::analyse_geometry(make_geometry(c));
    std::vector<std::string> names = {"K fragment read in QK^T", "V fragment read in PV"};
    if (traits::MmaTf32x3::q_in_smem(c)) names.push_back("Q fragment read in QK^T");
    for (const std::string& name : names) {
      const model::SiteAnalysis& s = analysed_site(a, name);
      SCOPED_TRACE(c.name() + " " + name);
      ASSERT_GT(s.ideal, 0);
      EXPECT_EQ(s.bytes_per_lane, 16);
      if (c.layout == Layout::Plain) {
        if (name != "Q fragment read in QK^T") {
          EXPECT_GT(s.wavefronts, s.ideal);
        }
      } else {
        EXPECT_EQ(s.wavefronts, s.ideal);
      }
    }
    if (c.layout == Layout::Plain) {
      // The header's numbers: K reads 2-way (rows r and r + 4 in one quarter-warp), V reads 4-way.
      EXPECT_DOUBLE_EQ(analysed_site(a, "K fragment read in QK^T").conflict_degree(), 2.0) << c.name();
      EXPECT_DOUBLE_EQ(analysed_site(a, "V fragment read in PV").conflict_degree(), 4.0) << c.name();
    }
  }
#if FLASHTUNE_SMALL_KERNEL_SET
  EXPECT_EQ(seen.size(), 2u) << "the small kernel set compiles swizzled and padded mma tiles";
#else
  EXPECT_EQ(seen.size(), 3u) << "plain, padded and swizzled should all be compiled for the contrast";
#endif
}

// ---- the 16-bit tensor-core kernel (kernels/traits/mma16_traits.h) ------------------------

std::vector<TileConfig> mma16_space() {
  std::vector<TileConfig> out;
  for (int d : {32, 64, 128})
    for (int br : {64, 128})
      for (int bc : {32, 64, 128})
        for (Layout l : kAllLayouts)
          for (DType t : {DType::Bf16, DType::Fp16})
            for (int st : {2, 3, 4})
              for (bool qs : {false, true}) {
                const TileConfig c{Variant::Mma16, d, br, bc, l, t, st, qs};
                if (!tile_rejection(c)) out.push_back(c);
              }
  return out;
}

// The kernel keeps one ldmatrix base per operand and forms the others by frag_next and a
// compile-time step: the split must give the offset the layout defines, for every lane.
TEST(KernelTraits, Mma16FragmentOffsetsSplitIntoBasePlusStep) {
  using M = traits::Mma16;
  long long checked = 0;
  for (const TileConfig& c : mma16_space()) {
    const int d = c.d;
    const Layout l = c.layout;
    for (int lane = 0; lane < 32; ++lane)
      for (int kk = 0; kk < d / 16; ++kk) {
        for (int np = 0; np < c.Bc / 16; ++np) {
          const int want = M::chunk_byte(l, d, M::k_ld_row(np, lane), M::k_ld_chunk(kk, lane));
          ASSERT_EQ(M::frag_next(l, M::k_frag_base(d, l, lane, 0), kk % 4) + M::k_frag_step(d, l, np, kk), want)
              << c.name() << " lane " << lane;
          ASSERT_EQ(M::k_frag_base(d, l, lane, kk % 4), M::frag_next(l, M::k_frag_base(d, l, lane, 0), kk % 4));
          ++checked;
        }
        for (int w = 0; w < M::warps(c); ++w)
          for (int mt = 0; mt < M::kMTiles; ++mt) {
            const int want = M::chunk_byte(l, d, M::q_ld_row(w, mt, lane), M::q_ld_chunk(kk, lane));
            ASSERT_EQ(M::frag_next(l, M::q_frag_base(d, l, w, lane, 0), kk % 4) + M::q_frag_step(d, l, mt, kk), want)
                << c.name() << " lane " << lane;
          }
      }
    for (int lane = 0; lane < 32; ++lane)
      for (int kk = 0; kk < c.Bc / 16; ++kk)
        for (int np = 0; np < d / 16; ++np) {
          const int want = M::chunk_byte(l, d, M::v_ld_row(kk, lane), M::v_ld_chunk(np, lane));
          ASSERT_EQ(M::frag_next(l, M::v_frag_base(d, l, lane, 0), np % 4) + M::v_frag_step(d, l, kk, np), want)
              << c.name() << " lane " << lane;
        }
    // Tile bases are multiples of 128 bytes (the XOR form needs it).
    EXPECT_EQ(M::k_base(c, 1) % 128, 0) << c.name();
    EXPECT_EQ(M::v_base(c, 0) % 128, 0) << c.name();
  }
  EXPECT_GT(checked, 0);
}

// ldmatrix.x4: lanes 8i .. 8i + 7 address the 8 rows of matrix i, which must be the rows and
// columns the mma fragment tables want (traits header): decoded here from the row/chunk functions.
TEST(KernelTraits, Mma16LdmatrixRowsAreTheFragmentTables) {
  using M = traits::Mma16;
  for (int lane = 0; lane < 32; ++lane) {
    const int m = lane / 8, r = lane % 8;
    // Q: a0..a3 = (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15).
    EXPECT_EQ(M::q_ld_row(0, 0, lane), r + 8 * (m % 2));
    EXPECT_EQ(M::q_ld_chunk(0, lane), m / 2);
    // K: b0, b1 of keys 0-7, then of keys 8-15.
    EXPECT_EQ(M::k_ld_row(0, lane), r + 8 * (m / 2));
    EXPECT_EQ(M::k_ld_chunk(0, lane), m % 2);
    // V (.trans): b0 = keys 0-7, b1 = keys 8-15 of d 0-7, then of d 8-15.
    EXPECT_EQ(M::v_ld_row(0, lane), r + 8 * (m % 2));
    EXPECT_EQ(M::v_ld_chunk(0, lane), m / 2);
  }
}

// Every 16-byte access of a phase of 8 lanes (an ldmatrix matrix, a cp.async quarter-warp, an
// epilogue read) hits 8 different 16-byte bank groups under Swizzled, and under Padded except the
// row-wise phases at d = 32; Plain does not at d >= 64. Checked on the sites the model simulates (geometry()).
TEST(KernelTraits, Mma16SixteenByteSitesConflictFreeUnlessPlain) {
  for (const TileConfig& c : mma16_space()) {
    if (c.dtype != DType::Bf16 || c.stages != 2) continue;
    const KernelGeometry g = make_geometry(c);
    bool plain_conflict = false;
    for (const SmemSite& s : g.smem_sites) {
      if (s.bytes_per_lane != 16) continue;
      for (int w = 0; w < s.warps; ++w)
        for (long long i = 0; i < s.instances; ++i)
          for (int phase = 0; phase < 4; ++phase) {
            std::set<long long> groups;
            int active = 0;
            for (int l = 8 * phase; l < 8 * phase + 8; ++l) {
              const long long a = s.byte_address(w, l, i);
              if (a < 0) continue;
              ++active;
              EXPECT_EQ(a % 16, 0) << c.name() << " " << s.name;
              EXPECT_LT(a + 16, g.smem_bytes + 1) << c.name() << " " << s.name;
              groups.insert((a / 16) % 8);
            }
            const bool clean = static_cast<int>(groups.size()) == active;
            // Padded d = 32: rows of 5 chunks, so a row-wise phase (2 rows of 4 chunks: cp.async,
            // the epilogue read) puts chunks 0 and 3 of the second row on one group (2-way); its
            // ldmatrix phases (8 rows, one chunk) stay clean.
            const bool padded_rowwise = c.layout == Layout::Padded && c.d == 32 &&
                                        s.name.find("ldmatrix") == std::string::npos;
            if (c.layout == Layout::Plain || padded_rowwise) {
              plain_conflict |= !clean;
            } else {
              EXPECT_TRUE(clean) << c.name() << " " << s.name << " warp " << w << " instance " << i;
            }
          }
    }
    if (c.layout == Layout::Plain && c.d >= 64) EXPECT_TRUE(plain_conflict) << c.name();
  }
}

TEST(KernelTraits, Mma16RefusesWhatItCannotBuild) {
  const auto rejected = [](TileConfig c) { return tile_rejection(c).value_or(""); };
  const TileConfig ok{Variant::Mma16, 64, 128, 64, Layout::Swizzled, DType::Bf16, 2, false};
  EXPECT_EQ(rejected(ok), "");
  TileConfig c = ok;
  c.dtype = DType::Fp32;
  EXPECT_NE(rejected(c).find("bf16 or fp16"), std::string::npos) << rejected(c);
  c = ok;
  c.stages = 5;
  EXPECT_NE(rejected(c).find("2 to 4"), std::string::npos) << rejected(c);
  c.stages = 0;
  EXPECT_NE(rejected(c).find("2 to 4"), std::string::npos) << rejected(c);
  c = ok;
  c.Br = 32;
  EXPECT_NE(rejected(c).find("Br in {64, 128}"), std::string::npos) << rejected(c);
  c = ok;
  c.Bc = 16;
  EXPECT_NE(rejected(c).find("Bc in {32, 64, 128}"), std::string::npos) << rejected(c);
  c = ok;
  c.d = 128;
  EXPECT_NE(rejected(c).find("/qsmem"), std::string::npos) << rejected(c);
  c.q_smem = true;
  EXPECT_EQ(rejected(c), "");
  c = {Variant::Mma16, 128, 128, 128, Layout::Padded, DType::Fp16, 4, true};
  EXPECT_NE(rejected(c).find("shared memory"), std::string::npos) << rejected(c);
  // Names round-trip, the knobs included.
  for (const TileConfig& x : mma16_space()) {
    const auto back = parse_config_name(x.name());
    ASSERT_TRUE(back.has_value()) << x.name();
    EXPECT_EQ(*back, x) << x.name();
  }
  // Traffic in 16-bit elements.
  const KernelGeometry g = make_geometry(ok);
  EXPECT_EQ(g.q_bytes_per_block, 2LL * 128 * 64);
  EXPECT_EQ(g.kv_bytes_per_kv_tile, 2LL * 2 * 64 * 64);
}

}  // namespace
}  // namespace flashtune

namespace flashtune {
namespace {

// The intra-warpgroup overlap knob: "/ov" after every other knob, parsed back; only wgmma16 takes
// it (each other variant refuses it in one line naming the knob); wgmma16 keeps its 2 to 4 stages
// with it, and its ring then hides the load latency with one tile fewer.
TEST(KernelTraits, OverlapKnobNamesParsesAndBelongsToWgmma16) {
  const TileConfig ov{Variant::Wgmma16, 128, 128, 128, Layout::Swizzled, DType::Bf16, 3, false, true};
  EXPECT_EQ(ov.name(), "wgmma16/d128/br128xbc128/swizzled/bf16/s3/ov");
  const auto back = parse_config_name(ov.name());
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, ov);
  EXPECT_TRUE(back->overlap);
  TileConfig serial = ov;
  serial.overlap = false;
  EXPECT_NE(serial, ov);
  EXPECT_EQ(parse_config_name(serial.name())->overlap, false);
  // The knob's place is fixed (after /qsmem); a repeat or another spelling is no name.
  for (const char* bad : {"wgmma16/d128/br128xbc128/swizzled/bf16/ov/s3", "wgmma16/d128/br128xbc128/swizzled/bf16/s3/ov/ov",
                          "wgmma16/d128/br128xbc128/swizzled/bf16/s3/overlap", "wgmma16/d128/br128xbc128/swizzled/bf16/s3/ov/"})
    EXPECT_FALSE(parse_config_name(bad)) << bad;
  const auto mma = parse_config_name("mma16/d64/br128xbc64/swizzled/bf16/s2/qsmem/ov");
  ASSERT_TRUE(mma);  // a name, but not a config mma16 builds
  EXPECT_TRUE(mma->q_smem && mma->overlap);

  EXPECT_FALSE(tile_rejection(ov).has_value());
  for (TileConfig c : {TileConfig{Variant::Mma16, 64, 128, 64, Layout::Swizzled, DType::Bf16, 2, false, true},
                       TileConfig{Variant::RowReg, 64, 64, 32, Layout::Plain, DType::Fp32, 0, false, true},
                       TileConfig{Variant::Decode, 128, 16, 32, Layout::Swizzled, DType::Bf16, 2, false, true}}) {
    const auto why = tile_rejection(c);
    ASSERT_TRUE(why.has_value()) << c.name();
    EXPECT_NE(why->find("no /ov"), std::string::npos) << *why;
    EXPECT_EQ(why->find('\n'), std::string::npos) << *why;
  }
  TileConfig one = ov;
  one.stages = 1;
  ASSERT_TRUE(tile_rejection(one).has_value());
  EXPECT_NE(tile_rejection(one)->find("/ov reads K of one tile and V of the previous at once"), std::string::npos)
      << *tile_rejection(one);
  EXPECT_EQ(traits::Wgmma16::overlap_hiding_tiles(ov), 1);
  EXPECT_EQ(traits::Wgmma16::overlap_hiding_tiles(serial), 2);
  // Same shared memory, threads and per-tile counts: the overlap reorders the work, adds none.
  const KernelGeometry a = make_geometry(ov), b = make_geometry(serial);
  EXPECT_EQ(a.smem_bytes, b.smem_bytes);
  EXPECT_EQ(a.threads_per_block, b.threads_per_block);
  EXPECT_EQ(a.per_kv_tile.exp, b.per_kv_tile.exp);
  EXPECT_EQ(a.per_kv_tile.wgmma, b.per_kv_tile.wgmma);
}

// Three consumer warpgroups (Br = 192): wgmma16 alone takes them, with 512 threads and the
// registers split so that the producer keeps 24 and each consumer 160 (64512 of 65536); the other
// families refuse Br = 192 in one line naming the sizes they take.
TEST(KernelTraits, Wgmma16TakesThreeConsumerWarpgroups) {
  const TileConfig c{Variant::Wgmma16, 64, 192, 128, Layout::Swizzled, DType::Bf16, 2, false};
  EXPECT_FALSE(tile_rejection(c).has_value());
  EXPECT_EQ(traits::Wgmma16::consumers(c), 3);
  EXPECT_EQ(traits::Wgmma16::threads(c), 512);
  EXPECT_EQ(traits::Wgmma16::consumer_registers(c), 160);
  EXPECT_EQ(traits::Wgmma16::registers_estimate(c), 128);  // what the launch grants at entry
  TileConfig two = c;
  two.Br = 128;
  EXPECT_EQ(traits::Wgmma16::consumer_registers(two), 240);
  EXPECT_LE(128 * (traits::Wgmma16::kProducerRegisters + 3 * traits::Wgmma16::consumer_registers(c)), 65536);
  EXPECT_EQ(make_geometry(c).threads_per_block, 512);
  // Every compiled warp-specialized tile's setmaxnreg split fits what its launch allocates (the
  // block's registers, not the SM's: a split beyond them leaves the consumers waiting forever).
  for (const TileConfig& k : compiled_configs()) {
    if (k.variant == Variant::Wgmma16 && traits::Wgmma16::reallocates_registers(k))
      EXPECT_TRUE(traits::Wgmma16::split_fits(k)) << k.name();
    using Tf32 = traits::WgmmaTf32<traits::MmaPrecision::Tf32x3>;  // the pair shares its roles
    if ((k.variant == Variant::WgmmaTf32x3 || k.variant == Variant::WgmmaTf32x1) && Tf32::reallocates_registers(k))
      EXPECT_TRUE(Tf32::split_fits(k)) << k.name();
  }
  for (TileConfig bad : {TileConfig{Variant::Mma16, 64, 192, 64, Layout::Swizzled, DType::Bf16, 2, false},
                         TileConfig{Variant::RegTile2D, 64, 192, 64, Layout::Padded}}) {
    const auto why = tile_rejection(bad);
    ASSERT_TRUE(why.has_value()) << bad.name();
    EXPECT_NE(why->find("Br=192 is not supported"), std::string::npos) << *why;
  }
  TileConfig four = c;
  four.Br = 256;
  ASSERT_TRUE(tile_rejection(four).has_value());
}

}  // namespace
}  // namespace flashtune

namespace flashtune {
namespace {

// The ping-pong knob: "/pp" after "/ov", parsed back; only wgmma16 takes it (each other variant
// refuses it in one line naming the knob), and wgmma16 only with two or three consumer warpgroups
// (one has nobody to pass the turn to), with or without the overlap. Its turn barriers sit beside
// the epilogue's, every id apart and within the 16 a block has; a consumer takes two turns per
// tile in the serial loop (S, then P V), one with the overlap plus one for the last P V.
TEST(KernelTraits, PingPongKnobNamesParsesAndNeedsTwoConsumers) {
  using W = traits::Wgmma16;
  const TileConfig pp{Variant::Wgmma16, 64, 192, 128, Layout::Swizzled, DType::Bf16, 2, false, false, true};
  EXPECT_EQ(pp.name(), "wgmma16/d64/br192xbc128/swizzled/bf16/s2/pp");
  const auto back = parse_config_name(pp.name());
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, pp);
  EXPECT_TRUE(back->ping_pong);
  EXPECT_FALSE(back->overlap);
  TileConfig plain = pp;
  plain.ping_pong = false;
  EXPECT_NE(plain, pp);
  EXPECT_FALSE(parse_config_name(plain.name())->ping_pong);
  TileConfig both{Variant::Wgmma16, 128, 128, 128, Layout::Swizzled, DType::Bf16, 3, false, true, true};
  EXPECT_EQ(both.name(), "wgmma16/d128/br128xbc128/swizzled/bf16/s3/ov/pp");
  ASSERT_TRUE(parse_config_name(both.name()));
  EXPECT_EQ(*parse_config_name(both.name()), both);
  EXPECT_FALSE(tile_rejection(pp).has_value());
  EXPECT_FALSE(tile_rejection(both).has_value());
  // The knob's place is fixed (after /ov); a repeat, another order or spelling is no name.
  for (const char* bad : {"wgmma16/d128/br128xbc128/swizzled/bf16/s3/pp/ov", "wgmma16/d128/br128xbc128/swizzled/bf16/pp/s3",
                          "wgmma16/d128/br128xbc128/swizzled/bf16/s3/pp/pp", "wgmma16/d128/br128xbc128/swizzled/bf16/s3/pingpong",
                          "wgmma16/d128/br128xbc128/swizzled/bf16/s3/pp/"})
    EXPECT_FALSE(parse_config_name(bad)) << bad;

  for (TileConfig c : {TileConfig{Variant::Mma16, 64, 128, 64, Layout::Swizzled, DType::Bf16, 2, false, false, true},
                       TileConfig{Variant::RowReg, 64, 64, 32, Layout::Plain, DType::Fp32, 0, false, false, true},
                       TileConfig{Variant::MmaTf32x3, 64, 64, 64, Layout::Swizzled, DType::Fp32, 0, false, false, true},
                       TileConfig{Variant::Decode, 128, 16, 32, Layout::Swizzled, DType::Bf16, 2, false, false, true}}) {
    const auto why = tile_rejection(c);
    ASSERT_TRUE(why.has_value()) << c.name();
    EXPECT_NE(why->find("no /pp"), std::string::npos) << *why;
    EXPECT_EQ(why->find('\n'), std::string::npos) << *why;
  }
  for (bool ov : {false, true}) {
    const TileConfig one{Variant::Wgmma16, 128, 64, 128, Layout::Swizzled, DType::Bf16, 3, false, ov, true};
    const auto why = tile_rejection(one);
    ASSERT_TRUE(why.has_value()) << one.name();
    EXPECT_EQ(*why, "wgmma16 /pp passes turns between consumer warpgroups: needs Br 128 or 192 (2 or 3), Br=64 has one");
  }

  // Barrier ids: 0 (__syncthreads), the epilogue's and the turn barriers all apart, below 16.
  std::set<int> ids{0};
  for (int c = 0; c < W::kMaxConsumers; ++c) {
    EXPECT_TRUE(ids.insert(W::epilogue_barrier(c)).second) << c;
    EXPECT_TRUE(ids.insert(W::turn_barrier(c)).second) << c;
  }
  EXPECT_LT(*ids.rbegin(), 16);
  EXPECT_EQ(W::kTurnBarrierThreads, 2 * W::kWarpgroupThreads);
  EXPECT_EQ(W::turns_per_tile(pp), 2);
  EXPECT_EQ(W::turns(pp, 5), 10);
  EXPECT_EQ(W::turns_per_tile(both), 1);
  EXPECT_EQ(W::turns(both, 5), 6);
  EXPECT_EQ(W::turns(both, 0), 0);
  EXPECT_EQ(W::turns(plain, 5), 0);
  EXPECT_TRUE(W::staggers_phases(pp));
  EXPECT_FALSE(W::staggers_phases(plain));
  // Same shared memory, threads and products: the ping-pong orders the issues, adds no work; the
  // turn barriers are counted beside the stage's mbarrier.
  const KernelGeometry a = make_geometry(pp), b = make_geometry(plain);
  EXPECT_EQ(a.smem_bytes, b.smem_bytes);
  EXPECT_EQ(a.threads_per_block, b.threads_per_block);
  EXPECT_EQ(a.per_kv_tile.wgmma, b.per_kv_tile.wgmma);
  EXPECT_EQ(a.per_kv_tile.exp, b.per_kv_tile.exp);
  EXPECT_EQ(a.per_kv_tile.barriers, b.per_kv_tile.barriers + 2);
  // Compiled beside a twin without it, so that the model and the tuner compare the two.
  const auto& compiled = compiled_configs();
  for (const TileConfig& c : compiled)
    if (c.ping_pong) {
      TileConfig twin = c;
      twin.ping_pong = false;
      EXPECT_NE(std::find(compiled.begin(), compiled.end(), twin), compiled.end()) << c.name();
    }
}

}  // namespace
}  // namespace flashtune

namespace flashtune {
namespace {

// The persistent knob: "/pe" after "/pp", parsed back; only wgmma16 takes it (each other variant
// refuses it in one line naming the knob), with any consumer count, stage count, /ov and /pp. Its
// shared memory adds a second Q buffer where one fits beside the ring (d = 128 s3 has no room: one
// buffer), a q_free barrier per Q buffer and a tile description per consumer, inside the limit and
// apart; the one-block-per-tile twin's layout is what it was.
TEST(KernelTraits, PersistentKnobNamesParsesAndLaysOutItsQBuffers) {
  using W = traits::Wgmma16;
  const TileConfig pe{Variant::Wgmma16, 64, 192, 128, Layout::Swizzled, DType::Bf16, 2, false, false, false, true};
  EXPECT_EQ(pe.name(), "wgmma16/d64/br192xbc128/swizzled/bf16/s2/pe");
  ASSERT_TRUE(parse_config_name(pe.name()));
  EXPECT_EQ(*parse_config_name(pe.name()), pe);
  TileConfig twin = pe;
  twin.persistent = false;
  EXPECT_NE(twin, pe);
  EXPECT_FALSE(parse_config_name(twin.name())->persistent);
  const TileConfig all{Variant::Wgmma16, 128, 128, 128, Layout::Swizzled, DType::Bf16, 3, false, true, true, true};
  EXPECT_EQ(all.name(), "wgmma16/d128/br128xbc128/swizzled/bf16/s3/ov/pp/pe");
  ASSERT_TRUE(parse_config_name(all.name()));
  EXPECT_EQ(*parse_config_name(all.name()), all);
  EXPECT_FALSE(tile_rejection(pe).has_value());
  EXPECT_FALSE(tile_rejection(all).has_value());
  const TileConfig one{Variant::Wgmma16, 128, 64, 128, Layout::Swizzled, DType::Bf16, 2, false, false, false, true};
  EXPECT_FALSE(tile_rejection(one).has_value()) << "one consumer walks tiles too";
  for (const char* bad : {"wgmma16/d128/br128xbc128/swizzled/bf16/s3/pe/pp", "wgmma16/d128/br128xbc128/swizzled/bf16/pe/s3",
                          "wgmma16/d128/br128xbc128/swizzled/bf16/s3/pe/pe", "wgmma16/d128/br128xbc128/swizzled/bf16/s3/persistent",
                          "wgmma16/d128/br128xbc128/swizzled/bf16/s3/pe/"})
    EXPECT_FALSE(parse_config_name(bad)) << bad;
  for (TileConfig c : {TileConfig{Variant::Mma16, 64, 128, 64, Layout::Swizzled, DType::Bf16, 2},
                       TileConfig{Variant::RowReg, 64, 64, 32, Layout::Plain, DType::Fp32, 0},
                       TileConfig{Variant::MmaTf32x3, 64, 64, 64, Layout::Swizzled, DType::Fp32, 0},
                       TileConfig{Variant::Decode, 128, 16, 32, Layout::Swizzled, DType::Bf16, 2}}) {
    c.persistent = true;
    const auto why = tile_rejection(c);
    ASSERT_TRUE(why.has_value()) << c.name();
    EXPECT_NE(why->find("no /pe"), std::string::npos) << *why;
    EXPECT_EQ(why->find('\n'), std::string::npos) << *why;
  }

  // Q buffers: two where they fit, one at d = 128 s3 (32 KB of Q beside 192 KB of ring).
  EXPECT_EQ(W::q_buffers(twin), 1);
  EXPECT_EQ(W::q_buffers(pe), 2);
  TileConfig d128s2{Variant::Wgmma16, 128, 128, 128, Layout::Swizzled, DType::Bf16, 2, false, false, false, true};
  EXPECT_EQ(W::q_buffers(d128s2), 2);
  EXPECT_EQ(W::q_buffers(all), 1);
  // O staging where two Q buffers and the tile fit: d = 64 s2 and d = 128 s2 (230496 of 232448 B),
  // not d = 128 s3 (one Q buffer) nor without the persistent grid.
  EXPECT_TRUE(W::stages_o(pe));
  EXPECT_TRUE(W::stages_o(d128s2));
  EXPECT_LE(W::smem_bytes(d128s2), traits::kMaxSmemOptinBytes);
  EXPECT_FALSE(W::stages_o(all));
  EXPECT_FALSE(W::stages_o(twin));
  for (const TileConfig& c : compiled_configs()) {
    if (c.variant != Variant::Wgmma16) continue;
    EXPECT_LE(W::smem_bytes(c), traits::kMaxSmemOptinBytes) << c.name();
    const int qb = W::q_buffers(c);
    // Q buffers, then the ring, then the barriers and (persistent) the tile descriptions, apart.
    EXPECT_EQ(W::k_base(c, 0), qb * W::q_bytes(c)) << c.name();
    // The O staging tile (persistent, two Q buffers, where it fits) between the ring and the barriers.
    EXPECT_EQ(W::o_base(c), W::v_base(c, c.stages)) << c.name();
    EXPECT_EQ(W::o_base(c) % 1024, 0) << c.name();
    EXPECT_EQ(W::o_staging_bytes(c), W::stages_o(c) ? W::q_bytes(c) : 0) << c.name();
    if (W::stages_o(c)) EXPECT_TRUE(c.persistent && qb == 2) << c.name();
    EXPECT_EQ(W::barrier_base(c), W::v_base(c, c.stages) + W::o_staging_bytes(c)) << c.name();
    EXPECT_EQ(W::q_barrier(c, 0), W::empty_barrier(c, c.stages - 1) + 8) << c.name();
    if (c.persistent) {
      EXPECT_EQ(W::q_free_barrier(c, 0), W::q_barrier(c, qb - 1) + 8) << c.name();
      EXPECT_EQ(W::tile_info(c, 0), W::q_free_barrier(c, qb - 1) + 8) << c.name();
      EXPECT_EQ(W::tile_info(c, 0) % 4, 0) << c.name();
      EXPECT_EQ(W::smem_bytes(c), W::tile_info(c, W::consumers(c)) + W::kBaseAlignSlack) << c.name();
      // The sum that decides the Q buffers and the staging tile is the layout built.
      EXPECT_EQ(W::smem_bytes(c), W::persistent_layout_bytes(c, qb, W::stages_o(c))) << c.name();
      // Compiled beside its one-block-per-tile twin, whose layout is the one it always had.
      TileConfig t = c;
      t.persistent = false;
      const auto& compiled = compiled_configs();
      EXPECT_NE(std::find(compiled.begin(), compiled.end(), t), compiled.end()) << c.name();
      EXPECT_EQ(W::smem_bytes(t), W::q_barrier(t) + 8 + W::kBaseAlignSlack) << t.name();
      EXPECT_EQ(W::k_base(t, 0), W::q_bytes(t)) << t.name();
    } else {
      EXPECT_EQ(qb, 1) << c.name();
    }
  }
  // Same threads and products per tile: the persistent grid reorders no work.
  const KernelGeometry a = make_geometry(pe), b = make_geometry(twin);
  EXPECT_EQ(a.threads_per_block, b.threads_per_block);
  EXPECT_EQ(a.per_kv_tile.wgmma, b.per_kv_tile.wgmma);
  EXPECT_EQ(a.per_kv_tile.exp, b.per_kv_tile.exp);
  // Its second Q tile, its O staging tile, the second Q barrier, two q_free barriers and three tile
  // descriptions.
  EXPECT_EQ(a.smem_bytes, b.smem_bytes + 2 * W::q_bytes(pe) + 8 + 2 * 8 + 3 * 4 * W::kTileInfoWords);
}

}  // namespace
}  // namespace flashtune
