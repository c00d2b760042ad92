// Traits of the split-KV decode family (flash-decoding): few query rows against a long K/V cache,
// the query heads that share a K/V head packed into one block's rows, the keys split across blocks
// and the partial softmax results combined by a second, small kernel. Plain C++17, no CUDA: the
// kernel template (kernels/decode.cuh) and the model (model/decode_model.h) read the same lines.
//
// Shape of the kernel:
//   rows     the kv_group query heads of one K/V head x Nq query rows each are the packed rows
//            r = g * Nq + i (query head kv_head * kv_group + g, query row i); a block takes Br of
//            them (a row tile), so K/V is read once per Br packed rows instead of once per head.
//   splits   the keys of one K/V head are cut into `splits` chunks of whole block tiles
//            (kWarps x Bc keys); grid = (row tiles x splits, batch x K/V heads), row tile fastest
//            so the row tiles of one chunk run together and share its K/V through L2.
//   warps    each of the kWarps warps streams its own tiles of Bc keys (tiles w, w + kWarps, ...
//            of the chunk) through its own ring of `stages` shared buffers filled by cp.async
//            (16-byte chunks, coalesced rows, stages - 1 tiles in flight): no block barrier in the
//            loop. At the end the warps' (max, sum, O) are merged in shared memory.
//   math     bf16 / fp16: mma.sync m16n8k16 with fp32 accumulate, Br = 16 x m16 tiles, the padded
//            rows cost tensor work the memory-bound loop has to spare (Q K^T and P V of a 32-key
//            tile are 64 mma against ~1000 cycles of its 16 KB at the SM's share of DRAM).
//            fp32: SIMT, lane = key for Q K^T (Bc = 32: one lane per key; Bc = 16: two lanes per key,
//            each half the chunks, one shuffle), lane = 4 (d = 128) or 2 columns of O for P V, P
//            through shared memory; exact fp32 products (no TF32), fp32 softmax.
//   combine  with splits > 1 each block writes its rows' (max, sum, unnormalised O) in fp32 to a
//            workspace, and decode_combine_kernel merges the splits of each row and writes O in the
//            dtype; with one split the block normalises and writes O itself. On Hopper (sm_90) the
//            splits of a row tile run as one thread-block cluster instead (up to 16 of them, split
//            fastest in the grid): each block leaves its partial in its own shared memory and the
//            cluster's blocks merge them through distributed shared memory after a cluster barrier,
//            with no workspace, no second kernel and no wait for the whole grid (cluster_combine).
//
// Shared memory (bytes): Q rows [Br, d] (dtype for ldmatrix, fp32 pre-scaled for SIMT), then per
// warp `stages` x (K tile, V tile) of [Bc, d] dtype rows whose 16-byte chunk c of row r sits at
// chunk c ^ (r % 8) (conflict-free: every 8 lanes reading chunk c of 8 consecutive rows, and every
// ldmatrix phase, touch 8 different 16-byte bank groups), then (fp32) the warps' P [Bc, Br].
// The epilogue reuses the rings for the warps' partial O [Br, d] and (max, sum) [Br, 2].
#pragma once

#include <optional>
#include <string>

#include "kernels/traits/kernel_geometry.h"
#include "kernels/traits/tile_config.h"
#include "kernels/traits/traits_common.h"

namespace flashtune::traits {

// What the library compiles: d in {64, 128}, per dtype the row tiles of its path and two key tiles
// or depths. fp32 Br 1 (one query row per K/V head: multi-head decode), 4 (grouped heads or a few
// rows), 16 (up to 16 packed rows); 16-bit Br 16 (one m16 tile: up to 16 packed rows), and 32 at
// d = 64 (Br 64 there spills: 128 O and 64 score registers; Br 32 at d = 128 spilled 4 bytes and
// ran 2-5% behind Br 16 on every H100 shape of docs/results/h100-decode-bench-bf16-run1.jsonl).
struct DecodeCompiled {
  static constexpr Variant V = Variant::Decode;
  static constexpr Layout S = Layout::Swizzled;
  static constexpr DType F = DType::Fp32, B = DType::Bf16, H = DType::Fp16;
  static constexpr TileConfig kList[] = {
      {V, 64, 16, 32, S, B, 3, false},  {V, 64, 32, 32, S, B, 2, false},  {V, 64, 16, 32, S, H, 3, false},
      {V, 64, 1, 32, S, F, 2, false},   {V, 64, 4, 32, S, F, 2, false},   {V, 64, 16, 32, S, F, 2, false},
      {V, 128, 16, 32, S, B, 2, false}, {V, 128, 16, 32, S, B, 3, false},
      {V, 128, 16, 32, S, H, 2, false}, {V, 128, 1, 16, S, F, 2, false},  {V, 128, 4, 16, S, F, 2, false},
      {V, 128, 16, 16, S, F, 2, false},
  };
};

struct Decode {
  static constexpr Variant kVariant = Variant::Decode;
  static constexpr bool kCausalHeavyFirst = false;
  // The most query rows per head the family serves: beyond, the rows stop being few and the tiled
  // families (prefill) reuse each K/V tile over more rows per block than this one packs.
  static constexpr int kMaxQueryRows = 64;

