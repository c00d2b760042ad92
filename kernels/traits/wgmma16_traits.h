// Traits of the Hopper-native 16-bit kernel (sm_90a): warp-specialized FlashAttention forward on
// wgmma.mma_async with TMA tile copies into an mbarrier ring. The kernel template
// (kernels/wgmma16.cuh) and the model's geometry both read this file. Plain C++17, no CUDA.
//
// Shape of the kernel (one block per Br query rows of one batch entry; FA2 loop over K/V tiles):
//   warpgroup 0        the producer: one thread issues the TMA copies, Q once, then K and V tile t
//                      into stage t % stages once the consumers have released that stage; the other
//                      127 threads only give their registers away (setmaxnreg.dec);
//   warpgroups 1 .. C  the consumers, 64 query rows each (Br = 64 C): per K/V tile
//                      S = Q K^T    wgmma m64nBck16, A = Q and B = K both from shared memory
//                                   (K-major: d is the contiguous dimension of both), d / 16 wgmma;
//                      softmax      on the accumulator fragments in fp32, exactly as mma16 (FFMA
//                                   with scale log2 e, MUFU.EX2, row max over the 4 lanes of a row);
//                      O += P V     wgmma m64ndk16, A = P from registers (the S accumulator layout,
//                                   packed in pairs to the dtype, is the A fragment layout), B = V
//                                   from shared memory as stored, MN-major (d contiguous: the
//                                   transpose bit of the instruction), Bc / 16 wgmma;
//                      then release the stage (one mbarrier arrive per warp).
//   With the overlap knob (TileConfig::overlap, "/ov"; needs stages >= 2 since K of tile j and V
//   of tile j - 1 are read at once) a consumer instead runs, per tile j:
//                      issue S_j = Q K_j^T, issue O += P_{j-1} V_{j-1} (O already at m_{j-1}),
//                      wait for S_j only (wgmma.wait_group 1), softmax of S_j (m_j, P_j, alpha_j)
//                      while that P V runs on the tensor cores, wait for it, release stage j - 1,
//                      O *= alpha_j; after the last tile O += P_last V_last. Each stage is then
//                      held about one tile longer, so the ring hides the load latency with
//                      stages - 2 tiles instead of stages - 1 (overlap_hiding_tiles).
//   With the ping-pong knob (TileConfig::ping_pong, "/pp"; two or three consumers) the consumers
//   take turns issuing their products: consumer c waits on named barrier turn_barrier(c) before a
//   turn's wgmma and arrives on turn_barrier((c + 1) % C) right after issuing them (not after they
//   complete), so the products reach the tensor cores in the order C0, C1, .., C0, .. and each
//   consumer's softmax runs while the next ones' products hold the tensor cores, instead of every
//   consumer reaching its products and its softmax together after the shared full barrier. A turn
//   is every product issued between two softmaxes: the serial loop takes two per tile (S, then
//   P V), the overlapped loop one per tile (S_j with P_{j-1} V_{j-1}) plus one for the last P V
//   (turns()). Every consumer takes the same number of turns, empty ones on the tiles it skips
//   past its causal diagonal, so that nobody waits for a turn never passed. Consumer 0 skips its
//   very first wait and consumer C - 1 its very last arrival: each barrier then sees as many
//   arrivals as waits, and none is left half-complete at exit.
//   With the persistent knob (TileConfig::persistent, "/pe") the grid is about one block per SM
//   (min(tiles, SMs x resident blocks)) and block b walks tiles b, b + grid, b + 2 grid, .. of the
//   grid the kernel would otherwise launch, in the same order (heavy first under causal) and with
//   the same tile -> (query tile, entry) mapping, so its output is bit for bit the one-block-per-tile
//   launch's. The producer carries the K/V ring's stage and phase across tiles and loads the next
//   tile's Q into a second Q buffer where shared memory has room (q_buffers()), so the next tile's
//   Q and first K/V stages land while the consumers finish the previous tile's softmax and epilogue.
//   A consumer warpgroup's O goes out through its rows of the Q buffer: after the TMA store has read
//   them it arrives on that buffer's q_free barrier, which the producer waits on before loading a
//   later tile's Q into it. With one Q buffer (d = 128 s3: two do not fit) the producer loads the
//   next tile's first K/V stages, then waits for q_free, then loads Q: Q's latency stays exposed.
//   The ping-pong's ring runs on across tiles (the first wait and the last arrival are skipped once
//   per block, not per tile), so that consumer 0 never passes twice before the next one waits.
//   Keys run to kv_len (a KV cache: Nq != Nkv) and K/V head h / kv_group serves query head h
//   (grouped heads), both through the K and V tensor maps' own extents; causal is bottom-right.
//   The epilogue divides by l, rounds O to the dtype into the warpgroup's own rows of the Q tile
//   (Q is no longer read) and stores them with one TMA copy per 64 columns (rows past N clipped).
// Not yet (later steps of issue 25): separate K and V barriers, tf32.
//
// Shared memory: every tile in the TMA / wgmma 128-byte swizzle. A tile of `rows` x d is d / 64
// column blocks, each `rows` rows of 128 bytes (64 elements); 16-byte chunk c of row r sits at chunk
// c ^ (r % 8) of that row. Block bases are multiples of 1024 bytes (the swizzle's period of 8 rows),
// which the swizzle needs. Layout: Q [Br, d], then `stages` K tiles [Bc, d], then `stages` V tiles,
// then the mbarriers (full and empty per stage, one for Q), plus 1 KB to align the dynamic base.
// Persistent: q_buffers() Q tiles first; after the Q barriers one q_free barrier per Q buffer and a
// tile description per consumer warpgroup.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kernels/traits/kernel_geometry.h"
#include "kernels/traits/warpgroup_roles.h"
#include "kernels/traits/tile_config.h"
#include "kernels/traits/traits_common.h"

