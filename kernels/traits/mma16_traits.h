// Traits of the 16-bit tensor-core kernel (FlashAttention-2 forward on mma.sync m16n8k16 with bf16
// or fp16 operands and fp32 accumulate): threads, shared-memory layout, ldmatrix fragment
// addressing, pipeline depth, Q's residence, and the index arithmetic that the kernel template
// (kernels/mma16.cuh) and the model's geometry both call. Plain C++17, no CUDA.
//
// Shape of the kernel (one block per Br query rows of one batch entry, FA2 loop over K/V tiles):
// warp w owns query rows 32w .. 32w + 31, two m16 tiles (mt = 0, 1). Thirty-two rows, not sixteen:
// every K and V fragment a warp reads from shared memory then feeds two mma.sync instead of one,
// which halves the ldmatrix bytes per mma. At 16 rows a warp moves 256 B of K or V per m16n8k16
// (4096 FLOPs), 2 cycles of the SM's 128 B/clk shared-memory pipe against ~1.5 cycles of its
// mma.sync rate (643 TFLOP/s on 132 SMs at 1.755 GHz): the loop would be bound by shared memory at
// ~75% of the tensor rate before any other cost. At 32 rows it is 1 cycle per mma. The price is
// registers: O is 32 x d / 32 = d fp32 per lane, S is Bc per lane.
// Lane = 4 g + t (g = lane / 4 the group, t = lane % 4, as in the PTX fragment tables). Per K/V tile:
//   S = Q K^T   A = Q (ldmatrix.x4 from the Q tile in shared memory, once into registers or every
//               tile again: the q_smem knob), B = K (ldmatrix.x4 of two n8 tiles at once: K rows
//               are the B matrix's columns, no transpose), C = S, fp32, scores unscaled;
//   softmax     on the fragments in fp32: row max over the 4 lanes of a group (2 xor shuffles),
//               p = exp2(s * scale log2 e - m * scale log2 e) by one FFMA and one MUFU.EX2 (the scale
//               is applied to the fp32 score, never rounded into Q: no extra 16-bit rounding, and no
//               fp16 overflow however large the scores), O rescaled by alpha; the row sums stay per
//               lane until the end;
//   O += P V    A = P: the C fragments of S tiles 2k and 2k + 1 are, packed in pairs to the dtype
//               (cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32), exactly the A fragment of k-step k (no
//               shuffles); B = V by ldmatrix.x4.trans (two n8 tiles of d); C = O, fp32.
// K and V arrive by cp.async.cg (16 B, zero-filled past N) in a ring of `stages` buffers: tiles
// t + 1 .. t + stages - 1 are in flight while tile t computes (commit per tile, wait_group<stages-2>).
// The epilogue writes O (divided by l, rounded to the dtype) into the warp's own rows of the Q tile
// in shared memory and stores it from there as 16-byte rows.
//
// Shared memory (bytes): the Q tile [Br, d] at 0, then `stages` stages of K [Bc, d] and V [Bc, d].
// Rows of d 16-bit elements are d / 8 chunks of 16 bytes (an ldmatrix row, a cp.async):
//   Plain     rows packed: at d >= 64 the 8 rows of one ldmatrix matrix share their banks (8-way);
//   Padded    rows 16 bytes longer: the 8 rows start in 8 different 16-byte bank groups;
//   Swizzled  chunk c of row r stored at chunk c ^ swizzle(d, r): conflict-free, packed.
// Every ldmatrix phase (8 lanes, 8 rows of 16 bytes), every cp.async quarter-warp and every 16-byte
// read of the epilogue is conflict-free under Padded and Swizzled (tests/kernels_traits_test.cpp).
#pragma once

#include <optional>
#include <string>

#include "kernels/traits/kernel_geometry.h"
#include "kernels/traits/tile_config.h"
#include "kernels/traits/traits_common.h"