  // ---- thread grid ------------------------------------------------------------------------
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kChunkBytes = 16;  // one cp.async, one ldmatrix row
  static constexpr bool uses_mma(DType t) { return t != DType::Fp32; }
  static constexpr int chunks(int d, DType t) { return d * dtype_bytes(t) / kChunkBytes; }
  // SIMT path: lanes per key in Q K^T (Bc = 32: 1, Bc = 16: 2) and O columns per lane in P V.
  static constexpr int lanes_per_key(int bc) { return 32 / bc; }
  static constexpr int o_cols_per_lane(int d) { return d / 32; }
  // 16-byte copies (cp.async) one lane issues per tile of Bc keys: the warp copies its K and V tiles
  // in whole trips of 32 chunks (bf16 d = 128 or fp32 at Bc x d = 2048: 32; bf16 d = 64: 16).
  static constexpr int copies_per_lane_tile(const TileConfig& c) { return 2 * c.Bc * chunks(c.d, c.dtype) / 32; }
  // SIMT path: shared-memory loads one lane issues per tile of Bc keys (kernels/decode.cuh,
  // SimtMath::tile): its key's chunks of K, for each of them every row's same chunk of Q (16-byte
  // loads), then per key of the tile its chunk of V and the key's P of every row (four rows per
  // 16-byte load where Br is a multiple of 4). At Br = 16 that is 352 loads beside 2048 FFMA per
  // lane and tile, instructions the FP32 counts miss.
  static constexpr int simt_shared_loads_per_lane_tile(const TileConfig& c) {
    const int cpl = chunks(c.d, c.dtype) / lanes_per_key(c.Bc);
    const int p_loads = c.Br % 4 == 0 ? c.Br / 4 : c.Br;
    return cpl * (1 + c.Br) + c.Bc * (1 + p_loads);
  }