namespace flashtune::traits {

// What the library compiles where the build targets sm_90 (kernels/CMakeLists.txt compiles them for
// sm_90a): d 64 and 128, two consumer warpgroups (Br = 128) with Bc 64 or 128 and 2 or 3 stages,
// one consumer warpgroup (Br = 64) at d = 128 for grids too small to fill the SMs, three (Br = 192)
// at d = 64, Bc = 128, where S, P and O fit the 160 registers three consumers can have (64 + 32 +
// 32) and K/V is read once per 192 query rows instead of 128 (FlashAttention-3's d = 64 tile;
// 1.05-1.47x the two-consumer tile on the seed cases, H200). Not at d = 128: Bc = 128 spills 8 B at
// 160 registers, and Bc = 64 (no spill) ran n1k_d128 at 397 TFLOP/s against 445 for the two-consumer
// 128 x 128 tile (H200, docs/results/h200-wgmma-br192-5e3a3f8.md), so it is not compiled; fp16 the likely
// winners only (the same pipe and rate as bf16). The intra-warpgroup overlap ("/ov", the last
// field) where the model must compare it with the serial loop (it is not faster on any seed case
// yet: docs/results/h200-wgmma-overlap-*.md): d = 64 Bc = 128 at 2 to 4 stages, d = 128 at 3;
// with two consumers only: with one, S, P and O
// of both tiles in flight need more than the 255 registers a thread can have (ptxas spills 4 B
// at d = 128, Bc = 128). The ping-pong ("/pp", after /ov) beside the fastest serial tiles (d = 64
// Br 128 and 192 Bc 128, d = 128 Br 128 Bc 128) and with the overlap at d = 128 s3 (FlashAttention-3
// pairs the two), so that the model and the tuner compare each with its twin. The persistent grid
// ("/pe", after /pp) beside the best tiles of the seed cases (d = 64 Br 192 s2 and s3, Br 128 s2;
// d = 128 Br 128 s2, s3/ov and s3/ov/pp), where short blocks (n1k_d128: 8 K/V tiles a block) leave
// each block's prologue and epilogue exposed.
struct Wgmma16Compiled {
  static constexpr Variant V = Variant::Wgmma16;
  static constexpr Layout S = Layout::Swizzled;
  static constexpr DType B = DType::Bf16, H = DType::Fp16;
  static constexpr bool kOv = true, kPp = true, kPe = true;
#if FLASHTUNE_SMALL_KERNEL_SET && !FLASHTUNE_MMA16_FULL_SET
  static constexpr TileConfig kList[] = {
      {V, 64, 128, 128, S, B, 2, false},
      {V, 128, 128, 128, S, B, 2, false},
      {V, 128, 128, 128, S, B, 2, false, false, kPp},
      {V, 128, 128, 128, S, B, 2, false, false, false, kPe},
      {V, 128, 128, 128, S, B, 3, false, kOv},
  };
#else
  static constexpr TileConfig kList[] = {
      // d = 32 (the 64-byte swizzle), for the seed cases that mma16 alone served: t29 (4 x 32768,
      // where Br = 192 runs 7-9% ahead of mma16's best) and t11 (13600 heads of 128 rows, one K/V
      // tile a query tile: /pe lands the next tile's Q and K/V under the current one's math, 1.6x
      // its twin, level with mma16). s3/pe and Br 128 Bc 64 s4/pe ran no faster than s2/pe; Br 192
      // s2/pe ran 6-8% behind its twin on t29 where the model put it 0.4% ahead (the persistent grid
      // on long blocks, docs/kernels.md), so the model's pick there would have cost 8%.
      {V, 32, 128, 128, S, B, 2, false},
      {V, 32, 128, 128, S, B, 2, false, false, false, kPe},
      {V, 32, 192, 128, S, B, 2, false},
      {V, 64, 128, 64, S, B, 2, false},
      {V, 64, 128, 128, S, B, 2, false},
      {V, 64, 128, 128, S, B, 2, false, false, kPp},
      {V, 64, 128, 128, S, B, 2, false, false, false, kPe},
      {V, 64, 128, 128, S, B, 3, false},
      {V, 64, 128, 128, S, H, 2, false},
      {V, 64, 128, 128, S, B, 2, false, kOv},
      {V, 64, 128, 128, S, B, 3, false, kOv},
      {V, 64, 128, 128, S, B, 4, false, kOv},
      {V, 64, 192, 128, S, B, 2, false},
      {V, 64, 192, 128, S, B, 2, false, false, kPp},
      {V, 64, 192, 128, S, B, 2, false, false, false, kPe},
      {V, 64, 192, 128, S, B, 3, false},
      {V, 64, 192, 128, S, B, 3, false, false, kPp},
      {V, 64, 192, 128, S, B, 3, false, false, false, kPe},
      {V, 128, 64, 128, S, B, 2, false},
      {V, 128, 128, 64, S, B, 2, false},
      {V, 128, 128, 64, S, B, 3, false},
      {V, 128, 128, 64, S, B, 3, false, kOv},
      {V, 128, 128, 128, S, B, 2, false},
      {V, 128, 128, 128, S, B, 2, false, false, kPp},
      {V, 128, 128, 128, S, B, 2, false, false, false, kPe},
      {V, 128, 128, 128, S, B, 3, false},
      {V, 128, 128, 128, S, H, 2, false},
      {V, 128, 128, 128, S, B, 3, false, kOv},
      {V, 128, 128, 128, S, B, 3, false, kOv, false, kPe},
      {V, 128, 128, 128, S, B, 3, false, kOv, kPp},
      {V, 128, 128, 128, S, B, 3, false, kOv, kPp, kPe},
  };
#endif
};

struct Wgmma16 : WarpgroupRoles<24> {
  static constexpr Variant kVariant = Variant::Wgmma16;
  // Causal query tiles run heavy first (kernels/attention_params.cuh), on a batch-fastest grid.
  static constexpr bool kCausalHeavyFirst = true;