namespace flashtune::traits {

// What the library compiles, per d and dtype (kernels/CMakeLists.txt writes one instance file per
// (variant, d); each holds both dtypes). Chosen with ptxas -v on sm_90 (docs/kernels.md, mma16):
// every entry compiles without spills, the d = 128 Br = 128 x Bc = 64 s2 tiles at ptxas -O1
// (Mma16::ptxas_o1). bf16 gets the tuning grid: Br {64, 128} x Bc {32, 64, 128}
// with 2 stages, 3 stages on the tiles whose K/V wait matters, Q in registers where it fits beside
// O and S (d <= 64: d / 2 registers), and one padded tile per d for the bank-conflict contrast.
// fp16 runs the same instructions at the same rate (mma .f16 and .bf16 share the pipe), so it gets
// the tiles most likely to win only.
struct Mma16Compiled {
  static constexpr Variant V = Variant::Mma16;
  static constexpr Layout S = Layout::Swizzled, P = Layout::Padded;
  static constexpr DType B = DType::Bf16, H = DType::Fp16;
// FLASHTUNE_MMA16_FULL_SET: the whole mma16 list beside the small fp32 set (scripts/mma16_check.sh).
#if FLASHTUNE_SMALL_KERNEL_SET && !FLASHTUNE_MMA16_FULL_SET
  static constexpr TileConfig kList[] = {
      {V, 64, 128, 64, S, B, 2, false},
      {V, 128, 128, 64, S, B, 2, true},
      {V, 64, 128, 64, S, H, 2, false},
  };
#else
  static constexpr TileConfig kList[] = {
      // d = 32: Q (16 registers) always in registers.
      {V, 32, 64, 64, S, B, 2, false},
      {V, 32, 64, 128, S, B, 2, false},
      {V, 32, 128, 32, S, B, 2, false},
      {V, 32, 128, 64, S, B, 2, false},
      {V, 32, 128, 128, S, B, 2, false},
      {V, 32, 128, 128, S, B, 3, false},
      {V, 32, 128, 64, P, B, 2, false},
      {V, 32, 64, 128, S, H, 2, false},
      {V, 32, 128, 128, S, H, 2, false},
      // d = 64: Q in registers (32) up to Bc = 64; Bc = 128 keeps it in shared memory.
      {V, 64, 64, 64, S, B, 2, false},
      {V, 64, 128, 32, S, B, 2, false},
      {V, 64, 128, 64, S, B, 2, false},
      {V, 64, 128, 64, S, B, 3, false},
      {V, 64, 128, 64, S, B, 2, true},
      {V, 64, 128, 128, S, B, 2, true},
      {V, 64, 128, 128, S, B, 3, true},
      {V, 64, 128, 64, P, B, 2, false},
      {V, 64, 64, 64, S, H, 2, false},
      {V, 64, 128, 64, S, H, 2, false},
      {V, 64, 128, 128, S, H, 2, true},
      // d = 128: O alone is 128 registers per lane: Q re-read from shared memory, Bc <= 64. Not
      // compiled: Br 64 x Bc 64 (bf16, fp16) and Br 128 x Bc 64 s3, which spill 8 B at ptxas -O3,
      // run 12-18% slower at -O1, and were slower than Br 128 x Bc 64 s2 on every d = 128 case
      // timed either way (H100, docs/kernels.md, mma16).
      {V, 128, 64, 32, S, B, 2, true},
      {V, 128, 128, 32, S, B, 2, true},
      {V, 128, 128, 32, S, B, 3, true},
      {V, 128, 128, 64, S, B, 2, true},
      {V, 128, 128, 64, P, B, 2, true},
      {V, 128, 128, 64, S, H, 2, true},
  };
#endif
};

struct Mma16 {
  static constexpr Variant kVariant = Variant::Mma16;
  // Causal query tiles run heavy first (kernels/attention_params.cuh), on a batch-fastest grid.
  static constexpr bool kCausalHeavyFirst = true;

  // ---- thread grid ------------------------------------------------------------------------
  static constexpr int kRowsPerWarp = 32;  // two m16 tiles per warp (see the header comment)
  static constexpr int kMTiles = kRowsPerWarp / 16;
  static constexpr int kElementBytes = 2;
  static constexpr int kChunkBytes = 16;   // one ldmatrix row, one cp.async, one epilogue store
  static constexpr int kChunkElements = kChunkBytes / kElementBytes;
  static constexpr int warps(const TileConfig& c) { return c.Br / kRowsPerWarp; }
  static constexpr int threads(const TileConfig& c) { return 32 * warps(c); }
  static constexpr int s_tiles(int bc) { return bc / 8; }   // n8 tiles of S per m16 tile
  static constexpr int o_tiles(int d) { return d / 8; }     // n8 tiles of O per m16 tile
  static constexpr int qk_steps(int d) { return d / 16; }   // k16 steps of Q K^T
  static constexpr int pv_steps(int bc) { return bc / 16; } // k16 steps of P V
  static constexpr int chunks(int d) { return d / kChunkElements; }  // 16-byte chunks per row
  static constexpr int group_of(int lane) { return lane / 4; }
  static constexpr int thread_in_group(int lane) { return lane % 4; }