  // ---- shared-memory layout (byte offsets) -------------------------------------------------
  static constexpr int row_bytes(int d, DType t) { return d * dtype_bytes(t); }
  static constexpr int swizzled_chunk(int row, int chunk) { return chunk ^ (row & 7); }
  static constexpr int chunk_byte(int d, DType t, int row, int chunk) {
    return row * row_bytes(d, t) + kChunkBytes * swizzled_chunk(row, chunk);
  }
  static constexpr int q_bytes(const TileConfig& c) { return c.Br * c.d * (uses_mma(c.dtype) ? dtype_bytes(c.dtype) : 4); }
  static constexpr int kv_tile_bytes(const TileConfig& c) { return c.Bc * row_bytes(c.d, c.dtype); }
  static constexpr int stage_bytes(const TileConfig& c) { return 2 * kv_tile_bytes(c); }
  static constexpr int ring_bytes(const TileConfig& c) { return c.stages * stage_bytes(c); }
  static constexpr int p_bytes(const TileConfig& c) { return uses_mma(c.dtype) ? 0 : c.Bc * c.Br * 4; }
  static constexpr int ring_base(const TileConfig& c, int warp) { return q_bytes(c) + warp * ring_bytes(c); }
  static constexpr int k_base(const TileConfig& c, int warp, int stage) { return ring_base(c, warp) + stage * stage_bytes(c); }
  static constexpr int v_base(const TileConfig& c, int warp, int stage) { return k_base(c, warp, stage) + kv_tile_bytes(c); }
  static constexpr int p_base(const TileConfig& c, int warp) { return q_bytes(c) + kWarps * ring_bytes(c) + warp * p_bytes(c); }
  // The epilogue's per-warp partials, after Q: O [Br, d] fp32 of every warp, then (max, sum) pairs.
  static constexpr int merge_o_base(const TileConfig& c, int warp) { return q_bytes(c) + warp * c.Br * c.d * 4; }
  static constexpr int merge_ml_base(const TileConfig& c, int warp) {
    return q_bytes(c) + kWarps * c.Br * c.d * 4 + warp * c.Br * 8;
  }
  static constexpr int loop_bytes(const TileConfig& c) { return kWarps * (ring_bytes(c) + p_bytes(c)); }
  static constexpr int merge_bytes(const TileConfig& c) { return kWarps * c.Br * (c.d + 2) * 4; }
  // The cluster combine's block partial: O [Br, d] fp32 over warp 0's merge slot (each element
  // written by the thread that merged it), and (max, sum) per row after the merge area.
  static constexpr int cluster_o_base(const TileConfig& c) { return merge_o_base(c, 0); }
  static constexpr int cluster_ml_base(const TileConfig& c) { return q_bytes(c) + merge_bytes(c); }
  static constexpr int epilogue_bytes(const TileConfig& c) { return merge_bytes(c) + c.Br * 8; }
  static constexpr int smem_bytes(const TileConfig& c) {
    return q_bytes(c) + (loop_bytes(c) > epilogue_bytes(c) ? loop_bytes(c) : epilogue_bytes(c));
  }

  // ---- registers ---------------------------------------------------------------------------
  // O accumulators per lane: mma Br d / 32 (C fragments), SIMT Br d / 32 (Br rows x d / 32 columns).
  static constexpr int o_registers(const TileConfig& c) { return c.Br * c.d / 32; }
  // Per thread, for the model's occupancy (a profile's compiled value wins), fitted to ptxas -v on
  // sm_90 (nvcc 13.0, tests/data/ptxas_registers_sm90.json; every decode instance within 10%):
  //   mma   O + the scores (Br / 16 m16 tiles x Bc / 2) + 80 of Q, K and V fragments, the softmax
  //         state and the ring's addresses;
  //   SIMT  O + 4 per 16-byte K chunk a lane reads in Q K^T (the compiler issues them all before
  //         the FFMAs) + 12 per row for the first four rows (scores, max, sum, P) and 2 per row
  //         beyond + 8, and 16 more at Bc = 32 (twice the keys per P V loop).
  static constexpr int registers_estimate(const TileConfig& c) {
    int r = 0;
    if (uses_mma(c.dtype)) {
      r = o_registers(c) + c.Br / 16 * c.Bc / 2 + 80;
    } else {
      const int cpl = chunks(c.d, c.dtype) / lanes_per_key(c.Bc);
      r = o_registers(c) + 4 * cpl + 12 * (c.Br < 4 ? c.Br : 4) + (c.Br > 4 ? 2 * c.Br : 0) + 8 + (c.Bc == 32 ? 16 : 0);
    }
    return r < 255 ? r : 255;
  }