  // ---- roles (warpgroup_roles.h) -----------------------------------------------------------------
  static constexpr int kElementBytes = 2;
  // The producer keeps 24 registers, the minimum; two consumers take 240 each (S, P and O of a
  // d = 128, Bc = 128 tile: 64 + 32 + 64, plus the softmax state and addressing),
  // 128 x (24 + 2 x 240) = 64512; three take 160 (d = 64, Bc = 128: 64 + 32 + 32 and the same
  // state), 128 x (24 + 3 x 160) = 64512.
  // Per thread, as ptxas reports it: the launch value where the warpgroups reallocate (ptxas -v
  // prints the register count at entry); with one consumer, what the consumer code needs: S, O and
  // P (Bc / 2 + d / 2 + Bc / 4) and 52 for the softmax state, the mask and addressing. The 52 is
  // fitted to the one single-consumer instance: ptxas -v on sm_90a, nvcc 13.0, gives
  // wgmma16/d128/br64xbc128/swizzled/bf16/s2 212 registers (tests/data/ptxas_registers_sm90.json,
  // scripts/ptxas_registers_json.sh); it gave 182 (then fitted as 22) before the inference operands
  // (kv_len, kv_group, the bottom-right causal offset) entered the prologue and the mask.
  static constexpr int registers_estimate(const TileConfig& c) {
    if (reallocates_registers(c)) return launch_registers(c);
    const int r = s_registers(c.Bc) + o_registers(c.d) + c.Bc / 4 + 52;
    return r < 255 ? r : 255;
  }