  // ---- shared-memory layout (byte offsets) -------------------------------------------------
  static constexpr int row_bytes(int d, Layout l) { return kElementBytes * d + (l == Layout::Padded ? kChunkBytes : 0); }
  // Rows of 8 or more chunks (d >= 64): the low 3 bits of the chunk index XOR row % 8. Rows of 4
  // chunks (d = 32, two rows per 128 bytes): XOR (row / 2) % 4. Either way the 8 consecutive rows of
  // one ldmatrix matrix put chunk c in 8 different 16-byte bank groups. Bit operations, not %:
  // rows 16 apart share a swizzle, and the compiler sees it.
  static constexpr int swizzle(int d, int row) { return chunks(d) >= 8 ? (row & 7) : ((row >> 1) & 3); }
  // Byte offset of chunk `chunk` (elements 8 chunk .. 8 chunk + 7) of `row` within a tile.
  static constexpr int chunk_byte(Layout l, int d, int row, int chunk) {
    return row * row_bytes(d, l) + kChunkBytes * (l == Layout::Swizzled ? chunk ^ swizzle(d, row) : chunk);
  }
  static constexpr int q_tile_bytes(const TileConfig& c) { return c.Br * row_bytes(c.d, c.layout); }
  static constexpr int kv_tile_bytes(const TileConfig& c) { return c.Bc * row_bytes(c.d, c.layout); }
  static constexpr int stage_bytes(const TileConfig& c) { return 2 * kv_tile_bytes(c); }
  static constexpr int q_base(const TileConfig&) { return 0; }
  // Stage s: its K tile, then its V tile, after the Q tile.
  static constexpr int k_base(const TileConfig& c, int stage) { return q_tile_bytes(c) + stage * stage_bytes(c); }
  static constexpr int v_base(const TileConfig& c, int stage) { return k_base(c, stage) + kv_tile_bytes(c); }
  static constexpr int smem_bytes(const TileConfig& c) { return q_tile_bytes(c) + c.stages * stage_bytes(c); }

