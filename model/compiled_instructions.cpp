#include "model/compiled_instructions.h"

#include "kernels/traits/variants.h"

namespace flashtune::model {

CompiledInstructionCorrection compiled_instruction_correction(const TileConfig& c) {
  CompiledInstructionCorrection k;
  switch (c.variant) {
    case Variant::RowSmem:
    case Variant::RowReg:
      k.epilogue_mufu_per_row = 1;  // one thread per row: __fdividef(1, l)
      break;
    case Variant::WarpGroups: {
      const int G = traits::WarpGroups::group_lanes(c);
      // Every lane keeps its share of l for each of its rows: one fused FFMA per lane and row,
      // threads x rows_per_group = Br x G per tile; each lane divides by the row's l at the end.
      k.ffma_per_kv_tile = double(c.Br) * G;
      k.epilogue_mufu_per_row = G;
      break;
    }
    case Variant::RegTile2D: {
      const int lanes = traits::RegTile2D::kGroupLanes;
      // The traits count the l update on all 16 lanes of a row group; lane 0 runs it.
      k.ffma_per_kv_tile = -double(lanes - 1) * c.Br;
      k.epilogue_mufu_per_row = lanes;       // 1.0f / l on every lane of the row group
      k.epilogue_ffma_per_row = 2.0 * lanes;  // rcp.rn: MUFU.RCP and two Newton FFMAs
      break;
    }
    case Variant::MmaTf32x3:
    case Variant::MmaTf32x1:
    case Variant::Mma16:
    case Variant::Wgmma16:
    case Variant::WgmmaTf32x3:
    case Variant::WgmmaTf32x1:
      // The 4 lanes of a row group each divide by the row's l (rcp.rn: MUFU.RCP + two FFMAs).
      k.epilogue_mufu_per_row = 4;
      k.epilogue_ffma_per_row = 2.0 * 4;
      break;
    case Variant::Decode:
      // Modelled on its own (model/decode_model.h): no per-row epilogue correction.
      break;
  }
  return k;
}

double traits_warp_instructions_per_warp_tile(const GeometryAnalysis& a) {
  const TileInstructionCounts& t = a.per_kv_tile;
  const double thread_level = t.ffma + t.fp32_other + t.cvt + t.exp + t.shuffles + t.int_logic;
  const double warps = a.warps_per_block > 0 ? a.warps_per_block : 1;
  const double tensor_issue = t.wgmma > 0 ? 4.0 * t.wgmma : t.mma16;  // a wgmma: one per warp of its warpgroup
  return (thread_level / 32.0 + a.requests_per_kv_tile + t.mma + tensor_issue) / warps;
}

void apply_compiled_instruction_correction(GeometryAnalysis& a, const CompiledInstructionTable& table) {
  const CompiledInstructionCorrection k = compiled_instruction_correction(a.config);
  a.per_kv_tile.ffma += k.ffma_per_kv_tile;
  a.epilogue_ffma_per_row = k.epilogue_ffma_per_row;
  a.epilogue_mufu_per_row = k.epilogue_mufu_per_row;
  const ExtraInstructions e = table.lookup(a.config, traits_warp_instructions_per_warp_tile(a));
  a.extra_warp_instructions_per_warp_tile = e.per_warp_tile;
  a.extra_warp_instructions_per_warp_block = e.per_warp_block;
}

void apply_compiled_instruction_correction(GeometryAnalysis& a) {
  apply_compiled_instruction_correction(a, shipped_compiled_instruction_table());
}

}  // namespace flashtune::model