  // ---- shared-memory layout (byte offsets from the 1024-aligned base) --------------------------
  // The TMA / wgmma swizzle of a row of d 16-bit elements: 128 bytes (64 elements) at d >= 64, the
  // 64-byte swizzle at d = 32 (one row of 32 elements is one swizzled row).
  static constexpr int swizzle_bytes(int d) { return d * kElementBytes < 128 ? d * kElementBytes : 128; }
  // The descriptor's layout type (bits 62-63) and the TMA map's swizzle for it: 1 = 128 B, 2 = 64 B.
  static constexpr int swizzle_mode(int d) { return swizzle_bytes(d) == 128 ? 1 : 2; }
  static constexpr int swizzle_atom_bytes(int d) { return 8 * swizzle_bytes(d); }  // 8 rows: the pattern's period
  static constexpr int block_columns(int d) { return swizzle_bytes(d) / kElementBytes; }
  static constexpr int column_blocks(int d) { return d / block_columns(d); }
  static constexpr int block_bytes(int d, int rows) { return rows * swizzle_bytes(d); }
  static constexpr int tile_bytes(int rows, int d) { return rows * d * kElementBytes; }
  // Byte of element (row, col) in a [rows, d] tile: column block col / block_columns, then its
  // 16-byte chunk XOR the row's phase in the 8-row period: row % 8 in the 128-byte swizzle, (row / 2) % 4
  // in the 64-byte one (address bits 7-9 or 7-8 into bits 4-6 or 4-5, from a 1024-aligned base).
  static constexpr int element_byte(int d, int rows, int row, int col) {
    const int bc = block_columns(d), phase = swizzle_bytes(d) == 128 ? row % 8 : (row / 2) % 4;
    return (col / bc) * block_bytes(d, rows) + row * swizzle_bytes(d) + 16 * (((col % bc) / 8) ^ phase) +
           kElementBytes * (col % 8);
  }
  static constexpr int q_bytes(const TileConfig& c) { return tile_bytes(c.Br, c.d); }
  static constexpr int kv_tile_bytes(const TileConfig& c) { return tile_bytes(c.Bc, c.d); }
  // The persistent grid serves non-causal workloads only. Its order is static (block b walks tiles
  // b, b + grid, ..), where the one-block-per-tile twin's heavy-first grid goes to whichever SM is
  // free first: under causal every /pe config measured ran slower than its twin, 1.15x on
  // n1k_d128 and n1999_d64, 1.5x-2.0x on long or few-entry grids (H100, unseen set re-measured at
  // 44aaa6b: u07 6 x 3430 d = 64 0.0836 against 0.0424 ms, u17 1 x 29063 d = 128 0.600 against
  // 0.407), where the model put the two level and so picked /pe; the snake order (ec7366a) and a
  // dealt order (6487b7e, docs/results/h100-wgmma-persistent-dealer-cas-44aaa6b.md) did not close the
  // gap, nor did a dealer on one atomicAdd dealing each tile once the previous one's loads were
  // issued (aaff45f: within 1.02x-1.11x of the twin, never ahead of it;
  // docs/results/wgmma-persistent-dealer-atomic-aaff45f.md). The refusal (nullptr: served) is the
  // kernel's (can_implement) and the model's (config_rejection): the tuner, the dispatcher and the
  // ranking take the twin.
  static constexpr const char* persistent_refusal(const TileConfig& c, const Workload& w) {
    return c.persistent && w.causal ? "runs the persistent grid (/pe), which serves non-causal workloads only (under "
                                      "causal its static tile order ran 1.15x-2.0x slower than the twin without /pe)"
                                    : nullptr;
  }
  // What the persistent grid's layout takes with `qb` Q buffers, with or without the O staging tile
  // (smem_bytes of what is built, from the offsets below): the Q buffers, the ring, the staging tile,
  // the barriers (full and empty per stage, Q and q_free per Q buffer), the tile descriptions and
  // the base's alignment slack. What decides q_buffers() and o_staging_bytes().
  static constexpr int persistent_layout_bytes(const TileConfig& c, int qb, bool staged) {
    return qb * q_bytes(c) + 2 * c.stages * kv_tile_bytes(c) + (staged ? q_bytes(c) : 0) + 16 * c.stages +
           16 * qb + 4 * kTileInfoWords * consumers(c) + kBaseAlignSlack;
  }
  // Q tiles in shared memory: one, or with the persistent grid two where they fit beside the ring
  // (the next tile's Q lands while the previous tile's epilogue stores O through the other).
  static constexpr int q_buffers(const TileConfig& c) {
    return c.persistent && persistent_layout_bytes(c, 2, false) <= kMaxSmemOptinBytes ? 2 : 1;
  }
  static constexpr int q_base(const TileConfig& c, int buffer = 0) { return buffer * q_bytes(c); }
  static constexpr int k_base(const TileConfig& c, int stage) {
    return q_buffers(c) * q_bytes(c) + stage * kv_tile_bytes(c);
  }
  static constexpr int v_base(const TileConfig& c, int stage) { return k_base(c, c.stages) + stage * kv_tile_bytes(c); }
  // Persistent, where it fits beside two Q buffers and the ring: O goes out through a staging tile
  // of its own ([Br, d], after the ring) instead of through the Q buffer's rows. The Q buffer is
  // then free once the tile's last products have completed (each consumer arrives on q_free right
  // after its K/V loop, as it releases a stage), and no consumer waits for its O store to have been
  // read before its next tile: the store of tile i has until tile i + 1's epilogue, where the
  // warpgroup's first thread checks it (cp.async.bulk.wait_group.read) before the staging rows are
  // written again. Without it every persistent tile ended on that wait, the whole warpgroup held at
  // the next tile's first barrier (t11, d = 32: one K/V tile per query tile).
  static constexpr int o_staging_bytes(const TileConfig& c) {
    return c.persistent && q_buffers(c) == 2 && persistent_layout_bytes(c, 2, true) <= kMaxSmemOptinBytes ? q_bytes(c)
                                                                                                          : 0;
  }
  static constexpr bool stages_o(const TileConfig& c) { return o_staging_bytes(c) > 0; }
  static constexpr int o_base(const TileConfig& c) { return v_base(c, c.stages); }
  // mbarriers (8 bytes each): full[stage] (TMA bytes landed), empty[stage] (every consumer warp done
  // with the stage), then the Q barrier of each Q buffer, then (persistent) each Q buffer's q_free
  // barrier (every consumer warpgroup's O stored out of it, or with the O staging tile its last
  // products completed).
  static constexpr int barrier_base(const TileConfig& c) { return o_base(c) + o_staging_bytes(c); }
  static constexpr int full_barrier(const TileConfig& c, int stage) { return barrier_base(c) + 8 * stage; }
  static constexpr int empty_barrier(const TileConfig& c, int stage) { return barrier_base(c) + 8 * (c.stages + stage); }
  static constexpr int q_barrier(const TileConfig& c, int buffer = 0) { return barrier_base(c) + 16 * c.stages + 8 * buffer; }
  static constexpr int q_free_barrier(const TileConfig& c, int buffer) { return q_barrier(c, q_buffers(c)) + 8 * buffer; }
  static constexpr int kBaseAlignSlack = 1024;  // the dynamic base is aligned up to 1024 in the kernel
  // Persistent: each consumer warpgroup's description of its current tile (kTileInfoWords ints: its
  // first query row, K/V tiles, head and batch), written by the warpgroup's first thread at the
  // tile's start and read where it is needed instead of held in registers across the K/V loop
  // (three consumers have 160: held, the tile's coordinates spilled 4 to 16 B).
  static constexpr int kTileInfoWords = 4;
  static constexpr int tile_info(const TileConfig& c, int consumer) {
    return q_free_barrier(c, q_buffers(c)) + 4 * kTileInfoWords * consumer;
  }
  static constexpr int smem_bytes(const TileConfig& c) {
    return (c.persistent ? tile_info(c, consumers(c)) : q_barrier(c, q_buffers(c))) + kBaseAlignSlack;
  }
  // Arrivals that free a Q buffer for the next tile's Q: one per consumer warpgroup, after its
  // TMA store of O has read the buffer's rows (cp.async.bulk.wait_group.read), or with the O
  // staging tile (stages_o) after its K/V loop.
  static constexpr int q_free_arrivals(const TileConfig& c) { return consumers(c); }
  // Arrivals that free a stage: one per consumer warp, after its wgmma.wait_group 0.
  static constexpr int empty_arrivals(const TileConfig& c) { return 4 * consumers(c); }
  // TMA bytes that complete a stage's full barrier and the Q barrier.
  static constexpr int stage_tx_bytes(const TileConfig& c) { return 2 * kv_tile_bytes(c); }
  static constexpr int q_tx_bytes(const TileConfig& c) { return q_bytes(c); }
  // TMA boxes: block_columns (one swizzled row: 64 columns, 32 at d = 32) x 64 rows for Q and O
  // (one consumer's rows), x Bc rows for K and V.
  static constexpr int kQBoxRows = kRowsPerConsumer;

