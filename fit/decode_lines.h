// The decode family's measurement files (benchmarks/decode_bench sweeps, benchmarks/decode_instructions.sh
// counts) are JSON lines, each naming a decode config: one walk over them for both readers
// (fit/decode_sweeps.h, fit/decode_instruction_fit.h). Host-only.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/traits/tile_config.h"

namespace flashtune::fit {

struct DecodeLine {
  const nlohmann::json& j;
  const TileConfig& config;  // parsed from "config", a decode config
  const std::string& where;  // "path:line", for the reader's own refusals
  const std::string& file;   // the path's file name
  int line_no;
};

// Calls `each` for every line that starts with '{' of each path, in order, with its config parsed.
// Throws FitInputError naming the file (cannot open) or the file and line (not JSON, no "config",
// not a decode config, or a field `each` reads that is missing or of the wrong type).
void for_each_decode_line(const std::vector<std::string>& paths, const std::function<void(const DecodeLine&)>& each);

}  // namespace flashtune::fit
