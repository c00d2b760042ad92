// What the model needs from one kernel instantiation, computed once per config (it does not
// depend on the workload): the shared-memory sites' requests and wavefronts from simulating every
// lane's address, plus the geometry's per-tile counts. Single predictions then cost O(1).
#pragma once

#include <string>
#include <vector>

#include "kernels/traits/kernel_geometry.h"

namespace flashtune::model {

struct SiteAnalysis {
  std::string name;
  SmemOp op = SmemOp::Load;
  SiteScope scope = SiteScope::PerKvTile;
  int bytes_per_lane = 4;
  // Block-wide totals per scope unit (one block, or one K/V tile of one block).
  double requests = 0;    // warp-level instructions with at least one active lane
  double wavefronts = 0;  // simulated
  double ideal = 0;       // conflict-free minimum
  double conflict_degree() const { return ideal > 0 ? wavefronts / ideal : 1.0; }
  // cp.async sites with a global address: 32-byte global sectors the copies read (each once),
  // and the sectors fetched, one per (global sector, shared 32-byte sector) pair of a warp
  // instruction: a destination that splits a global sector across two shared sectors fetches it
  // twice. Measured on the H200 (l1tex__m_xbar2l1tex_read_sectors, docs/counters.md): K rows
  // padded by 16 bytes move 1.5x their sectors from L2 to the SM; swizzled and 32-byte padded rows 1x.
  double copy_sectors = 0, copy_ideal_sectors = 0;
};

struct GeometryAnalysis {
  TileConfig config;
  int threads_per_block = 0;
  int warps_per_block = 0;
  int smem_bytes = 0;
  int registers_estimate = 0;
  TileInstructionCounts per_kv_tile;
  // Thread-level instructions once per query row < N, in the epilogue (O / l): set for the
  // shipped kernels by apply_compiled_instruction_correction() (model/compiled_instructions.h).
  double epilogue_ffma_per_row = 0, epilogue_mufu_per_row = 0;
  // Warp instructions the compiled code runs beyond the traits' counts (address arithmetic, loop
  // control, prologue and epilogue): per computing (warp, K/V tile) pair and per warp of a block.
  // Set for the shipped kernels from the measured table (model/compiled_instruction_table.h).
  double extra_warp_instructions_per_warp_tile = 0, extra_warp_instructions_per_warp_block = 0;
  long long q_bytes_per_block = 0, o_bytes_per_block = 0, kv_bytes_per_kv_tile = 0;
  bool kv_loads_overlap_compute = false;  // KernelGeometry's: the L2 latency per iteration is hidden
  // KernelGeometry's: under causal masking a warp (rows_per_warp consecutive query rows) skips a
  // K/V tile whose first key is past its last row; the per-tile compute counts and the shared
  // loads and stores then count per warp and tile (model/counts.h, warp_tile_visits).
  bool warps_skip_masked_tiles = false;
  int rows_per_warp = 0;
  double mask_instructions_per_score = 0;  // KernelGeometry's: per score of a masked (warp, tile) pair
  bool causal_heavy_first = false;  // KernelGeometry's: launch order of causal query tiles
  std::vector<SiteAnalysis> sites;
  // Sums over the sites of each scope.
  double requests_per_kv_tile = 0, wavefronts_per_kv_tile = 0, ideal_per_kv_tile = 0;
  double requests_per_block = 0, wavefronts_per_block = 0, ideal_per_block = 0;
  // The cp.async sites' extra sector fetches (copy_sectors - copy_ideal_sectors), per scope.
  double split_copy_sectors_per_kv_tile = 0, split_copy_sectors_per_block = 0;
};

// Simulates every site (all warps, all instances, 32 lanes). Throws std::logic_error naming the
// config and site when the geometry is inconsistent (address outside the block's shared memory,
// bad width, misaligned address).
GeometryAnalysis analyse_geometry(const KernelGeometry& g);

}  // namespace flashtune::model