  // ---- wgmma shared-memory matrix descriptors (PTX ISA, "matrix descriptor format") -------------
  // bits 0-13 start address >> 4, 16-29 leading byte offset >> 4, 32-45 stride byte offset >> 4,
  // 62-63 swizzle mode (1 = 128 B, 2 = 64 B: swizzle_mode).
  static constexpr uint64_t descriptor(int d, uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t((addr & 0x3FFFF) >> 4)) | (uint64_t(lbo >> 4) << 16) | (uint64_t(sbo >> 4) << 32) |
           (uint64_t(swizzle_mode(d)) << 62);
  }
  // K-major operands (Q as A, K as B of Q K^T): 8-row groups one swizzle atom apart (the stride
  // offset); the leading offset is unused with a swizzle (1 by convention). k-step kk (16 elements,
  // 32 bytes) moves 32 bytes along the swizzled row inside column block kk / (block_columns / 16).
  static constexpr uint32_t kmajor_step_bytes(int d, int rows, int kk) {
    const int steps = block_columns(d) / 16;
    return static_cast<uint32_t>((kk / steps) * block_bytes(d, rows) + (kk % steps) * 32);
  }
  static constexpr uint64_t kmajor_descriptor(int d, uint32_t addr) { return descriptor(d, addr, 16, swizzle_atom_bytes(d)); }
  // V as the MN-major B of P V (d contiguous, keys down the rows): 8 keys per swizzle atom (the
  // stride offset), the next block_columns of d one column block further (the leading offset,
  // Bc swizzled rows; unused at d = 32, one block); k-step kk (16 keys) starts 16 rows down.
  static constexpr uint32_t v_step_bytes(int d, int kk) { return static_cast<uint32_t>(16 * kk * swizzle_bytes(d)); }
  static constexpr uint64_t v_descriptor(int d, uint32_t addr, int bc) {
    return descriptor(d, addr, static_cast<uint32_t>(block_bytes(d, bc)), swizzle_atom_bytes(d));
  }