  // ---- the work of one launch ----------------------------------------------------------------
  // Everything below counts from the workload (packed rows = kv_group x Nq per K/V head).
  struct Shape {
    long long kv_entries = 0;  // batch x K/V heads
    int rows = 0;              // packed rows per K/V head
    int row_tiles = 0;         // ceil(rows / Br)
    long long key_tiles = 0;   // ceil(keys / Bc)
    long long block_tiles = 0; // ceil(key_tiles / kWarps): a block's share of one tile per warp
    int splits = 0;            // chunks actually launched (<= asked: no empty chunk)
    long long chunk_tiles = 0; // key tiles per chunk, a multiple of kWarps
    long long blocks = 0;      // row tiles x splits x kv_entries
  };
  // The most chunks per K/V head (the combine kernel keeps one weight per split in shared memory).
  static constexpr int kMaxSplits = 1024;
  // The most splits merged inside a thread-block cluster: 16 blocks, the largest (non-portable)
  // cluster Hopper schedules.
  static constexpr int kMaxClusterSplits = 16;
  // Whether a launch merges its splits inside their cluster (the launch, kernels/decode_instance.cuh,
  // and the model, model/decode_model.cpp, both ask this): sm_90 or later, 2..16 splits, one block per
  // SM, a grid of at most half the SMs, and the GPU runs as many clusters of `splits` blocks at once
  // (clusters_at_once: a cluster's blocks share a GPC, so GPCs whose SM count the size does not
  // divide leave SMs out) as the grid would fill SMs in whole clusters without them. Else the combine
  // kernel. Half the SMs: where the measured gains are (1-3 us on grids of 16-64 blocks); on the
  // H100 the 96-block grid of 32 K/V heads x 3 splits ran 6 us slower than 128 blocks x 4 splits
  // whichever the combine (a penalty the model does not see), so a cluster at 3 splits made the
  // model pick 3 (+7% on 1 x 32 heads x 8192 keys; docs/results/h100-decode-sweep-bf16-write-combine1round.jsonl).
  // Two blocks per SM are
  // left out because a cluster may then double up on a GPC's SMs while others idle: on the H100 the
  // d = 64 config (two blocks fit) ran 12 heads x 65536 keys at 11 splits 2.5 us slower in clusters.
  // The H100 (132 SMs) runs 32 clusters of 3 at once but not 32 of 4 (docs/kernels.md, "decode").
  static constexpr bool cluster_combine(int compute_capability, int splits, int blocks_per_sm, long long blocks,
                                        long long sms, long long clusters_at_once) {
    if (compute_capability < 90 || splits < 2 || splits > kMaxClusterSplits || blocks_per_sm != 1) return false;
    if (2 * blocks > sms) return false;
    const long long whole = sms - sms % splits;
    return clusters_at_once * splits >= (blocks < whole ? blocks : whole);
  }
  // splits_asked >= 1; the chunk is a whole number of block tiles, so the last chunk may be shorter.
  static constexpr Shape shape(const TileConfig& c, long long batch, int q_heads, int kv_group, long long nq,
                               long long keys, int splits_asked) {
    Shape s;
    s.kv_entries = batch * (q_heads / kv_group);
    s.rows = static_cast<int>(kv_group * nq);
    s.row_tiles = static_cast<int>(ceil_div_ll(s.rows, c.Br));
    s.key_tiles = ceil_div_ll(keys, c.Bc);
    s.block_tiles = ceil_div_ll(s.key_tiles, kWarps);
    long long asked = splits_asked < 1 ? 1 : (splits_asked > s.block_tiles ? s.block_tiles : splits_asked);
    if (asked > kMaxSplits) asked = kMaxSplits;
    s.chunk_tiles = kWarps * ceil_div_ll(s.block_tiles, asked);
    s.splits = static_cast<int>(ceil_div_ll(s.key_tiles, s.chunk_tiles));
    s.blocks = s.kv_entries * s.row_tiles * s.splits;
    return s;
  }
  // The split count before any measurement: as many as keep one block per SM in a single wave
  // (splits = floor(SMs / (K/V entries x row tiles)), at least 1), each chunk at least
  // kMinChunkTiles key tiles per warp. Measured on the H100 (bf16, d = 128, split sweeps in
  // docs/results/h100-decode-bench-bf16-run*.jsonl): one block streams up to ~80 GB/s, so ~40
  // blocks pull 2/3 of DRAM; splitting past one block per SM only adds partials and blocks' fixed
  // costs (1 x 32 heads x 8192 keys: 4 splits 0.062 ms, 8 splits 0.066, 32 splits 0.081), and a
  // second wave of a few blocks costs a whole chunk at one block's rate (8 K/V heads x 65536 keys:
  // 17 splits, 136 blocks, 0.125 ms against 0.112 at 5 and 15). The model (model/decode_model.h)
  // picks by predicted time instead.
  static constexpr int kMinChunkTiles = 8;
  // The shortest chunk the model's split search (model::pick_decode_splits) considers: 4 key tiles
  // per warp. Shorter than kMinChunkTiles, because the read-flushed sweeps put the best split of
  // 8 K/V heads x 4096 keys at 8 (4 tiles per warp) on both GPUs, 15-22% ahead of the 4 that a
  // bound of 8 tiles allowed (docs/results/h{100,200}-decode-bench-bf16-read-*.jsonl); 2 tiles
  // picked the same splits on every sweep.
  static constexpr int kMinSearchChunkTiles = 4;
  static constexpr int default_splits(const TileConfig& c, long long batch, int q_heads, int kv_group, long long nq,
                                      long long keys, long long sms) {
    const Shape one = shape(c, batch, q_heads, kv_group, nq, keys, 1);
    const long long base = one.kv_entries * one.row_tiles;
    const long long most = one.block_tiles / kMinChunkTiles;
    long long want = sms / base;
    if (want > most) want = most;
    if (want < 1) want = 1;
    return static_cast<int>(want > kMaxSplits ? kMaxSplits : want);
  }
  // The K/V stream's L2 policy. Read once, K and V go through L2 with an evict-first policy when
  // the call's K/V bytes are at most kEvictFirstL2Multiple x the L2: the stream then displaces
  // fewer of the lines already in L2, so fewer of the previous work's dirty lines are written back
  // beside the call's reads. Measured on the H100 (bf16, L2 flushed with writes before every
  // sample; docs/results/h100-decode-stream-flags-*.txt): 3.8-5.3 us off 35-67 us calls of
  // 67-134 MB, 2.2 us at 201 MB, none at 268 MB, and 7 us lost at 537 MB (0.189 -> 0.196 ms).
  static constexpr double kEvictFirstL2Multiple = 6.0;
  static constexpr bool evict_first(double kv_bytes, double l2_bytes) {
    return kv_bytes <= kEvictFirstL2Multiple * l2_bytes;
  }
  // Bytes of the workspace a launch writes and the combine reads: per kv entry, padded row and
  // split, (max, sum) and d floats of O.
  static constexpr long long workspace_floats(const TileConfig& c, const Shape& s) {
    return s.splits > 1 ? s.kv_entries * s.row_tiles * c.Br * s.splits * (c.d + 2LL) : 0;
  }

