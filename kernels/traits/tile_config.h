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
  Mma16 = 6,       // tensor cores on 16-bit data: mma.sync m16n8k16 bf16 / fp16, fp32 accumulate and
                   // softmax statistics, ldmatrix fragments, a multi-stage cp.async K/V pipeline
  Wgmma16 = 7,     // Hopper-native (sm_90a) 16-bit: a producer warp issues TMA copies into an mbarrier
                   // ring, consumer warpgroups run wgmma.mma_async with S and O in registers
  Decode = 8,      // split-KV decode (flash-decoding): few query rows per head, the heads of a K/V
                   // group packed into one block, keys split across blocks, partials combined
  WgmmaTf32x3 = 9,   // Hopper-native (sm_90a) fp32: wgmma16's pipeline on wgmma m64nNk8 TF32, V transposed
                     // in shared memory, each operand split into TF32 high part and residual (3 products)
  WgmmaTf32x1 = 10,  // the same kernel with one TF32 product per wgmma: fast, TF32-accurate (opt-in)
};
inline constexpr Variant kAllVariants[] = {Variant::RowSmem,   Variant::RowReg,    Variant::WarpGroups,
                                           Variant::RegTile2D, Variant::MmaTf32x3, Variant::MmaTf32x1,
                                           Variant::Mma16,     Variant::Wgmma16,   Variant::Decode,
                                           Variant::WgmmaTf32x3, Variant::WgmmaTf32x1};

// Element type of Q, K, V and O. Every kernel accumulates and keeps the softmax statistics in fp32;
// the element type is what is stored and moved, and what the tensor cores multiply. It is a
// dimension of the workload and of the config, never implied: a config runs a workload of its own
// element type only, so an fp32 request never gets a 16-bit kernel unless the data are 16-bit.
enum class DType : int { Fp32 = 0, Bf16 = 1, Fp16 = 2 };
inline constexpr DType kAllDTypes[] = {DType::Fp32, DType::Bf16, DType::Fp16};
constexpr const char* dtype_name(DType t) {
  switch (t) {
    case DType::Fp32: return "fp32";
    case DType::Bf16: return "bf16";
    case DType::Fp16: return "fp16";
  }
  return "?";
}
constexpr int dtype_bytes(DType t) { return t == DType::Fp32 ? 4 : 2; }
inline std::optional<DType> parse_dtype(std::string_view s) {
  for (DType t : kAllDTypes)
    if (s == dtype_name(t)) return t;
  return std::nullopt;
}
// "fp32, bf16, fp16", for help strings and the one-line refusal of an unknown dtype.
inline std::string known_dtypes() {
  std::string k;
  for (DType t : kAllDTypes) k += (k.empty() ? "" : ", ") + std::string(dtype_name(t));
  return k;
}
// The one message for a dtype name that is none of kAllDTypes (command line, files, Python).
inline std::string unknown_dtype_message(std::string_view s) {
  return "unknown dtype '" + std::string(s) + "' (known: " + known_dtypes() + ")";
}

// How accurate a variant's result is: Fp32 (SIMT fp32 and 3xTF32: fp32-level, the default
// everywhere) or Tf32 (one TF32 product per mma: about 3 decimal digits; chosen only on request).
// mma16 counts as Fp32, read as "the full accuracy of its dtype": it multiplies the 16-bit inputs
// exactly (fp32 accumulate) and rounds only P and O to the dtype; its bar is rel_l2_tolerance(DType).
enum class Precision : int { Fp32 = 0, Tf32 = 1 };
inline constexpr Precision kAllPrecisions[] = {Precision::Fp32, Precision::Tf32};

