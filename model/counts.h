// Exact work counts of one (workload, config): which K/V tiles each query tile visits (causal
// blocks stop at the diagonal), FLOPs, instructions, shared-memory wavefronts and the global
// bytes that reach L2. Totals over the whole grid, closed form (O(log N) per call).
#pragma once

#include "kernels/traits/tile_config.h"
#include "model/geometry_analysis.h"

namespace flashtune::model {

struct TileVisits {
  long long q_tiles = 0;            // Tr = ceil(N / Br)
  long long kv_tiles = 0;           // Tc = ceil(N / Bc)
  long long blocks = 0;             // Tr x B
  long long visits = 0;             // (block, K/V tile) pairs executed, whole grid
  long long last_tile_visits = 0;   // of which the last K/V tile (partial when Bc does not divide N)
  long long max_tiles_per_block = 0;
  double mean_tiles_per_block = 0;  // visits / blocks
};

// Query tile i visits K/V tiles j < Tc with j*Bc <= (i+1)*Br - 1 when causal, all Tc otherwise.
TileVisits count_tile_visits(const Workload& w, int Br, int Bc);

// The K/V tiles causal query tile i (0-based) visits: its last row (i + 1) Br - 1 sees keys up to
// that plus `offset` (keys - N, bottom-right causal), capped at the kv_tiles there are. The one
// formula of the tile counts, the block schedule and the first-touch shares.
inline long long causal_kv_tiles(long long i, long long Br, long long Bc, long long kv_tiles, long long offset) {
  const long long seen = ((i + 1) * Br - 1 + offset) / Bc + 1;
  return seen < kv_tiles ? seen : kv_tiles;
}

// (warp, K/V tile) pairs that compute, whole grid, for a kernel whose warps each own
// rows_per_warp consecutive query rows (Br = warps x rows_per_warp) and skip a visited tile whose
// first key is past their last row (KernelGeometry::warps_skip_masked_tiles): warp w of query
// tile i computes tile j < Tc when j*Bc <= i*Br + (w+1)*rows_per_warp - 1 (causal); every warp
// computes every visited tile otherwise. Rows past N compute like the others (no N test in the
// kernel's skip), so this depends on N only through Tr and Tc. Closed form, O(warps log N).
long long count_warp_tile_visits(const Workload& w, int Br, int Bc, int rows_per_warp);

// Of count_warp_tile_visits, the pairs whose tile needs the mask: warp w of query tile i on tile j
// is unmasked when j*Bc + Bc - 1 <= i*Br + w*rows_per_warp + off (its first row sees every key
// of the tile; causal) and j*Bc + Bc <= keys (no key past the end). Closed form, O(warps log N).
long long count_masked_warp_tiles(const Workload& w, int Br, int Bc, int rows_per_warp);

struct Counts {
  TileVisits tiles;
  double nominal_flops = 0;   // 4 B N^2 d, halved when causal (the reporting convention)
  double useful_flops = 0;    // 4 d per unmasked (query, key) pair: 4 B N keys d, or 2 B N (N+1+2 off) d causal
  // 4 Br Bc d per visited tile (per computing warp's share where warps skip masked tiles):
  // includes masked and tail work.
  double executed_flops = 0;
  // Thread-level instruction counts (a full warp instruction counts 32).
  // exp: exponentials plus the epilogue's reciprocals (MUFU, the XU pipe); ffma includes the
  // epilogue's (GeometryAnalysis::epilogue_*_per_row, once per query row < N).
  double ffma = 0, fp32_other = 0, exp = 0, shuffles = 0;
  // Integer logic (thread-level): the 3xTF32 split's masks. An issue slot each (docs/model.md).
  double int_logic = 0;
  // mma.sync m16n8k8 TF32 instructions, warp-level (kMmaM16n8k8Flops each; sm__inst_executed_
  // pipe_tensor_op_hmma.sum counts the same).
  double mma = 0;
  // mma.sync m16n8k16 bf16/fp16 instructions, warp-level (kMmaM16n8k16Flops each; the same HMMA
  // counter counts them), and the conversions that pack two fp32 values into a 16-bit pair
  // (thread-level; F2FP, on the FP32 pipe's issue slots).
  double mma16 = 0, cvt = 0;
  // wgmma.mma_async instructions, warpgroup-level (wgmma16); their FLOPs are in mma16 (as
  // m16n8k16 equivalents, for the tensor time), their issue is 4 warp instructions each (one per
  // warp of the warpgroup), which replaces mma16 in warp_instructions.
  double wgmma = 0;
  // (warp, K/V tile) pairs that run the tile's compute: warps x visits, less the tiles causal
  // masking lets a warp skip (GeometryAnalysis::warps_skip_masked_tiles). The per-tile compute
  // counts scale with it; barriers and cp.async tile copies (the whole block's) with visits.
  double warp_tile_visits = 0;
  // Of those, the pairs that run the mask (KernelGeometry::mask_instructions_per_score): the tile
  // crosses the warp's causal diagonal (a key past its first row's) or holds keys past kv_len.
  // 0 for a kernel whose warps do not skip masked tiles (no per-warp count).
  double masked_warp_tiles = 0;
  // Thread instructions of the mask: masked_warp_tiles x rows_per_warp x Bc scores x the traits'
  // per-score count (in warp_instructions).
  double mask_instructions = 0;
  double barriers = 0;        // __syncthreads, block-level
  double smem_requests = 0, smem_wavefronts = 0, smem_ideal_wavefronts = 0;  // all shared-memory ops
  // The same by op, as Nsight Compute splits them (..._mem_shared_op_ld / _op_st / _op_ldgsts):
  // loads (LDS), stores from registers (STS) and cp.async copies (LDGSTS); compare op_st with
  // store_* alone. The time's shared term is shared_pipe_wavefronts below, not these totals.
  // *_ideal: the conflict-free wavefronts (phases served), so wavefronts - ideal is what ncu's
  // l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st} count (docs/counters.md).
  double smem_load_requests = 0, smem_load_wavefronts = 0, smem_load_ideal = 0;
  double smem_store_requests = 0, smem_store_wavefronts = 0, smem_store_ideal = 0;
  double smem_async_copy_requests = 0, smem_async_copy_wavefronts = 0, smem_async_copy_ideal = 0;
  // What the shared-memory data pipe serves, one wavefront a clock (the time's shared term), as
  // ncu counts it (l1tex__data_pipe_lsu_wavefronts_mem_shared, docs/counters.md): the loads' and
  // stores' wavefronts and one per warp shuffle (SHFL crosses lanes on this pipe: exact on
  // warp_groups, H200). cp.async copies are not in it: their data fills shared memory off this
  // pipe (ncu counts those wavefronts apart, ..._op_ldgsts). Requests likewise, for its saturation.
  double shared_pipe_requests = 0, shared_pipe_wavefronts = 0;
  // Warp instructions: the traits' counts, (FP32 + exp + shuffles + integer logic) / 32 + shared
  // requests + mma, plus the compiled code's extra ones (extra_warp_instructions, from
  // GeometryAnalysis::extra_warp_instructions_per_*).
  double warp_instructions = 0, extra_warp_instructions = 0;
  double mma_flops() const { return mma * kMmaM16n8k8Flops; }        // TF32
  double mma16_flops() const { return mma16 * kMmaM16n8k16Flops; }  // bf16 / fp16
  // Bytes between the SMs and L2: Q read once, O written once, K and V once per visited tile.
  double l2_q_bytes = 0, l2_kv_bytes = 0, l2_o_bytes = 0;
  // Sectors fetched again where a cp.async destination splits a global sector (geometry_analysis.h):
  // L2 hits that cross to the SM a second time; no DRAM traffic.
  double l2_split_copy_bytes = 0;
  double l2_bytes() const { return l2_q_bytes + l2_kv_bytes + l2_o_bytes + l2_split_copy_bytes; }
  // Q and O once per entry, K and V once per K/V head: (2 B N + 2 (B / kv_group) keys) d elements.
  double dram_compulsory_bytes = 0;
  double fp32_instructions() const { return ffma + fp32_other + cvt; }
};

Counts count_work(const Workload& w, const GeometryAnalysis& g);

}  // namespace flashtune::model
