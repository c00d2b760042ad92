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

struct Counts {
  TileVisits tiles;
  double nominal_flops = 0;   // 4 B N^2 d, halved when causal (the reporting convention)
  double useful_flops = 0;    // 4 d per unmasked (query, key) pair: 4 B N^2 d, or 2 B N (N+1) d causal
  double executed_flops = 0;  // 4 Br Bc d per visited tile: includes masked and tail work
  // Thread-level instruction counts (a full warp instruction counts 32).
  // exp: exponentials plus the epilogue's reciprocals (MUFU, the XU pipe); ffma includes the
  // epilogue's (GeometryAnalysis::epilogue_*_per_row, once per query row < N).
  double ffma = 0, fp32_other = 0, exp = 0, shuffles = 0;
  double barriers = 0;        // __syncthreads, block-level
  double smem_requests = 0, smem_wavefronts = 0, smem_ideal_wavefronts = 0;  // all shared-memory ops
  // The same by op, as Nsight Compute splits them (..._mem_shared_op_ld / _op_st / _op_ldgsts):
  // loads (LDS), stores from registers (STS) and cp.async copies (LDGSTS). All three occupy the
  // shared-memory pipe, so the time uses the totals above; compare op_st with store_* alone.
  // *_ideal: the conflict-free wavefronts (phases served), so wavefronts - ideal is what ncu's
  // l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st} count (docs/counters.md).
  double smem_load_requests = 0, smem_load_wavefronts = 0, smem_load_ideal = 0;
  double smem_store_requests = 0, smem_store_wavefronts = 0, smem_store_ideal = 0;
  double smem_async_copy_requests = 0, smem_async_copy_wavefronts = 0, smem_async_copy_ideal = 0;
  double warp_instructions = 0;  // counted ones: (FP32 + exp + shuffles) / 32 + shared requests
  // Bytes between the SMs and L2: Q read once, O written once, K and V once per visited tile.
  double l2_q_bytes = 0, l2_kv_bytes = 0, l2_o_bytes = 0;
  double l2_bytes() const { return l2_q_bytes + l2_kv_bytes + l2_o_bytes; }
  double dram_compulsory_bytes = 0;  // Q + K + V read once, O written once: 16 B N d bytes
  double fp32_instructions() const { return ffma + fp32_other; }
};

Counts count_work(const Workload& w, const GeometryAnalysis& g);

}  // namespace flashtune::model
