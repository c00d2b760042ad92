// What a kernel instantiation looks like to the model: threads, shared-memory layout and the byte
// addresses every lane touches at every shared-memory access site, plus per-tile instruction
// counts. Each variant's traits header fills one of these from the same constants its kernel
// template is instantiated with, so the model never holds a hand-copied description.
// Plain C++17 (no CUDA).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tile_config.h"

namespace flashtune {

// Store: an STS from registers. AsyncCopy: a cp.async global -> shared copy (SASS LDGSTS), which
// writes shared memory without a register round trip. Nsight Compute counts the two apart: an
// LDGSTS's shared-memory wavefronts are l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts, not
// ..._op_st (H200, regtile_2d on t10: op_st = 2.0 M = the P and softmax-state stores alone).
enum class SmemOp { Load, Store, AsyncCopy };

constexpr const char* smem_op_name(SmemOp op) {
  switch (op) {
    case SmemOp::Load: return "load";
    case SmemOp::Store: return "store";
    case SmemOp::AsyncCopy: return "async_copy";
  }
  return "?";
}

// How often a site executes: once per block (loading the Q tile, say) or once per K/V tile
// iteration of the main loop (loading K, reading S, ...).
enum class SiteScope { PerBlock, PerKvTile };

// One shared-memory instruction in the kernel source (possibly inside unrolled loops).
struct SmemSite {
  std::string name;         // e.g. "K tile store", "K read in QK^T"
  SmemOp op = SmemOp::Load;
  int bytes_per_lane = 4;   // 4 (float), 8 (float2) or 16 (float4)
  SiteScope scope = SiteScope::PerKvTile;
  int warps = 1;            // warps of the block that execute it
  long long instances = 1;  // warp-level executions per warp per scope unit (unrolled loop trips)
  // Byte offset in the block's dynamic shared memory read or written by `lane` of `warp` at
  // instance `i` (0 <= i < instances); a negative value means the lane is inactive there.
  std::function<long long(int warp, int lane, long long i)> byte_address;
  // cp.async sites (SmemOp::AsyncCopy): the byte offset the lane copies from, within the global
  // tile it reads (rows 32-byte aligned, as every layout of Q, K and V keeps them for d % 8 == 0).
  // Where a destination splits a 32-byte global sector across two 32-byte shared sectors, the
  // copy fetches that sector once per half (model/geometry_analysis.h, copy sectors). Empty: not
  // simulated.
  std::function<long long(int warp, int lane, long long i)> global_byte_address;
};

// Per-block instruction counts of one full (unmasked) K/V tile iteration, thread-level
// (a warp instruction with 32 active lanes counts 32). Derived from the kernel's loop structure.
struct TileInstructionCounts {
  double ffma = 0;        // fused multiply-adds (QK^T and PV dot products, rescaling)
  double fp32_other = 0;  // other FP32 instructions: max, add, mul, compare
  double exp = 0;         // exponentials (SFU / XU pipe)
  double shuffles = 0;    // warp shuffles
  double barriers = 0;    // __syncthreads per block (count, not thread-level)
  // Tensor-core variants: mma.sync m16n8k8 TF32 instructions per block, warp-level (each is one
  // warp instruction of 2 x 16 x 8 x 8 = 2048 FLOPs; 3xTF32 issues three per product), and the
  // integer logic instructions (thread-level) that mask the TF32 high part off each operand.
  double mma = 0;
  double int_logic = 0;
  // 16-bit tensor-core variants (mma16): mma.sync m16n8k16 bf16/fp16 instructions with fp32
  // accumulate per block, warp-level (each 2 x 16 x 8 x 16 = 4096 FLOPs), and the thread-level
  // conversions that pack two fp32 values into one 16-bit pair (cvt.rn.bf16x2.f32 / .f16x2: P before
  // P V, O before its store).
  double mma16 = 0;
  double cvt = 0;
  // Hopper's warpgroup-level wgmma.mma_async instructions (wgmma16), one per warpgroup; their
  // FLOPs are also counted in mma16 (as m16n8k16 equivalents) for the tensor pipe's time.
  double wgmma = 0;
};

// FLOPs of one mma.sync m16n8k8 warp instruction.
inline constexpr double kMmaM16n8k8Flops = 2.0 * 16 * 8 * 8;
// FLOPs of one mma.sync m16n8k16 (bf16 or fp16) warp instruction.
inline constexpr double kMmaM16n8k16Flops = 2.0 * 16 * 8 * 16;

struct KernelGeometry {
  TileConfig config;
  int threads_per_block = 0;
  int smem_bytes = 0;              // dynamic shared memory per block
  int registers_estimate = 0;      // per thread; the compiled value wins when known (profile)
  std::vector<SmemSite> smem_sites;
  TileInstructionCounts per_kv_tile;
  // Global-memory bytes a block moves outside the K/V loop (Q tile load, O tile store) for a full
  // tile, and per K/V iteration (K and V tiles). Tails are masked, so partial tiles move less.
  long long q_bytes_per_block = 0;
  long long o_bytes_per_block = 0;
  long long kv_bytes_per_kv_tile = 0;
  // True when the K/V loads of an iteration are in flight while the block computes (cp.async
  // issued a half-iteration ahead): the L2 latency is then hidden and only the barriers and the
  // wait stay exposed. False: every iteration waits for its loads before computing.
  bool kv_loads_overlap_compute = false;
  // True when each warp owns rows_per_warp consecutive query rows and skips the work of a K/V
  // tile whose first key is past all of them (causal): per_kv_tile then counts a tile every warp
  // computes, and a diagonal tile costs only the warps that still have unmasked keys in it.
  bool warps_skip_masked_tiles = false;
  int rows_per_warp = 0;
  // Thread instructions per score a warp runs on a (warp, K/V tile) pair that needs the mask: the
  // tile crosses the warp's causal diagonal (a key past its first row's) or holds keys past
  // kv_len (the tail). The kernel tests the two conditions per score only on such pairs (a branch
  // per tile), so their cost is per masked pair, not per tile: 0 where the traits do not count it.
  // Needs warps_skip_masked_tiles (the per-warp diagonal, model/counts.h: masked_warp_tiles).
  double mask_instructions_per_score = 0;
  // The traits' kCausalHeavyFirst: a causal grid's query tiles run heavy to light
  // (kernels/attention_params.cuh block_tensors) on a batch-fastest grid (traits::grid_order), so
  // the longest blocks of every entry start first and the short ones fill the tail; false: light
  // to heavy, one entry after another.
  bool causal_heavy_first = false;
};

}  // namespace flashtune