constexpr Precision variant_precision(Variant v) {
  return v == Variant::MmaTf32x1 || v == Variant::WgmmaTf32x1 ? Precision::Tf32 : Precision::Fp32;
}
// Whether a request for `requested` accuracy admits variant v: Fp32 admits the fp32-accurate
// variants only (variant_precision == Fp32: every SIMT variant and mma_3xtf32), Tf32 admits every
// variant (mma_1xtf32 too).
constexpr bool precision_admits(Precision requested, Variant v) {
  return requested == Precision::Tf32 || variant_precision(v) == Precision::Fp32;
}
// Tensor-core variants need TF32 mma.sync (compute capability 8.0 or newer).
constexpr bool uses_tensor_cores(Variant v) {
  return v == Variant::MmaTf32x3 || v == Variant::MmaTf32x1 || v == Variant::Mma16 || v == Variant::Wgmma16 ||
         v == Variant::WgmmaTf32x3 || v == Variant::WgmmaTf32x1;
}
// The sm_90a families (wgmma, TMA, setmaxnreg): wgmma16 and its TF32 twins.
constexpr bool is_wgmma_variant(Variant v) {
  return v == Variant::Wgmma16 || v == Variant::WgmmaTf32x3 || v == Variant::WgmmaTf32x1;
}
// Query rows per head up to which the decode family serves a workload (traits::Decode::kMaxQueryRows).
inline constexpr long long kDecodeMaxQueryRows = 64;
inline constexpr int kTensorCoreMinComputeCapability = 80;  // major * 10 + minor
// wgmma, TMA tensor copies and setmaxnreg exist on sm_90a only (Hopper, compute capability 9.0).
inline constexpr int kWgmmaMinComputeCapability = 90;
// The lowest compute capability (major * 10 + minor) a variant's instructions run on; 0: any.
// Variants whose consumers can overlap one tile's softmax with the neighbouring tiles' products in
// the same warpgroup (the config knob `overlap`, "/ov" in the name): the wgmma16 family only, whose
// products are asynchronous.
constexpr bool variant_has_overlap_knob(Variant v) { return v == Variant::Wgmma16; }
// Variants whose consumer warpgroups can take turns issuing their products (the config knob
// `ping_pong`, "/pp" in the name): the wgmma16 family only, the one with several consumer
// warpgroups per block and asynchronous products.
constexpr bool variant_has_ping_pong_knob(Variant v) { return v == Variant::Wgmma16; }
// Variants whose blocks can stay resident and walk a static list of tiles (the config knob
// `persistent`, "/pe" in the name): the wgmma16 family only, whose producer warpgroup can load the
// next tile's Q and K/V while the consumers finish the previous one.
constexpr bool variant_has_persistent_knob(Variant v) { return v == Variant::Wgmma16; }
constexpr int variant_min_compute_capability(Variant v) {
  return is_wgmma_variant(v) ? kWgmmaMinComputeCapability : uses_tensor_cores(v) ? kTensorCoreMinComputeCapability : 0;
}

