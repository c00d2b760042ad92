// The vocabulary shared by kernels, model and tuner: which kernel variant, which tile, which layout.
// Plain C++17 (no CUDA): the host-only model includes it.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <string_view>

namespace flashtune {

// The seed reports' progression, one enumerator per kernel family (see docs/kernels.md).
enum class Variant : int {
  RowSmem = 0,     // one thread per query row; Q, K, V and S tiles in shared memory
  RowReg = 1,      // one thread per query row; Q and O in registers, float4, transposed S tile
  WarpGroups = 2,  // a group of lanes per query row, warp-shuffle reductions, float4
  RegTile2D = 3,   // 2-D register tiling of S and O (seed v12), K padded or swizzled
  MmaTf32x3 = 4,   // tensor cores: warps own 16 query rows, S and O as mma.sync m16n8k8 TF32
                   // fragments, each fp32 operand split into a TF32 high part and residual (3 products)
  MmaTf32x1 = 5,   // the same kernel with one TF32 product per mma: fast, TF32-accurate (opt-in)
};
inline constexpr Variant kAllVariants[] = {Variant::RowSmem,   Variant::RowReg,    Variant::WarpGroups,
                                           Variant::RegTile2D, Variant::MmaTf32x3, Variant::MmaTf32x1};

// How accurate a variant's result is: Fp32 (SIMT fp32 and 3xTF32: fp32-level, the default
// everywhere) or Tf32 (one TF32 product per mma: about 3 decimal digits; chosen only on request).
enum class Precision : int { Fp32 = 0, Tf32 = 1 };
inline constexpr Precision kAllPrecisions[] = {Precision::Fp32, Precision::Tf32};

constexpr Precision variant_precision(Variant v) { return v == Variant::MmaTf32x1 ? Precision::Tf32 : Precision::Fp32; }
// Whether a request for `requested` accuracy admits variant v: Fp32 admits the fp32-accurate
// variants only (variant_precision == Fp32: every SIMT variant and mma_3xtf32), Tf32 admits every
// variant (mma_1xtf32 too).
constexpr bool precision_admits(Precision requested, Variant v) {
  return requested == Precision::Tf32 || variant_precision(v) == Precision::Fp32;
}
// Tensor-core variants need TF32 mma.sync (compute capability 8.0 or newer).
constexpr bool uses_tensor_cores(Variant v) { return v == Variant::MmaTf32x3 || v == Variant::MmaTf32x1; }
inline constexpr int kTensorCoreMinComputeCapability = 80;  // major * 10 + minor

constexpr const char* precision_name(Precision p) { return p == Precision::Tf32 ? "tf32" : "fp32"; }
// Relative L2 error against the double reference that a result of this precision must stay under.
// Fp32: the project's bar. Tf32: one TF32 product rounds each operand to 11 significant bits
// (relative 2^-11 = 4.9e-4 per product); with scores up to +-50 the error of a score moves the
// softmax weights by up to ~1% (docs/kernels.md, measured worst in docs/results).
constexpr double rel_l2_tolerance(Precision p) { return p == Precision::Tf32 ? 1e-2 : 1e-4; }

// Shared-memory layout switch: how the rows of a tile that threads read column-wise are laid out.
enum class Layout : int {
  Plain = 0,     // rows packed back to back (bank conflicts where lanes walk a column)
  Padded = 1,    // each row padded by one access width
  Swizzled = 2,  // XOR swizzle of the 16-byte chunk index by the row
};
inline constexpr Layout kAllLayouts[] = {Layout::Plain, Layout::Padded, Layout::Swizzled};

constexpr const char* variant_name(Variant v) {
  switch (v) {
    case Variant::RowSmem: return "row_smem";
    case Variant::RowReg: return "row_reg";
    case Variant::WarpGroups: return "warp_groups";
    case Variant::RegTile2D: return "regtile_2d";
    case Variant::MmaTf32x3: return "mma_3xtf32";
    case Variant::MmaTf32x1: return "mma_1xtf32";
  }
  return "?";
}

constexpr const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Plain: return "plain";
    case Layout::Padded: return "padded";
    case Layout::Swizzled: return "swizzled";
  }
  return "?";
}