  // ---- ldmatrix fragment addressing --------------------------------------------------------
  // ldmatrix.x4: lanes 8i .. 8i + 7 supply the row addresses of matrix i (16 bytes each); matrix i
  // lands in register i of every lane as the (row g, elements 2t, 2t + 1) pair (.trans: rows 2t and
  // 2t + 1 of column g). The row and chunk each lane supplies:
  // Q (A of Q K^T, m16 tile mt, k-step kk): matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7),
  // (rows 0-7, k 8-15), (rows 8-15, k 8-15) = a0, a1, a2, a3.
  static constexpr int q_ld_row(int warp, int mt, int lane) {
    return kRowsPerWarp * warp + 16 * mt + (lane & 7) + 8 * ((lane >> 3) & 1);
  }
  static constexpr int q_ld_chunk(int kk, int lane) { return 2 * kk + (lane >> 4); }
  // K (B of Q K^T, keys 16 np .. 16 np + 15 = n8 tiles 2np and 2np + 1, k-step kk): matrices
  // (keys 0-7, k 0-7), (keys 0-7, k 8-15), (keys 8-15, k 0-7), (keys 8-15, k 8-15) = b0, b1 of
  // tile 2np, b0, b1 of tile 2np + 1.
  static constexpr int k_ld_row(int np, int lane) { return 16 * np + (lane & 7) + 8 * (lane >> 4); }
  static constexpr int k_ld_chunk(int kk, int lane) { return 2 * kk + ((lane >> 3) & 1); }
  // V (B of P V through .trans, keys 16 kk .. 16 kk + 15, d columns 16 np .. 16 np + 15 = n8 tiles
  // 2np and 2np + 1): matrices (keys 0-7, d 0-7), (keys 8-15, d 0-7), (keys 0-7, d 8-15),
  // (keys 8-15, d 8-15) = b0, b1 of tile 2np, b0, b1 of tile 2np + 1.
  static constexpr int v_ld_row(int kk, int lane) { return 16 * kk + (lane & 7) + 8 * ((lane >> 3) & 1); }
  static constexpr int v_ld_chunk(int np, int lane) { return 2 * np + (lane >> 4); }
  // The offsets split into a lane-dependent base (one of four: the swizzle XORs the chunk index's
  // low three bits, which a k-step moves through in four steps of two) and a compile-time step, so
  // the kernel holds at most four bases per operand and every ldmatrix is [base + immediate]:
  //   chunk_byte(l, d, q_ld_row(w, mt, lane), q_ld_chunk(kk, lane)) == q_frag_base(d, l, w, lane, kk % 4) + q_frag_step(d, l, mt, kk)
  //   chunk_byte(l, d, k_ld_row(np, lane), k_ld_chunk(kk, lane))    == k_frag_base(d, l, lane, kk % 4) + k_frag_step(d, l, np, kk)
  //   chunk_byte(l, d, v_ld_row(kk, lane), v_ld_chunk(np, lane))    == v_frag_base(d, l, lane, np % 4) + v_frag_step(d, l, kk, np)
  // (tests/kernels_traits_test.cpp checks all three over every lane).
  static constexpr int kFragBases = 4;
  static constexpr int chunk_step(int k) { return 8 * kChunkBytes * (k / 4); }
  static constexpr int q_frag_base(int d, Layout l, int warp, int lane, int j) {
    return chunk_byte(l, d, q_ld_row(warp, 0, lane), q_ld_chunk(j, lane));
  }
  static constexpr int q_frag_step(int d, Layout l, int mt, int kk) { return 16 * mt * row_bytes(d, l) + chunk_step(kk); }
  static constexpr int k_frag_base(int d, Layout l, int lane, int j) {
    return chunk_byte(l, d, k_ld_row(0, lane), k_ld_chunk(j, lane));
  }
  static constexpr int k_frag_step(int d, Layout l, int np, int kk) { return 16 * np * row_bytes(d, l) + chunk_step(kk); }
  static constexpr int v_frag_base(int d, Layout l, int lane, int j) {
    return chunk_byte(l, d, v_ld_row(0, lane), v_ld_chunk(j, lane));
  }
  static constexpr int v_frag_step(int d, Layout l, int kk, int np) { return 16 * kk * row_bytes(d, l) + chunk_step(np); }
  // Bases a lane keeps: four, or d / 16 where that is fewer (d = 32: two k-steps).
  static constexpr int frag_bases(int d) { return qk_steps(d) < kFragBases ? qk_steps(d) : kFragBases; }
  // The four bases from the first: base j = frag_next(l, base 0, j). Swizzled: chunk 2j + x of a
  // row XOR s is (2j) XOR (x XOR s), and 16 (a XOR b) = 16 a XOR 16 b lies in the low 7 bits of a
  // row start that is a multiple of 128 bytes (64 at d = 32, where the swizzle keeps to bits 4-5):
  // base 0 XOR 32 j. Padded and plain: base 0 + 32 j. So the kernel keeps one base per operand, and
  // a tile base that is a multiple of 128 bytes may be added before the XOR.
  static constexpr int frag_next(Layout l, int base0, int j) {
    return l == Layout::Swizzled ? (base0 ^ (2 * kChunkBytes * j)) : base0 + 2 * kChunkBytes * j;
  }

  // ---- the epilogue: O through the warp's own rows of the Q tile ------------------------------
  // C element pair (row g + 8 half, columns 2t, 2t + 1) of O tile n of m16 tile mt: one 4-byte
  // store at this offset.
  static constexpr int o_stage_row(int warp, int mt, int half, int lane) {
    return kRowsPerWarp * warp + 16 * mt + 8 * half + group_of(lane);
  }
  static constexpr int o_stage_byte(int d, Layout l, int warp, int mt, int half, int n, int lane) {
    return chunk_byte(l, d, o_stage_row(warp, mt, half, lane), n) + 4 * thread_in_group(lane);
  }
  // Then the warp reads its rows back as 16-byte chunks, chunk idx = lane + 32 i (row idx / chunks,
  // chunk idx % chunks), and stores each to its global row: d / 8 trips.
  static constexpr int o_store_trips(int d) { return kRowsPerWarp * chunks(d) / 32; }

  // ---- cooperative cp.async of a [rows, d] tile --------------------------------------------
  // Chunk idx = tid + trip * threads: row idx / chunks(d), chunk idx % chunks(d).
  static constexpr int copy_trips(int rows, int d, int nthreads) { return ceil_div(rows * chunks(d), nthreads); }