constexpr const char* precision_name(Precision p) { return p == Precision::Tf32 ? "tf32" : "fp32"; }
// Relative L2 error against the double reference that a result of this precision must stay under.
// Fp32: the project's bar. Tf32: one TF32 product rounds each operand to 11 significant bits
// (relative 2^-11 = 4.9e-4 per product); with scores up to +-50 the error of a score moves the
// softmax weights by up to ~1% (docs/kernels.md, measured worst in docs/results).
constexpr double rel_l2_tolerance(Precision p) { return p == Precision::Tf32 ? 1e-2 : 1e-4; }
// The same bar for a 16-bit result, against the double reference computed on the inputs rounded to
// the dtype: the output's own rounding (bf16 keeps 8 significant bits: 2^-9 relative; fp16 11 bits:
// 2^-12) plus P rounded to the dtype before P V, an error of the same order per weight. The bars
// sit ~4x above the errors measured with fresh uniform inputs and scores up to +-50
// (docs/results, tests/kernels_mma16_test.cu); the issue's own bar is relative to SDPA-FLASH's error
// on the same inputs (benchmarks/sdpa_compare.py).
constexpr double rel_l2_tolerance(DType t) {
  return t == DType::Bf16 ? 2e-2 : t == DType::Fp16 ? 3e-3 : rel_l2_tolerance(Precision::Fp32);
}

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
    case Variant::Mma16: return "mma16";
    case Variant::Wgmma16: return "wgmma16";
    case Variant::Decode: return "decode";
    case Variant::WgmmaTf32x3: return "wgmma_3xtf32";
    case Variant::WgmmaTf32x1: return "wgmma_1xtf32";
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
  // Element type of Q, K, V and O (fp32 for every variant but mma16, which takes bf16 or fp16).
  DType dtype = DType::Fp32;
  // K/V pipeline depth where the variant makes it a tunable (mma16: 2 to 4 cp.async stages); 0 for
  // the variants whose depth is fixed by their traits.
  int stages = 0;
  // Where the variant lets the tuner choose: the Q tile re-read from shared memory every K/V tile
  // (true) instead of kept in registers for the whole loop (false).
  bool q_smem = false;
  // Where the variant makes it a knob (variant_has_overlap_knob): each consumer warpgroup issues
  // tile j's Q K^T before tile j - 1's P V and runs tile j's softmax while that P V is on the
  // tensor cores (intra-warpgroup overlap), instead of the three steps one after the other.
  bool overlap = false;
  // Where the variant makes it a knob (variant_has_ping_pong_knob): the block's consumer
  // warpgroups issue their products in turn (named barriers pass the turn round the ring), so
  // that one warpgroup's softmax runs while the others' products hold the tensor cores.
  bool ping_pong = false;
  // Where the variant makes it a knob (variant_has_persistent_knob): about one block per SM, each
  // walking the tiles blockIdx.x, blockIdx.x + gridDim.x, ... of the grid the variant would
  // otherwise launch (same order, same tile to (query tile, entry) mapping), so that a block's
  // prologue and epilogue overlap its previous tile's work.
  bool persistent = false;

  // Stable, parseable name, e.g. "row_smem/d64/br64xbc32/padded"; used as a key in profiles. The
  // knobs beyond the layout follow only where they differ from the defaults above, so every name
  // written before they existed still names the same config: "mma16/d128/br128xbc64/swizzled/bf16/s3/qsmem",
  // "wgmma16/d128/br128xbc128/swizzled/bf16/s3/ov", "wgmma16/d64/br192xbc128/swizzled/bf16/s2/pp",
  // "wgmma16/d128/br128xbc128/swizzled/bf16/s3/ov/pp/pe".
  std::string name() const {
    std::string s = std::string(variant_name(variant)) + "/d" + std::to_string(d) + "/br" + std::to_string(Br) +
                    "xbc" + std::to_string(Bc) + "/" + layout_name(layout);
    if (dtype != DType::Fp32) s += std::string("/") + dtype_name(dtype);
    if (stages != 0) s += "/s" + std::to_string(stages);
    if (q_smem) s += "/qsmem";
    if (overlap) s += "/ov";
    if (ping_pong) s += "/pp";
    if (persistent) s += "/pe";
    return s;
  }
  friend constexpr bool operator==(const TileConfig& a, const TileConfig& b) {
    return a.variant == b.variant && a.d == b.d && a.Br == b.Br && a.Bc == b.Bc && a.layout == b.layout &&
           a.dtype == b.dtype && a.stages == b.stages && a.q_smem == b.q_smem &&
           a.overlap == b.overlap && a.ping_pong == b.ping_pong && a.persistent == b.persistent;
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
  // The layout, then the optional knobs in name()'s order.
  const std::size_t slash = rest.find('/');
  const auto layout = parse_layout(rest.substr(0, slash));
  if (!layout) return std::nullopt;
  rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  if (!rest.empty()) {
    const std::size_t next = rest.find('/', 1);
    if (const auto dt = parse_dtype(rest.substr(1, next == std::string_view::npos ? next : next - 1))) {
      t.dtype = *dt;
      rest = next == std::string_view::npos ? std::string_view{} : rest.substr(next);
    }
  }
  if (skip(rest, "/s") && !read_int(rest, t.stages)) return std::nullopt;
  if (skip(rest, "/qsmem")) t.q_smem = true;
  if (skip(rest, "/ov")) t.overlap = true;
  if (skip(rest, "/pp")) t.ping_pong = true;
  if (skip(rest, "/pe")) t.persistent = true;
  if (!rest.empty()) return std::nullopt;
  t.variant = *variant;
  t.layout = *layout;
  // The round trip refuses what name() would write differently ("d064", a zero size).
  if (t.d <= 0 || t.Br <= 0 || t.Bc <= 0 || t.name() != name) return std::nullopt;
  return t;
}

