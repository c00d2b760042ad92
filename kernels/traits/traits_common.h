// Index arithmetic shared by every variant's kernel and its model geometry. Plain C++17; the
// kernels call these constexpr functions from device code (nvcc --expt-relaxed-constexpr), so
// the model's addresses and the kernel's addresses come from the same lines.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "kernel_geometry.h"
#include "tile_config.h"

namespace flashtune::traits {

constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
constexpr long long ceil_div_ll(long long a, long long b) { return (a + b - 1) / b; }

// Division of an unsigned 32-bit n by a run-time divisor d >= 1 as the kernels do it:
// n / d == (umulhi(n, magic) + n) >> shift with shift = ceil(log2 d) and
// magic = floor(2^32 (2^shift - d) / d) + 1 (Granlund-Montgomery, exact for every n < 2^32 while
// umulhi(n, magic) + n fits 32 bits, i.e. n < 2^31: entry indices are).
struct FastDivisor {
  unsigned magic = 1, shift = 0;
};
constexpr FastDivisor fast_divisor(unsigned d) {
  FastDivisor f;
  while ((1ull << f.shift) < d) ++f.shift;
  f.magic = static_cast<unsigned>(((1ull << 32) * ((1ull << f.shift) - d)) / d + 1);
  return f;
}
constexpr unsigned fast_divide(unsigned n, FastDivisor f) {
  return static_cast<unsigned>(((static_cast<unsigned long long>(n) * f.magic >> 32) + n) >> f.shift);
}

// The largest dynamic shared memory a block may opt into on the GPUs we build for (sm_90:
// 227 KB). A device with less is refused at run time by can_implement().
inline constexpr int kMaxSmemOptinBytes = 227 * 1024;

constexpr bool is_tile_size(int x) { return x == 16 || x == 32 || x == 64 || x == 128; }
// Query rows per block: the tile sizes, and 192 for the warp-specialized family (three consumer
// warpgroups of 64 rows: FlashAttention-3's d = 64 tile).
constexpr bool is_tile_rows(int x, Variant v) { return is_tile_size(x) || (x == 192 && v == Variant::Wgmma16); }
// The head dimensions of the design space. kernels/CMakeLists.txt reads this line (keep it one
// line) and writes one instance file per (variant, d) of them.
inline constexpr int kHeadDims[] = {32, 64, 128};
constexpr bool is_head_dim(int d) {
  for (int h : kHeadDims)
    if (d == h) return true;
  return false;
}

// Cooperative, coalesced load of a tile of `rows` x d floats by `threads` threads: thread t
// moves the float4s idx = t, t + threads, ... (consecutive threads read consecutive 16 bytes of
// global memory). These give the loop trip count and where float4 number `idx` lands in a
// shared tile whose rows are `stride` floats apart.
constexpr int tile_float4s(int rows, int d) { return rows * d / 4; }
constexpr int tile_load_trips(int rows, int d, int threads) { return ceil_div(tile_float4s(rows, d), threads); }
constexpr int tile_row_of(int idx, int d) { return idx / (d / 4); }
constexpr int tile_col_of(int idx, int d) { return (idx % (d / 4)) * 4; }
constexpr int tile_offset_of(int idx, int d, int stride) {
  return tile_row_of(idx, d) * stride + tile_col_of(idx, d);
}

// The grid: one block per (query tile, batch entry), handed to the SMs in block-index order
// (x fastest, then y). The order decides which blocks run together, so it is the kernel's
// schedule, and the model's (model/block_schedule.cpp, model/memory_traffic.cpp) reads it here.
//   TileFastest   grid (q_tiles, B): one entry's query tiles one after another;
//   Folded        grid (q_tiles * B): the same order, for B above grid.y's limit;
//   BatchFastest  grid (B, q_tiles): tile rank r of every entry before rank r + 1 of any. A
//                 causal grid whose kernel runs its query tiles heavy first (traits'
//                 kCausalHeavyFirst) gets it: every entry's longest block starts before any
//                 second-longest, a longest-first schedule over the whole grid, with the shortest
//                 blocks filling the tail. (TileFastest interleaves them entry by entry: on the
//                 H200, B = 64, N = 1024, Br = 128, Bc = 64, 132 SMs one block each, the last SM
//                 finishes 44 mean K/V tiles in where longest-first needs 36.)
enum class GridOrder { TileFastest = 0, Folded = 1, BatchFastest = 2 };
inline constexpr long long kMaxGridX = 2147483647;  // 2^31 - 1 on every GPU since compute capability 3.0
inline constexpr long long kMaxGridY = 65535;
constexpr GridOrder grid_order(long long B, long long q_tiles, bool causal, bool heavy_first) {
  if (causal && heavy_first && q_tiles <= kMaxGridY && B <= kMaxGridX) return GridOrder::BatchFastest;
  return B <= kMaxGridY ? GridOrder::TileFastest : GridOrder::Folded;
}

// Registers per thread ptxas may use under __launch_bounds__(threads, min_blocks): the register
// file (64 K on sm_90) shared by min_blocks blocks, at most 255.
constexpr int launch_register_cap(int threads, int min_blocks) {
  return 65536 / (threads * min_blocks) < 255 ? 65536 / (threads * min_blocks) : 255;
}
// Registers that hold the K and V tiles' float4s between their global loads and shared stores:
// ptxas issues all the (unrolled) loads of both tiles before the first store, 4 per float4.
constexpr int kv_staging_registers(int bc, int d, int threads) { return 2 * 4 * tile_load_trips(bc, d, threads); }

// The global traffic every variant's block makes (the FlashAttention loop itself, not a tile
// choice): its Q tile read and its O tile written once, K and V read once per K/V tile, in
// elements of the config's dtype (4 bytes for every fp32 variant, 2 for bf16 and fp16).
inline void set_block_traffic(KernelGeometry& g, const TileConfig& c) {
  const long long e = dtype_bytes(c.dtype);
  g.q_bytes_per_block = e * c.Br * c.d;
  g.o_bytes_per_block = e * c.Br * c.d;
  g.kv_bytes_per_kv_tile = 2LL * e * c.Bc * c.d;
}

// A shared-memory site written by the cooperative tile load above. Floats `base_floats` onward;
// one float4 store per trip when the row stride keeps 16-byte alignment, else four scalar stores
// per trip (instance i = trip * 4 + component).
inline SmemSite tile_store_site(std::string name, SiteScope scope, int threads, int rows, int d,
                                int base_floats, int stride) {
  const bool vector = stride % 4 == 0;
  const int trips = tile_load_trips(rows, d, threads);
  const int total = tile_float4s(rows, d);
  SmemSite s;
  s.name = std::move(name);
  s.op = SmemOp::Store;
  s.bytes_per_lane = vector ? 16 : 4;
  s.scope = scope;
  s.warps = ceil_div(threads, 32);
  s.instances = vector ? trips : 4LL * trips;
  s.byte_address = [=](int warp, int lane, long long i) -> long long {
    const int t = warp * 32 + lane;
    const long long trip = vector ? i : i / 4;
    const long long comp = vector ? 0 : i % 4;
    const long long idx = t + trip * threads;
    if (t >= threads || idx >= total) return -1;
    return 4LL * (base_floats + tile_offset_of(static_cast<int>(idx), d, stride) + comp);
  };
  return s;
}

// Short names for the sites that do not depend on the lane layout of a tile.
inline SmemSite make_site(std::string name, SmemOp op, int bytes_per_lane, SiteScope scope, int warps,
                          long long instances, std::function<long long(int, int, long long)> address) {
  SmemSite s;
  s.name = std::move(name);
  s.op = op;
  s.bytes_per_lane = bytes_per_lane;
  s.scope = scope;
  s.warps = warps;
  s.instances = instances;
  s.byte_address = std::move(address);
  return s;
}

// A cooperative cp.async copy of a [rows, d] tile: float4 number idx = warp * 32 + lane + i * threads
// (row idx / (d / 4), column 4 (idx % (d / 4))) goes to shared byte smem_byte(row, col) and comes
// from byte 16 idx of the packed global tile.
inline SmemSite make_tile_copy_site(std::string name, SiteScope scope, int warps, int rows, int d, int threads,
                                    std::function<long long(int row, int col)> smem_byte) {
  const int total = tile_float4s(rows, d);
  auto index = [=](int warp, int lane, long long i) -> long long {
    const long long idx = warp * 32LL + lane + i * threads;
    return idx < total ? idx : -1;
  };
  SmemSite s = make_site(std::move(name), SmemOp::AsyncCopy, 16, scope, warps, tile_load_trips(rows, d, threads),
                         [=](int warp, int lane, long long i) -> long long {
                           const long long idx = index(warp, lane, i);
                           if (idx < 0) return -1;
                           const int k = static_cast<int>(idx);
                           return smem_byte(tile_row_of(k, d), tile_col_of(k, d));
                         });
  s.global_byte_address = [=](int warp, int lane, long long i) -> long long {
    const long long idx = index(warp, lane, i);
    return idx < 0 ? -1 : 16 * idx;
  };
  return s;
}

// Why a tile cannot be built, None when it can. Every variant's fault(c) is constexpr, so that its
// compiled list and its kernel Tile are held to it at compile time (static_assert), and its
// rejection(c) words the same fault for people: rejection(c) is empty exactly when fault(c) is
// None, so no compiled tile can be one the run-time check refuses.
enum class TileFault {
  None,
  // The design space every variant shares (common_fault), worded by fault_words():
  OtherVariant,  // the config is another variant's
  HeadDim,       // d outside kHeadDims
  TileRows,      // Br outside {16, 32, 64, 128}
  TileCols,      // Bc outside {16, 32, 64, 128}
  ElementType,   // a dtype the variant has no kernel for (every SIMT and TF32 variant: fp32 only)
  FixedKnobs,    // stages or q_smem set on a variant whose traits fix them
  Overlap,       // the overlap knob on a variant without it (variant_has_overlap_knob)
  PingPong,      // the ping-pong knob on a variant without it (variant_has_ping_pong_knob)
  Persistent,    // the persistent-grid knob on a variant without it (variant_has_persistent_knob)
  // A variant's own limits, worded by its rejection():
  VariantHeadDim,
  VariantRows,
  VariantCols,
  VariantStages,      // a pipeline depth outside the variant's range (mma16: 2 to 4)
  VariantQResidence,  // Q kept in registers where they cannot hold it (mma16: add /qsmem)
  Layout,
  Threads,       // more than 1024 threads per block
  SharedMemory,  // more than kMaxSmemOptinBytes
};

// The tile shape alone: the variant, d, Br and Bc. A variant with its own element types and knobs
// (mma16) checks those itself.
constexpr TileFault common_shape_fault(const TileConfig& c, Variant expected) {
  if (c.variant != expected) return TileFault::OtherVariant;
  if (!is_head_dim(c.d)) return TileFault::HeadDim;
  if (!is_tile_rows(c.Br, expected)) return TileFault::TileRows;
  if (!is_tile_size(c.Bc)) return TileFault::TileCols;
  if (c.overlap && !variant_has_overlap_knob(expected)) return TileFault::Overlap;
  if (c.ping_pong && !variant_has_ping_pong_knob(expected)) return TileFault::PingPong;
  if (c.persistent && !variant_has_persistent_knob(expected)) return TileFault::Persistent;
  return TileFault::None;
}
// The shape, for an fp32 variant whose traits fix the pipeline depth and Q's residence.
constexpr TileFault common_fault(const TileConfig& c, Variant expected) {
  if (const TileFault f = common_shape_fault(c, expected); f != TileFault::None) return f;
  if (c.dtype != DType::Fp32) return TileFault::ElementType;
  if (c.stages != 0 || c.q_smem) return TileFault::FixedKnobs;
  return TileFault::None;
}
constexpr TileFault smem_fault(int bytes) {
  return bytes <= kMaxSmemOptinBytes ? TileFault::None : TileFault::SharedMemory;
}
constexpr TileFault thread_fault(int threads) { return threads <= 1024 ? TileFault::None : TileFault::Threads; }

// "needs 180224 B of shared memory, more than the 232448 B a block may use on sm_90".
inline std::string smem_words(int bytes) {
  return "needs " + std::to_string(bytes) + " B of shared memory, more than the " +
         std::to_string(kMaxSmemOptinBytes) + " B a block may use on sm_90";
}

// The words for a fault of the shared design space; a variant's own faults get a plain line here
// only if its rejection() forgot to word them.
inline std::string fault_words(TileFault f, const TileConfig& c, Variant expected) {
  switch (f) {
    case TileFault::OtherVariant:
      return std::string("config is for variant ") + variant_name(c.variant) + ", not " + variant_name(expected);
    case TileFault::HeadDim: return "d=" + std::to_string(c.d) + " is not supported (d in {32, 64, 128})";
    case TileFault::TileRows: return "Br=" + std::to_string(c.Br) + " is not supported (Br in {16, 32, 64, 128}; 192 for wgmma16)";
    case TileFault::TileCols: return "Bc=" + std::to_string(c.Bc) + " is not supported (Bc in {16, 32, 64, 128})";
    case TileFault::ElementType:
      return std::string(variant_name(expected)) + " has no " + dtype_name(c.dtype) + " kernel (fp32 only)";
    case TileFault::FixedKnobs:
      return std::string(variant_name(expected)) + " fixes its pipeline stages and Q's residence (no /sN or /qsmem)";
    case TileFault::Overlap:
      return std::string(variant_name(expected)) +
             " runs each tile's products and softmax in order (no /ov: only wgmma16 overlaps them)";
    case TileFault::PingPong:
      return std::string(variant_name(expected)) +
             " has no consumer warpgroups to take turns (no /pp: only wgmma16 ping-pongs its products)";
    case TileFault::Persistent:
      return std::string(variant_name(expected)) +
             " launches one block per tile (no /pe: only wgmma16 has a persistent tile scheduler)";
    default: return std::string(variant_name(expected)) + " cannot build " + c.name();
  }
}

// Whether the compiled tile c is built at ptxas -O1, in its (variant, d)'s second instance file
// (kernels/CMakeLists.txt, `PTXAS_O1`): ptxas has no per-kernel optimization level, so the tiles
// that need another level need their own translation unit. A variant opts in with a static
// constexpr `ptxas_o1(const TileConfig&)` in its traits; without one every tile is built at -O3.
template <class Traits, class = void>
struct HasPtxasO1 : std::false_type {};
template <class Traits>
struct HasPtxasO1<Traits, std::void_t<decltype(Traits::ptxas_o1(std::declval<const TileConfig&>()))>>
    : std::true_type {};
template <class Traits>
constexpr bool built_at_ptxas_o1(const TileConfig& c) {
  if constexpr (HasPtxasO1<Traits>::value)
    return Traits::ptxas_o1(c);
  else
    return false;
}

// Index of the first entry of Traits::kCompiled that Traits::fault() refuses, -1 when every entry
// can be built. Each traits header static_asserts it is -1 (the compiler prints the index).
template <class Traits>
constexpr int first_refused_compiled() {
  int i = 0;
  for (const TileConfig& c : Traits::kCompiled) {
    if (Traits::fault(c) != TileFault::None) return i;
    ++i;
  }
  return -1;
}

}  // namespace flashtune::traits