  // ---- registers ---------------------------------------------------------------------------
  // Per thread (the model's occupancy; a profile's compiled value wins): O (d fp32) and the V
  // fragments of one P V k-step (d / 16 ldmatrix.x4, d / 4), S (Bc fp32) and P packed beside it
  // (Bc / 2), Q where it stays in registers (2 m16 tiles x d / 16 k-steps x 4 = d / 2), and 32 for
  // the softmax state of four rows, the ldmatrix bases and addressing. Fitted to ptxas -v on sm_90
  // (nvcc 13.0, tests/data/ptxas_registers_sm90.json): every compiled instance within 6% (the
  // worst d = 64, Bc = 64 with /qsmem: 208 for 220), the same blocks per SM on H100 and H200
  // (tests/kernels_registers_test.cpp); the d = 32 Bc = 128, d = 64 Bc = 128 and d = 128 Bc = 64
  // tiles reach the 255 cap.
  static constexpr int registers_estimate(const TileConfig& c) {
    const int r = c.d + c.d / 4 + c.Bc + c.Bc / 2 + (c.q_smem ? 0 : c.d / 2) + 32;
    return r < 255 ? r : 255;
  }
  // Q fits in registers beside O and S only while d + Bc + d / 2 stays within what ptxas can hold
  // next to the pipeline's ~70 registers of fragments and addressing: d <= 64 and Bc <= 64.
  static constexpr bool q_registers_fit(const TileConfig& c) { return c.d <= 64 && (c.d <= 32 || c.Bc <= 64); }

  // ---- what can be built -------------------------------------------------------------------
  static constexpr bool is_dtype(DType t) { return t == DType::Bf16 || t == DType::Fp16; }
  static constexpr TileFault fault(const TileConfig& c) {
    if (const TileFault f = common_shape_fault(c, kVariant); f != TileFault::None) return f;
    if (!is_dtype(c.dtype)) return TileFault::ElementType;
    if (c.stages < 2 || c.stages > 4) return TileFault::VariantStages;
    if (c.Br != 64 && c.Br != 128) return TileFault::VariantRows;
    if (c.Bc < 32) return TileFault::VariantCols;
    if (!c.q_smem && !q_registers_fit(c)) return TileFault::VariantQResidence;
    return smem_fault(smem_bytes(c));
  }
  static std::optional<std::string> rejection(const TileConfig& c) {
    const std::string name = variant_name(kVariant);
    switch (const TileFault f = fault(c); f) {
      case TileFault::None: return std::nullopt;
      case TileFault::ElementType:
        return name + " multiplies bf16 or fp16 operands, not " + dtype_name(c.dtype) + " (add /bf16 or /fp16)";
      case TileFault::VariantStages:
        return name + " needs 2 to 4 cp.async stages (/s2, /s3, /s4), got " + std::to_string(c.stages);
      case TileFault::VariantRows:
        return name + " needs Br in {64, 128} (2 or 4 warps of 32 rows), got Br=" + std::to_string(c.Br);
      case TileFault::VariantCols: return name + " needs Bc in {32, 64, 128}, got Bc=" + std::to_string(c.Bc);
      case TileFault::VariantQResidence:
        return name + " " + c.name() + " cannot keep Q in registers beside O and S (d=" + std::to_string(c.d) +
               ", Bc=" + std::to_string(c.Bc) + "; needs d <= 64 and Bc <= 64 at d = 64): add /qsmem";
      case TileFault::SharedMemory: return name + " " + c.name() + " " + smem_words(smem_bytes(c));
      default: return fault_words(f, c, kVariant);
    }
  }

  static constexpr const auto& kCompiled = Mma16Compiled::kList;
  // Built at ptxas -O1 (traits_common.h, built_at_ptxas_o1): d = 128, Br 128 x Bc 64 with two
  // stages. At -O3 they hold 255 registers and keep 8 bytes in local memory; at -O1 none, and
  // they ran 0.92-1.03x their -O3 time on the H100, where -O1 slows the other d = 128 tiles by
  // 10-18% (docs/kernels.md, mma16).
  static constexpr bool ptxas_o1(const TileConfig& c) {
    return c.d == 128 && c.Br == 128 && c.Bc == 64 && c.stages == 2;
  }