// The problem: O = softmax(scale * Q K^T [masked if causal]) V, of element type dtype. Q and O
// are [B, N, d]; K and V hold keys() rows per K/V head, each shared by kv_group query heads
// (kernels/traits/tensor_strides.h says how an entry finds them).
struct Workload {
  long long B = 1;      // batch x query heads (entries)
  long long N = 1;      // query rows per entry
  int d = 64;           // head dimension
  bool causal = false;  // mask key j > i + keys() - N (bottom-right aligned; j > i when keys() == N)
  float scale = 0.0f;   // <= 0 means 1/sqrt(d)
  DType dtype = DType::Fp32;  // element type of Q, K, V and O
  // Keys per entry; 0 means N (self-attention). After the fields above so that every aggregate
  // initialisation written before inference operands existed keeps its meaning.
  long long kv_len = 0;
  // Query heads per K/V head (Hq = Hkv * kv_group): 1 is multi-head attention, Hq is multi-query.
  int kv_group = 1;

  int element_bytes() const { return dtype_bytes(dtype); }
  long long keys() const { return kv_len > 0 ? kv_len : N; }
  // How many more keys than queries: query row i sees keys j <= i + causal_offset() when causal
  // (FlashAttention >= 2.1's KV-cache convention). Negative only for a workload validation refuses.
  long long causal_offset() const { return keys() - N; }
  // Whether the workload is plain self-attention (the only shape before inference operands).
  bool self_attention() const { return keys() == N && kv_group == 1; }

  float effective_scale() const { return scale > 0.0f ? scale : 1.0f / std::sqrt(float(d)); }
  // 4 B N keys d; when causal, 4 B d times the unmasked area N keys - N^2 / 2 (row i sees
  // i + 1 + keys - N keys): today's halving of 4 B N^2 d when keys == N, the convention the seed
  // reports and SDPA benchmarks use.
  double nominal_flops() const {
    const double n = double(N), k = double(keys());
    const double area = causal ? n * k - 0.5 * n * n : n * k;
    return 4.0 * double(B) * double(d) * area;
  }
};

// The workload's operand shape beyond B, N and d in one short token for names and messages: ""
// for self-attention, else " kv=<keys>" and " g=<kv_group>" where they differ from the default.
inline std::string inference_suffix(const Workload& w) {
  std::string s;
  if (w.keys() != w.N) s += " kv=" + std::to_string(w.keys());
  if (w.kv_group != 1) s += " g=" + std::to_string(w.kv_group);
  return s;
}

// Whether config c can serve workload w at the accuracy asked for: its head dimension and element
// type are the workload's, and the precision admits its variant. The one rule every chooser applies
// (the tune plan, predict --all, the dispatcher, Python's rank): a 16-bit config never serves fp32
// data, nor an fp32 config 16-bit data; a decode config serves few query rows only (N <= 64).
constexpr bool config_serves(const TileConfig& c, const Workload& w, Precision p) {
  return c.d == w.d && c.dtype == w.dtype && precision_admits(p, c.variant) &&
         (c.variant != Variant::Decode || w.N <= kDecodeMaxQueryRows);
}

}  // namespace flashtune
