// Warp instructions the compiled kernels execute beyond the traits' counts: address arithmetic,
// loop control, masks and moves inside the K/V loop, and the prologue and epilogue of each warp
// (Q's load, O's store, setup). ptxas decides them, so they are measured, not derived: a profile
// tuned with the instruction counter (smsp__inst_executed, collected since the warp_instructions
// term) gives, per config, the counter less the traits' count over a few workloads, and a least
// squares fit splits it into a share per (warp, computed K/V tile) and one per (warp, block)
// (fit/compiled_instruction_fit.h). The shipped table is configs/kernels/compiled_instructions.json
// (sm_90, the build's default architecture), written by `flashtune check-counters
// --write-compiled-instructions`; configs it lacks take their variant's median share.
// This file is the one reader of that format and makes its JSON.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/traits/tile_config.h"

namespace flashtune::model {

struct ExtraInstructions {
  double per_warp_tile = 0;   // per (warp, K/V tile) pair that computes (Counts::warp_tile_visits)
  double per_warp_block = 0;  // per warp of each block, once
};

struct CompiledInstructionTable {
  std::string source;  // the profile it was read off, and how (free text, kept for the reader)
  std::map<std::string, ExtraInstructions> configs;  // by TileConfig::name()
  // Per variant name, for configs not in `configs`: per_warp_tile as a share of the traits' own
  // warp instructions per (warp, tile); per_warp_block as is. Medians over the measured configs.
  std::map<std::string, ExtraInstructions> variant_shares;

  bool empty() const { return configs.empty() && variant_shares.empty(); }
  // The extra instructions of `c`, whose traits count traits_per_warp_tile warp instructions per
  // (warp, tile): its own entry, else its variant's shares, else none.
  ExtraInstructions lookup(const TileConfig& c, double traits_per_warp_tile) const;
};

// Throws JsonFileError / std::runtime_error, one line starting with the file name, on a file that
// is not the format (unknown or missing keys, a config name that does not parse, a negative or
// non-finite count).
CompiledInstructionTable read_compiled_instruction_table(const std::string& path);
// The file's JSON (the app writes it through profile/output_file.h): counts in tenths of an
// instruction, shares to 1e-4; reading it back gives the table so rounded.
nlohmann::json compiled_instruction_table_json(const CompiledInstructionTable& t);

// configs/kernels/compiled_instructions.json of the data folder (model/data_dir.h), read once; an
// empty table when the data folder has no such file (the model then counts the traits alone).
const CompiledInstructionTable& shipped_compiled_instruction_table();

}  // namespace flashtune::model
