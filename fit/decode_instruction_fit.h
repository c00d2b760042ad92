// The decode family's compiled extra instructions: what its SIMT (fp32) kernels issue per (warp, tile
// of Bc keys) and per warp of a block beyond the traits' count (model::decode_simt_warp_instructions_per_tile),
// read off executed-instruction counts (ncu smsp__inst_executed.sum of one split-kernel launch, one
// JSON object a line: benchmarks/decode_instructions.sh writes them) by the same least squares as the
// profiles' counters (fit/compiled_instruction_fit.h). The rows go into the shipped table
// (configs/kernels/compiled_instructions.json), whose per-tile extra the decode model adds to the
// traits' count. The 16-bit configs' lines are read and left out: their tile time is the chain of
// mma.sync steps, not an instruction count. Host-only.
#pragma once

#include <string>
#include <vector>

#include "fit/compiled_instruction_fit.h"

namespace flashtune::fit {

// Lines: {"config", "batch", "q_heads", "kv_heads", "nq", "keys", "splits", "inst_executed"}.
// Throws FitInputError naming the file and line for a missing field, a config that is not a decode
// config or a count that is not positive.
CompiledInstructionFit fit_decode_instructions(const std::vector<std::string>& paths);

// The fitted rows as the table's JSON (model::compiled_instruction_table_json), and one line per
// config with the traits' count per (warp, tile) beside the fitted extras.
std::string render_decode_instruction_fit(const CompiledInstructionFit& f);

}  // namespace flashtune::fit