  // ---- what can be built -------------------------------------------------------------------
  static constexpr bool is_rows(const TileConfig& c) {
    // O and the scores of a tile within ~160 registers: ptxas spilled Br 64 x Bc 32 at d = 64 (192).
    if (uses_mma(c.dtype)) return (c.Br == 16 || c.Br == 32 || c.Br == 64) && o_registers(c) + c.Br / 16 * c.Bc / 2 <= 160;
    return (c.Br == 1 || c.Br == 4 || c.Br == 8 || c.Br == 16) && o_registers(c) <= 64;
  }
  static constexpr bool is_cols(const TileConfig& c) {
    if (uses_mma(c.dtype)) return c.Bc == 32 || c.Bc == 64;
    return c.Bc == 16 || c.Bc == 32;
  }
  static constexpr TileFault fault(const TileConfig& c) {
    if (c.variant != kVariant) return TileFault::OtherVariant;
    if (c.d != 64 && c.d != 128) return TileFault::VariantHeadDim;
    if (!is_rows(c)) return TileFault::VariantRows;
    if (!is_cols(c)) return TileFault::VariantCols;
    if (c.stages < 2 || c.stages > 4) return TileFault::VariantStages;
    if (c.q_smem) return TileFault::FixedKnobs;
    if (c.overlap) return TileFault::Overlap;
    if (c.ping_pong) return TileFault::PingPong;
    if (c.persistent) return TileFault::Persistent;
    if (c.layout != Layout::Swizzled) return TileFault::Layout;
    return smem_fault(smem_bytes(c));
  }
  static std::optional<std::string> rejection(const TileConfig& c) {
    const std::string name = variant_name(kVariant);
    switch (const TileFault f = fault(c); f) {
      case TileFault::None: return std::nullopt;
      case TileFault::VariantHeadDim: return name + " needs d in {64, 128}, got d=" + std::to_string(c.d);
      case TileFault::VariantRows:
        return name + (uses_mma(c.dtype) ? " (bf16, fp16) needs Br in {16, 32, 64} with Br d / 32 + Br Bc / 32 <= 160 (registers)"
                                          : " (fp32) needs Br in {1, 4, 8, 16} with Br d <= 2048") +
               ", got Br=" + std::to_string(c.Br);
      case TileFault::VariantCols:
        return name + (uses_mma(c.dtype) ? " (bf16, fp16) needs Bc in {32, 64}" : " (fp32) needs Bc in {16, 32}") +
               ", got Bc=" + std::to_string(c.Bc);
      case TileFault::VariantStages:
        return name + " needs 2 to 4 cp.async stages (/s2, /s3, /s4), got " + std::to_string(c.stages);
      case TileFault::FixedKnobs: return name + " keeps Q in shared memory always (no /qsmem)";
      case TileFault::Layout: return name + " lays its tiles out swizzled only";
      case TileFault::SharedMemory: return name + " " + c.name() + " " + smem_words(smem_bytes(c));
      default: return fault_words(f, c, kVariant);
    }
  }