inline std::optional<Variant> parse_variant(std::string_view s) {
  for (Variant v : kAllVariants)
    if (s == variant_name(v)) return v;
  return std::nullopt;
}

inline std::optional<Precision> parse_precision(std::string_view s) {
  for (Precision p : kAllPrecisions)
    if (s == precision_name(p)) return p;
  return std::nullopt;
}

inline std::optional<Layout> parse_layout(std::string_view s) {
  for (Layout l : kAllLayouts)
    if (s == layout_name(l)) return l;
  return std::nullopt;
}

// One point of the search space. Everything a kernel instantiation is templated on.
struct TileConfig {
  Variant variant = Variant::RowReg;
  int d = 64;    // head dimension
  int Br = 64;   // query rows per block
  int Bc = 32;   // key/value rows per iteration
  Layout layout = Layout::Plain;

  // Stable, parseable name, e.g. "row_smem/d64/br64xbc32/padded"; used as a key in profiles.
  std::string name() const {
    return std::string(variant_name(variant)) + "/d" + std::to_string(d) + "/br" + std::to_string(Br) +
           "xbc" + std::to_string(Bc) + "/" + layout_name(layout);
  }
  friend constexpr bool operator==(const TileConfig& a, const TileConfig& b) {
    return a.variant == b.variant && a.d == b.d && a.Br == b.Br && a.Bc == b.Bc && a.layout == b.layout;
  }
  friend constexpr bool operator!=(const TileConfig& a, const TileConfig& b) { return !(a == b); }
};

// TileConfig::name() read back, the one parser of config names (profiles, journals, the command
// line): nullopt unless `name` is exactly what name() writes for the config it describes (no sign,
// no leading zero, no spaces; numbers that fit an int).
inline std::optional<TileConfig> parse_config_name(std::string_view name) {
  // Reads the decimal digits at the front of `s` into `out`; false without any or on overflow.
  const auto read_int = [](std::string_view& s, int& out) {
    std::size_t n = 0;
    long long v = 0;
    while (n < s.size() && s[n] >= '0' && s[n] <= '9' && n < 10) v = v * 10 + (s[n++] - '0');
    if (n == 0 || v > 0x7fffffff) return false;
    out = static_cast<int>(v);
    s.remove_prefix(n);
    return true;
  };
  const auto skip = [](std::string_view& s, std::string_view prefix) {
    if (s.substr(0, prefix.size()) != prefix) return false;
    s.remove_prefix(prefix.size());
    return true;
  };
  const std::size_t a = name.find('/');
  if (a == std::string_view::npos) return std::nullopt;
  const auto variant = parse_variant(name.substr(0, a));
  std::string_view rest = name.substr(a + 1);
  TileConfig t;
  if (!variant || !skip(rest, "d") || !read_int(rest, t.d) || !skip(rest, "/br") || !read_int(rest, t.Br) ||
      !skip(rest, "xbc") || !read_int(rest, t.Bc) || !skip(rest, "/"))
    return std::nullopt;
  const auto layout = parse_layout(rest);
  if (!layout) return std::nullopt;
  t.variant = *variant;
  t.layout = *layout;
  // The round trip refuses what name() would write differently ("d064", a zero size).
  if (t.d <= 0 || t.Br <= 0 || t.Bc <= 0 || t.name() != name) return std::nullopt;
  return t;
}

// The problem: O = softmax(scale * Q K^T [masked if causal]) V, all [B, N, d] row-major fp32.
struct Workload {
  long long B = 1;      // batch x heads
  long long N = 1;      // sequence length (queries = keys)
  int d = 64;           // head dimension
  bool causal = false;  // mask key j > query i
  float scale = 0.0f;   // <= 0 means 1/sqrt(d)

  float effective_scale() const { return scale > 0.0f ? scale : 1.0f / std::sqrt(float(d)); }
  // 4 B N^2 d, halved when causal (the convention the seed reports and SDPA benchmarks use).
  double nominal_flops() const {
    const double f = 4.0 * double(B) * double(N) * double(N) * double(d);
    return causal ? 0.5 * f : f;
  }
};

}  // namespace flashtune