  // ---- instructions per K/V tile and consumer warpgroup ------------------------------------------
  static constexpr int qk_wgmmas(const TileConfig& c) { return c.d / 16; }   // m64nBck16
  static constexpr int pv_wgmmas(const TileConfig& c) { return c.Bc / 16; }  // m64ndk16
  static constexpr int wgmmas_per_consumer_tile(const TileConfig& c) { return qk_wgmmas(c) + pv_wgmmas(c); }
  // TMA copies, one instruction each (a box 64 columns wide): per block, Q's d / 64 column blocks
  // for each consumer's 64 rows and O's the same on the way out; per K/V tile the producer loads,
  // K's and V's d / 64 boxes of Bc rows. Their bytes are the block traffic (set_block_traffic):
  // a box's rows past N or kv_len are not read or written.
  static constexpr int q_tma_loads(const TileConfig& c) { return column_blocks(c.d) * consumers(c); }
  static constexpr int kv_tma_loads_per_tile(const TileConfig& c) { return 2 * column_blocks(c.d); }
  static constexpr int o_tma_stores(const TileConfig& c) { return column_blocks(c.d) * consumers(c); }
  // K/V tiles the ring holds beyond the ones a consumer reads, i.e. the loads in flight that hide
  // a tile's load latency: a stage is freed once its P V completes, which with the overlap is one
  // tile later (the P V of tile j - 1 runs in iteration j).
  static constexpr int overlap_hiding_tiles(const TileConfig& c) { return c.stages - (c.overlap ? 2 : 1); }
  // Whether the compiled /ov loop runs the softmax of S_j under P_{j-1} V_{j-1}. In one basic
  // block ptxas's scheduler issues the P V's wait (WARPGROUP.DEPBAR) right after S_j's, before the
  // first exponential (it sees no dependency and does not model the stall), so the kernel ends the
  // block after the softmax with a branch never taken. The softmax then holds S, the P V's P and O
  // at once (overlap_live_registers); where that is more than kOverlapSplitRegisters, ptxas spilled
  // (d = 64, Bc = 128: 24 B) or serialized every wgmma (d = 128, Bc = 128: C7512, 570 B of spills)
  // at the 168 registers it allocates, so those tiles keep the single block: the serial loop with
  // each stage held a tile longer, measured 3-7% slower than the serial loop (H200,
  // docs/results/h200-wgmma-overlap-3a762e1.md). The model times what runs.
  static constexpr int overlap_live_registers(const TileConfig& c) {
    return s_registers(c.Bc) + c.Bc / 4 + o_registers(c.d);
  }
  static constexpr int kOverlapSplitRegisters = 112;
  static constexpr bool overlap_hides_softmax(const TileConfig& c) {
    return c.overlap && overlap_live_registers(c) <= kOverlapSplitRegisters;
  }
  // ---- ping-pong (TileConfig::ping_pong) -------------------------------------------------------
  // Named barriers (bar.sync / bar.arrive, 16 per block; 0 is __syncthreads): the epilogue's one
  // per consumer (its 128 threads), then the turn barrier of each consumer (its 128 threads wait,
  // the previous consumer's 128 arrive).
  static constexpr int kMaxConsumers = 3;
  static constexpr int epilogue_barrier(int consumer) { return 1 + consumer; }
  static constexpr int turn_barrier(int consumer) { return 1 + kMaxConsumers + consumer; }
  static constexpr int kTurnBarrierThreads = 2 * kWarpgroupThreads;
  // Turns a consumer takes per K/V tile of its block: one per batch of products issued between two
  // softmaxes (serial loop: S, then P V; overlapped loop: S_j with P_{j-1} V_{j-1}), and over a
  // block of `kv_tiles` tiles (the overlapped loop's last P V is one more).
  static constexpr int turns_per_tile(const TileConfig& c) { return c.ping_pong ? (c.overlap ? 1 : 2) : 0; }
  static constexpr int turns(const TileConfig& c, int kv_tiles) {
    return c.ping_pong ? turns_per_tile(c) * kv_tiles + (c.overlap && kv_tiles > 0 ? 1 : 0) : 0;
  }
  // Whether the block's consumers stagger their phases: with the ping-pong one consumer's softmax
  // runs under the other consumers' products; without it they start each tile together on the
  // full barrier and reach their products and their softmax together (model/async_pipeline.h).
  static constexpr bool staggers_phases(const TileConfig& c) { return c.ping_pong && consumers(c) > 1; }
  // Accumulator registers per consumer thread: S is 64 x Bc fp32 over 128 threads, O 64 x d.
  static constexpr int s_registers(int bc) { return bc / 2; }
  static constexpr int o_registers(int d) { return d / 2; }