  // ---- what the kernel template reads --------------------------------------------------------
  template <int D, int BR, int BC, Layout L, int DT, int STAGES, int QSMEM>
  struct Tile {
    static constexpr TileConfig kConfig{kVariant, D, BR, BC, L, static_cast<DType>(DT), STAGES, QSMEM != 0};
    static constexpr int kWarps = warps(kConfig);
    static constexpr int kThreads = threads(kConfig);
    static constexpr int kSmemBytes = smem_bytes(kConfig);
    static_assert(fault(kConfig) == TileFault::None, "mma16 cannot build this tile (rejection() says why)");
    static_assert(kThreads % chunks(D) == 0, "a copy trip must advance whole rows");
  };

  // ---- model geometry ----------------------------------------------------------------------
  static KernelGeometry geometry(const TileConfig& c);
};

static_assert(first_refused_compiled<Mma16>() == -1, "Mma16::kCompiled holds a tile rejection() refuses");

// A cp.async copy of a [rows, d] 16-bit tile: chunk idx = warp * 32 + lane + i * threads goes to
// shared byte base + chunk_byte(row, chunk) and comes from byte 16 idx of the packed global tile.
inline SmemSite mma16_copy_site(std::string name, SiteScope scope, const TileConfig& c, int rows, int base) {
  const int d = c.d, nthreads = Mma16::threads(c), total = rows * Mma16::chunks(d);
  const Layout l = c.layout;
  auto index = [=](int warp, int lane, long long i) -> long long {
    const long long idx = warp * 32LL + lane + i * nthreads;
    return idx < total ? idx : -1;
  };
  SmemSite s = make_site(std::move(name), SmemOp::AsyncCopy, 16, scope, Mma16::warps(c),
                         Mma16::copy_trips(rows, d, nthreads), [=](int warp, int lane, long long i) -> long long {
                           const long long idx = index(warp, lane, i);
                           if (idx < 0) return -1;
                           const int k = static_cast<int>(idx);
                           return base + Mma16::chunk_byte(l, d, k / Mma16::chunks(d), k % Mma16::chunks(d));
                         });
  s.global_byte_address = [=](int warp, int lane, long long i) -> long long {
    const long long idx = index(warp, lane, i);
    return idx < 0 ? -1 : 16 * idx;
  };
  return s;
}

inline KernelGeometry Mma16::geometry(const TileConfig& c) {
  const int nwarps = warps(c), nthreads = threads(c), d = c.d, bc = c.Bc;
  const Layout l = c.layout;
  const int kb = k_base(c, 0), vb = v_base(c, 0), qb = q_base(c);

  KernelGeometry g;
  g.config = c;
  g.threads_per_block = nthreads;
  g.smem_bytes = smem_bytes(c);
  g.registers_estimate = registers_estimate(c);

  // cp.async of K and V (stage 0 stands for every stage: they differ by a whole number of rows'
  // worth of 128-byte lines in their base, which shifts every lane alike).
  g.smem_sites.push_back(mma16_copy_site("K tile cp.async", SiteScope::PerKvTile, c, bc, kb));
  g.smem_sites.push_back(mma16_copy_site("V tile cp.async", SiteScope::PerKvTile, c, bc, vb));
  g.smem_sites.push_back(mma16_copy_site("Q tile cp.async", SiteScope::PerBlock, c, c.Br, qb));
  // ldmatrix.x4 as a 16-byte load per lane at the row address it supplies.
  // Q K^T: per k-step kk and key pair np, one ldmatrix.x4 of K (instance i = kk * pairs + np).
  const int pairs = bc / 16, ksteps = qk_steps(d), dpairs = d / 16;
  g.smem_sites.push_back(make_site("K ldmatrix.x4 in QK^T", SmemOp::Load, 16, SiteScope::PerKvTile, nwarps,
                                   static_cast<long long>(ksteps) * pairs, [=](int, int lane, long long i) -> long long {
                                     const int kk = static_cast<int>(i / pairs), np = static_cast<int>(i % pairs);
                                     return kb + chunk_byte(l, d, k_ld_row(np, lane), k_ld_chunk(kk, lane));
                                   }));
  // P V: per k-step kk (16 keys) and d pair np, one ldmatrix.x4.trans of V (i = kk * dpairs + np).
  g.smem_sites.push_back(make_site("V ldmatrix.x4.trans in PV", SmemOp::Load, 16, SiteScope::PerKvTile, nwarps,
                                   static_cast<long long>(pv_steps(bc)) * dpairs,
                                   [=](int, int lane, long long i) -> long long {
                                     const int kk = static_cast<int>(i / dpairs), np = static_cast<int>(i % dpairs);
                                     return vb + chunk_byte(l, d, v_ld_row(kk, lane), v_ld_chunk(np, lane));
                                   }));
  // Q fragments: every tile (q_smem) or once per block into registers; per k-step and m16 tile one
  // ldmatrix.x4 (i = kk * 2 + mt).
  g.smem_sites.push_back(make_site(c.q_smem ? "Q ldmatrix.x4 in QK^T" : "Q ldmatrix.x4 into registers", SmemOp::Load,
                                   16, c.q_smem ? SiteScope::PerKvTile : SiteScope::PerBlock, nwarps,
                                   static_cast<long long>(ksteps) * kMTiles,
                                   [=](int warp, int lane, long long i) -> long long {
                                     const int kk = static_cast<int>(i / kMTiles), mt = static_cast<int>(i % kMTiles);
                                     return qb + chunk_byte(l, d, q_ld_row(warp, mt, lane), q_ld_chunk(kk, lane));
                                   }));
  // Epilogue: O pairs into the warp's Q rows (i = (mt * 2 + half) * o_tiles + n), then 16-byte reads.
  g.smem_sites.push_back(make_site("O pair store (epilogue)", SmemOp::Store, 4, SiteScope::PerBlock, nwarps,
                                   static_cast<long long>(kMTiles) * 2 * o_tiles(d),
                                   [=](int warp, int lane, long long i) -> long long {
                                     const int n = static_cast<int>(i % o_tiles(d));
                                     const int half = static_cast<int>((i / o_tiles(d)) % 2);
                                     const int mt = static_cast<int>(i / o_tiles(d) / 2);
                                     return qb + o_stage_byte(d, l, warp, mt, half, n, lane);
                                   }));
  g.smem_sites.push_back(make_site("O chunk read (epilogue)", SmemOp::Load, 16, SiteScope::PerBlock, nwarps,
                                   o_store_trips(d), [=](int warp, int lane, long long i) -> long long {
                                     const int idx = lane + 32 * static_cast<int>(i);
                                     return qb + chunk_byte(l, d, kRowsPerWarp * warp + idx / chunks(d), idx % chunks(d));
                                   }));

  // Counts of one full K/V tile per block. mma16: warp-level; the others thread-level.
  const double t = nthreads;
  TileInstructionCounts& n = g.per_kv_tile;
  // Q K^T: 2 m16 tiles x Bc / 8 n-tiles x d / 16 k-steps; P V: 2 x d / 8 x Bc / 16. Bc d / 32 each.
  n.mma16 = nwarps * (2.0 * kMTiles * s_tiles(bc) * qk_steps(d) / 2.0 + 2.0 * kMTiles * o_tiles(d) * pv_steps(bc) / 2.0);
  // Per lane: Bc scores (2 m16 tiles x Bc / 8 x 4), four rows.
  // exp2: one per score and the four rows' alpha.
  n.exp = t * (bc + 4.0);
  // FFMA: the exp2 argument s * scale log2 e - m, one per score; per row alpha's argument
  // m_old * scale log2 e - m and l = l alpha + sum (sm__sass_thread_inst_executed_op_ffma_pred_on
  // on the H100: exact on every bf16 pair; 4 per lane short before alpha's was counted here).
  n.ffma = t * (bc + 8.0);
  // Other FP32: the row max (FMNMX) and row sum (FADD) over the scores, O *= alpha (d FMUL), and
  // per row the new max and its scaled value (2 x 4).
  n.fp32_other = t * (2.0 * bc + d + 8.0);
  n.shuffles = t * 8.0;        // row max: xor 1, 2 for each of the four rows
  n.cvt = t * (bc / 2.0);      // P packed in pairs (cvt.rn.bf16x2.f32 / .f16x2)
  n.barriers = 1;              // tile t landed and stage t - 1 is free

  set_block_traffic(g, c);
  // stages - 1 tiles in flight while one computes.
  g.kv_loads_overlap_compute = true;
  g.warps_skip_masked_tiles = true;
  g.rows_per_warp = kRowsPerWarp;
  // The mask (kernels/mma16.cuh, masked_after): per score, key >= kv_len and key > the row's last
  // key (two ISETP) and the select of -inf (FSEL), on the (warp, tile) pairs the branch takes.
  g.mask_instructions_per_score = 3.0;
  g.causal_heavy_first = kCausalHeavyFirst;
  return g;
}

}  // namespace flashtune::traits
