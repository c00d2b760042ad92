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
      // The 4 lanes of a row group each divide by the row's l (rcp.rn: MUFU.RCP + two FFMAs).
      k.epilogue_mufu_per_row = 4;
      k.epilogue_ffma_per_row = 2.0 * 4;
      break;
  }
  return k;
}

void apply_compiled_instruction_correction(GeometryAnalysis& a) {
  const CompiledInstructionCorrection k = compiled_instruction_correction(a.config);
  a.per_kv_tile.ffma += k.ffma_per_kv_tile;
  a.epilogue_ffma_per_row = k.epilogue_ffma_per_row;
  a.epilogue_mufu_per_row = k.epilogue_mufu_per_row;
}

}  // namespace flashtune::model