  // ---- what can be built -------------------------------------------------------------------------
  static constexpr bool is_dtype(DType t) { return t == DType::Bf16 || t == DType::Fp16; }
  static constexpr TileFault fault(const TileConfig& c) {
    if (const TileFault f = common_shape_fault(c, kVariant); f != TileFault::None) return f;
    if (!is_dtype(c.dtype)) return TileFault::ElementType;
    if (c.d != 32 && c.d != 64 && c.d != 128) return TileFault::VariantHeadDim;
    if (c.Br != 64 && c.Br != 128 && c.Br != 192) return TileFault::VariantRows;
    if (c.Bc != 64 && c.Bc != 128) return TileFault::VariantCols;
    if (c.stages < 2 || c.stages > 4) return TileFault::VariantStages;
    if (c.layout != Layout::Swizzled) return TileFault::Layout;
    if (c.q_smem) return TileFault::FixedKnobs;
    if (c.ping_pong && consumers(c) < 2) return TileFault::PingPong;
    return smem_fault(smem_bytes(c));
  }
  static std::optional<std::string> rejection(const TileConfig& c) {
    const std::string name = variant_name(kVariant);
    switch (const TileFault f = fault(c); f) {
      case TileFault::None: return std::nullopt;
      case TileFault::ElementType:
        return name + " multiplies bf16 or fp16 operands, not " + dtype_name(c.dtype) + " (add /bf16 or /fp16)";
      case TileFault::VariantHeadDim:
        return name + " needs d in {32, 64, 128} (rows of whole 64- or 128-byte swizzle blocks), got d=" + std::to_string(c.d);
      case TileFault::VariantRows:
        return name + " needs Br in {64, 128, 192} (1 to 3 consumer warpgroups of 64 rows), got Br=" + std::to_string(c.Br);
      case TileFault::VariantCols: return name + " needs Bc in {64, 128}, got Bc=" + std::to_string(c.Bc);
      case TileFault::VariantStages:
        return name + " needs 2 to 4 TMA stages (/s2, /s3, /s4" +
               (c.overlap ? "; /ov reads K of one tile and V of the previous at once" : "") + "), got " +
               std::to_string(c.stages);
      case TileFault::Layout:
        return name + " lays every tile out in the 128-byte TMA swizzle (layout swizzled), got " + layout_name(c.layout);
      case TileFault::FixedKnobs: return name + " always reads Q from shared memory (no /qsmem knob)";
      case TileFault::PingPong:
        return name + " /pp passes turns between consumer warpgroups: needs Br 128 or 192 (2 or 3), Br=" +
               std::to_string(c.Br) + " has one";
      case TileFault::SharedMemory: return name + " " + c.name() + " " + smem_words(smem_bytes(c));
      default: return fault_words(f, c, kVariant);
    }
  }

  static constexpr const auto& kCompiled = Wgmma16Compiled::kList;

  // ---- what the kernel template reads ------------------------------------------------------------
  template <int D, int BR, int BC, Layout L, int DT, int STAGES, int QSMEM, int OVERLAP, int PINGPONG, int PERSISTENT>
  struct Tile {
    static constexpr TileConfig kConfig{kVariant,  D,          BR,           BC,            L, static_cast<DType>(DT),
                                        STAGES,    QSMEM != 0, OVERLAP != 0, PINGPONG != 0, PERSISTENT != 0};
    static constexpr int kQBuffers = q_buffers(kConfig);
    static constexpr int kConsumers = consumers(kConfig);
    static constexpr int kThreads = threads(kConfig);
    static constexpr int kSmemBytes = smem_bytes(kConfig);
    static_assert(fault(kConfig) == TileFault::None, "wgmma16 cannot build this tile (rejection() says why)");
  };

