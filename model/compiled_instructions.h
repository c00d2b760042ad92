// What the compiled kernels execute beyond the traits' per-K/V-tile instruction counts, read off
// the H200 profile's CUPTI counters (FFMA and XU thread instructions of all 1525 measurements,
// docs/counters.md "Per-term check against the model"):
//  - the epilogue, once per query row < N: 1/l on every lane that holds part of the row (one
//    MUFU.RCP each: 1 lane for row_smem/row_reg, G for warp_groups, 16 for regtile_2d) and, where
//    the division is IEEE (regtile_2d's `1.0f / l`), two Newton FFMAs per lane; the other
//    variants use __fdividef (RCP + FMUL, no FFMA);
//  - warp_groups: ptxas fuses `l *= alpha; l += p` into one FFMA per lane and row and tile;
//  - regtile_2d: l = fmaf(l_old, alpha, sum) runs on lane 0 of each 16-lane row group, not on
//    all 16 (the traits count 16).
// These belong in the traits (kernels/traits/*.h) beside the per-tile counts; they live here
// until the traits are next edited (touching them rebuilds every CUDA kernel). The shipped
// configs get them through ConfigCatalog; analyse_geometry() alone does not apply them.
#pragma once

#include "kernels/traits/tile_config.h"
#include "model/compiled_instruction_table.h"
#include "model/geometry_analysis.h"

namespace flashtune::model {

struct CompiledInstructionCorrection {
  double ffma_per_kv_tile = 0;  // added to the traits' block-wide per-tile FFMA count
  double epilogue_ffma_per_row = 0;
  double epilogue_mufu_per_row = 0;
};

CompiledInstructionCorrection compiled_instruction_correction(const TileConfig& c);

// The warp instructions the traits count per computing (warp, K/V tile) pair: the per-tile
// thread-level counts / 32, the per-tile shared-memory requests and mma.sync, over the block's warps.
double traits_warp_instructions_per_warp_tile(const GeometryAnalysis& a);

// Adds the correction of a.config to a's per-tile FFMA, sets its epilogue counts and its extra
// warp instructions from `table` (the shipped one by default).
void apply_compiled_instruction_correction(GeometryAnalysis& a, const CompiledInstructionTable& table);
void apply_compiled_instruction_correction(GeometryAnalysis& a);

}  // namespace flashtune::model
