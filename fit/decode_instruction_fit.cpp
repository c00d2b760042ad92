#include "fit/decode_instruction_fit.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "fit/decode_lines.h"
#include "fit/fit_dataset.h"
#include "kernels/traits/decode_traits.h"
#include "kernels/traits/variants.h"
#include "model/decode_model.h"

namespace flashtune::fit {

CompiledInstructionFit fit_decode_instructions(const std::vector<std::string>& paths) {
  std::map<std::string, ConfigInstructionObservations> by_config;
  std::vector<std::string> left_out;
  std::string source;
  for (const std::string& path : paths) source += (source.empty() ? "" : ", ") + path;
  for_each_decode_line(paths, [&](const DecodeLine& line) {
    const TileConfig& c = line.config;
    const std::string name = c.name();
    const long long batch = line.j.at("batch").get<long long>(), keys = line.j.at("keys").get<long long>();
    const int q_heads = line.j.at("q_heads").get<int>(), kv_heads = line.j.at("kv_heads").get<int>();
    const int nq = line.j.at("nq").get<int>(), splits = line.j.at("splits").get<int>();
    const double counter = line.j.at("inst_executed").get<double>();
    if (batch < 1 || kv_heads < 1 || q_heads % kv_heads != 0 || nq < 1 || keys < 1 || splits < 1 || !(counter > 0))
      throw FitInputError(line.where + ": needs batch, heads (q a multiple of kv), nq, keys, splits and inst_executed > 0");
    if (traits::Decode::uses_mma(c.dtype)) {
      const std::string why = name + ": 16-bit (its tile time is the mma.sync chain, not an instruction count)";
      if (std::find(left_out.begin(), left_out.end(), why) == left_out.end()) left_out.push_back(why);
      return;
    }
    const auto s = traits::Decode::shape(c, batch, q_heads, q_heads / kv_heads, nq, keys, splits);
    if (s.splits != splits)
      throw FitInputError(line.where + ": splits " + std::to_string(splits) + " launch as " + std::to_string(s.splits));
    ConfigInstructionObservations& o = by_config[name];
    o.variant = variant_name(c.variant);
    o.traits_per_warp_tile = model::decode_simt_warp_instructions_per_tile(c);
    // Every key tile of every row tile is one warp's; every block has kWarps warps.
    const double warp_tiles = double(s.kv_entries) * s.row_tiles * double(s.key_tiles);
    const double warp_blocks = double(s.blocks) * traits::Decode::kWarps;
    o.rows.push_back({warp_tiles, warp_blocks, counter - warp_tiles * o.traits_per_warp_tile, counter});
  });
  if (by_config.empty() && left_out.empty()) throw FitInputError(source + ": no instruction count");
  CompiledInstructionFit f = fit_instruction_extras(by_config, source + ": flashtune fit --decode-instructions");
  f.left_out.insert(f.left_out.begin(), left_out.begin(), left_out.end());
  return f;
}

std::string render_decode_instruction_fit(const CompiledInstructionFit& f) {
  std::string out;
  char buf[512];
  for (const auto& [name, e] : f.table.configs) {
    const auto c = parse_config_name(name);
    const double traits = c ? model::decode_simt_warp_instructions_per_tile(*c) : 0;
    std::snprintf(buf, sizeof buf, "  %s: traits %.0f + %.1f per (warp, tile) (x%.2f), %.1f per warp of a block\n",
                  name.c_str(), traits, e.per_warp_tile, traits > 0 ? (traits + e.per_warp_tile) / traits : 0.0,
                  e.per_warp_block);
    out += buf;
  }
  for (const std::string& why : f.left_out) out += "  left out: " + why + "\n";
  std::snprintf(buf, sizeof buf, "%d configs fitted on %d counts; residual median %.2f%%, max %.2f%%\n", f.configs_fitted,
                f.observations_used, 100 * f.median_rel_residual, 100 * f.max_rel_residual);
  out += buf;
  out += model::compiled_instruction_table_json(f.table).dump(2) + "\n";
  return out;
}

}  // namespace flashtune::fit