  // ---- model geometry ------------------------------------------------------------------------------
  static KernelGeometry geometry(const TileConfig& c);
};

static_assert(first_refused_compiled<Wgmma16>() == -1, "Wgmma16::kCompiled holds a tile rejection() refuses");
static_assert(Wgmma16::consumers({Variant::Wgmma16, 64, 192}) == Wgmma16::kMaxConsumers &&
                  Wgmma16::turn_barrier(Wgmma16::kMaxConsumers - 1) < 16,
              "one epilogue and one turn barrier per consumer must fit the 16 named barriers");

inline KernelGeometry Wgmma16::geometry(const TileConfig& c) {
  const int nthreads = threads(c), nconsumers = consumers(c), d = c.d, bc = c.Bc;
  KernelGeometry g;
  g.config = c;
  g.threads_per_block = nthreads;
  g.smem_bytes = smem_bytes(c);
  g.registers_estimate = registers_estimate(c);

  // Shared-memory instructions of the LSU: only the epilogue's O pair stores (TMA writes and wgmma
  // reads go through the async proxy, not the LSU wavefronts the bank model counts). Consumer warp
  // w (of the block's consumer warps, 4 per warpgroup) stores, per n8 block j of O and half h, the
  // pair (row 16 (w % 4) + g + 8 h, columns 8 j + 2 t) of its warpgroup's 64 rows: instance
  // i = j * 2 + h. The 128-byte swizzle puts the 8 rows g in 8 different 16-byte chunks: no conflict.
  const int o_blocks = d / 8;
  g.smem_sites.push_back(make_site(
      "O pair store (epilogue)", SmemOp::Store, 4, SiteScope::PerBlock, 4 * nconsumers, 2LL * o_blocks,
      [=](int warp, int lane, long long i) -> long long {
        const int wg = warp / 4, wi = warp % 4, j = static_cast<int>(i / 2), h = static_cast<int>(i % 2);
        const int row = 16 * wi + lane / 4 + 8 * h, col = 8 * j + 2 * (lane % 4);
        return q_base(c) + element_byte(c.d, c.Br, kRowsPerConsumer * wg + row, col);
      }));

  // Counts of one full K/V tile per block. The tensor pipe's work is counted as mma16 instructions
  // of the same FLOPs (m16n8k16, 4096 FLOPs each), so the model's bf16/fp16 tensor rate applies;
  // the wgmma instructions themselves (warpgroup-level) in `wgmma`.
  const double t = kWarpgroupThreads * nconsumers;  // consumer threads: only they do the math
  TileInstructionCounts& n = g.per_kv_tile;
  n.mma16 = 4.0 * c.Br * bc * d / kMmaM16n8k16Flops;
  n.wgmma = double(nconsumers) * wgmmas_per_consumer_tile(c);
  // Per consumer thread: Bc / 2 scores of two rows.
  n.exp = t * (bc / 2.0 + 2.0);         // exp2 per score, alpha per row
  n.ffma = t * (bc / 2.0 + 2.0);        // the exp2 argument per score, l = l alpha + sum per row
  n.fp32_other = t * (bc + d / 2.0 + 6.0);  // row max and sum, O *= alpha (d / 2), 3 per row
  n.shuffles = t * 4.0;                 // row max: xor 1, 2 for each of the two rows
  n.cvt = t * (bc / 4.0);               // P packed in pairs
  // One mbarrier wait (stage full) per consumer per tile, and the ping-pong's turn barriers.
  n.barriers = 1 + turns_per_tile(c);

  set_block_traffic(g, c);
  g.kv_loads_overlap_compute = true;  // stages - 1 tiles in flight while one computes
  // Consumer warpgroups skip the tiles past their causal diagonal, but the block also holds the
  // producer warpgroup, which the model's per-warp skipping (rows_per_warp x warps = Br) cannot
  // express yet: counted as if every warp visited every tile.
  g.warps_skip_masked_tiles = false;
  // The mask (kernels/wgmma16.cuh, masked()): per score of a warpgroup-tile that crosses its
  // diagonal or kv_len, key >= kv_len and key > row + offset (two ISETP) and the select of -inf
  // (FSEL), as mma16's; the model counts the warpgroup-tiles (model/async_pipeline.cpp).
  g.mask_instructions_per_score = 3.0;
  g.causal_heavy_first = kCausalHeavyFirst;
  return g;
}

}  // namespace flashtune::traits