  static constexpr const auto& kCompiled = DecodeCompiled::kList;

  // ---- what the kernel template reads --------------------------------------------------------
  template <int D, int BR, int BC, int DT, int STAGES>
  struct Tile {
    static constexpr TileConfig kConfig{kVariant, D, BR, BC, Layout::Swizzled, static_cast<DType>(DT), STAGES, false};
    static constexpr bool kMma = uses_mma(kConfig.dtype);
    static constexpr int kElementBytes = dtype_bytes(kConfig.dtype);
    static constexpr int kChunks = chunks(D, kConfig.dtype);
    static constexpr int kSmemBytes = smem_bytes(kConfig);
    static_assert(fault(kConfig) == TileFault::None, "decode cannot build this tile (rejection() says why)");
    static_assert(kChunks >= 8, "the swizzle permutes 8 chunks of a row");
    static_assert((BC * kChunks) % 32 == 0, "a warp copies a K or V tile in whole trips");
  };

  // ---- what the model reads ------------------------------------------------------------------
  // FLOPs the kernel issues for one K/V head's keys over its padded row tiles (Q K^T and P V, 2 per
  // multiply-add): the tensor cores compute the padding rows too.
  static constexpr double issued_flops(const TileConfig& c, const Shape& s, long long keys) {
    return 4.0 * double(s.row_tiles) * c.Br * double(keys) * c.d;
  }
  static KernelGeometry geometry(const TileConfig& c);
};

static_assert(first_refused_compiled<Decode>() == -1, "Decode::kCompiled holds a tile rejection() refuses");

// The per-block view the generic model reads: one tile of Bc keys per warp (kWarps tiles per
// block) as its "K/V tile", the cp.async of K and V, and the instruction counts of the math.
inline KernelGeometry Decode::geometry(const TileConfig& c) {
  KernelGeometry g;
  g.config = c;
  g.threads_per_block = kThreads;
  g.smem_bytes = smem_bytes(c);
  g.registers_estimate = registers_estimate(c);
  const int e = dtype_bytes(c.dtype);
  const double t = kThreads, rows = c.Br, keys = double(kWarps) * c.Bc;
  TileInstructionCounts& n = g.per_kv_tile;
  if (uses_mma(c.dtype)) {
    // Per warp and tile: Q K^T Br/16 x Bc/8 x d/16 mma, P V Br/16 x d/8 x Bc/16.
    n.mma16 = kWarps * 2.0 * (rows / 16) * (c.Bc / 8.0) * (c.d / 16.0);
    n.exp = t * (rows / 16) * (c.Bc / 2.0 + 2.0);
    n.ffma = 0;
    n.fp32_other = t * (rows / 16) * (c.Bc + c.d / 2.0 + 12.0);
    n.shuffles = t * (rows / 16) * 4.0;
    n.cvt = t * (rows / 16) * c.Bc / 4.0;
  } else {
    // Q K^T: Br d multiply-adds per key, P V: Br d per key, over the block's keys.
    n.ffma = 2.0 * rows * c.d * keys;
    n.exp = 2.0 * rows * keys;
    n.fp32_other = rows * keys * 2.0 + rows * c.d * kWarps;
    n.shuffles = t * rows * 5.0;
  }
  n.barriers = 0;
  g.q_bytes_per_block = static_cast<long long>(e) * c.Br * c.d;
  g.o_bytes_per_block = static_cast<long long>(e) * c.Br * c.d;
  g.kv_bytes_per_kv_tile = 2LL * e * c.Bc * c.d * kWarps;
  g.kv_loads_overlap_compute = true;
  return g;
}

}  // namespace flashtune::traits
