#include "model/compiled_instruction_table.h"

#include <cmath>
#include <fstream>
#include <set>
#include <stdexcept>

#include "model/data_dir.h"
#include "model/json_file.h"

namespace flashtune::model {
namespace {

constexpr int kSchemaVersion = 1;

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw std::runtime_error(path + ": " + what); }

void require_keys(const nlohmann::json& o, const std::set<std::string>& allowed, const std::string& path,
                  const std::string& where) {
  if (!o.is_object()) fail(path, where + " must be an object");
  for (auto it = o.begin(); it != o.end(); ++it)
    if (!allowed.count(it.key())) fail(path, where + ": unknown key '" + it.key() + "'");
  for (const std::string& k : allowed)
    if (!o.contains(k)) fail(path, where + ": missing key '" + k + "'");
}

double count_at(const nlohmann::json& o, const char* key, const std::string& path, const std::string& where) {
  const nlohmann::json& v = o.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    fail(path, where + ": '" + key + "' must be a finite number");
  return v.get<double>();
}

ExtraInstructions extra_at(const nlohmann::json& o, const char* tile_key, const std::string& path,
                           const std::string& where) {
  ExtraInstructions e{count_at(o, tile_key, path, where), count_at(o, "per_warp_block", path, where)};
  // Negative entries are allowed: ptxas may fuse what the traits count as two instructions.
  return e;
}

}  // namespace

ExtraInstructions CompiledInstructionTable::lookup(const TileConfig& c, double traits_per_warp_tile) const {
  if (auto it = configs.find(c.name()); it != configs.end()) return it->second;
  if (auto it = variant_shares.find(variant_name(c.variant)); it != variant_shares.end())
    return {it->second.per_warp_tile * traits_per_warp_tile, it->second.per_warp_block};
  return {};
}

CompiledInstructionTable read_compiled_instruction_table(const std::string& path) {
  const nlohmann::json j = read_json_file(path, "compiled-instruction table");
  require_keys(j, {"schema_version", "source", "configs", "variant_shares"}, path, "top level");
  if (j.at("schema_version") != kSchemaVersion)
    fail(path, "schema_version " + j.at("schema_version").dump() + " (this build reads " +
                   std::to_string(kSchemaVersion) + ")");
  if (!j.at("source").is_string()) fail(path, "'source' must be a string");
  if (!j.at("configs").is_array() || !j.at("variant_shares").is_array())
    fail(path, "'configs' and 'variant_shares' must be arrays");
  CompiledInstructionTable t;
  t.source = j.at("source").get<std::string>();
  for (const nlohmann::json& e : j.at("configs")) {
    require_keys(e, {"config", "per_warp_tile", "per_warp_block"}, path, "a configs entry");
    if (!e.at("config").is_string()) fail(path, "a configs entry: 'config' must be a string");
    const std::string name = e.at("config").get<std::string>();
    if (!parse_config_name(name)) fail(path, "config '" + name + "' is not a config name");
    if (!t.configs.emplace(name, extra_at(e, "per_warp_tile", path, name)).second)
      fail(path, "config '" + name + "' given twice");
  }
  for (const nlohmann::json& e : j.at("variant_shares")) {
    require_keys(e, {"variant", "per_warp_tile_share", "per_warp_block"}, path, "a variant_shares entry");
    if (!e.at("variant").is_string()) fail(path, "a variant_shares entry: 'variant' must be a string");
    const std::string v = e.at("variant").get<std::string>();
    if (!parse_variant(v)) fail(path, "variant '" + v + "' is not a variant name");
    if (!t.variant_shares.emplace(v, extra_at(e, "per_warp_tile_share", path, v)).second)
      fail(path, "variant '" + v + "' given twice");
  }
  return t;
}

// Tenths of an instruction: the fit's residual is far larger, and the file stays readable.
double tenths(double x) { return std::round(x * 10.0) / 10.0; }

nlohmann::json compiled_instruction_table_json(const CompiledInstructionTable& t) {
  nlohmann::json j = {{"schema_version", kSchemaVersion},
                      {"source", t.source},
                      {"configs", nlohmann::json::array()},
                      {"variant_shares", nlohmann::json::array()}};
  for (const auto& [name, e] : t.configs)
    j["configs"].push_back(
        {{"config", name}, {"per_warp_tile", tenths(e.per_warp_tile)}, {"per_warp_block", tenths(e.per_warp_block)}});
  for (const auto& [v, e] : t.variant_shares)
    j["variant_shares"].push_back(
        {{"variant", v}, {"per_warp_tile_share", std::round(e.per_warp_tile * 1e4) / 1e4}, {"per_warp_block", tenths(e.per_warp_block)}});
  return j;
}

const CompiledInstructionTable& shipped_compiled_instruction_table() {
  static const CompiledInstructionTable table = [] {
    const std::string path = data_path("configs/kernels/compiled_instructions.json");
    if (!std::ifstream(path).good()) return CompiledInstructionTable{};
    return read_compiled_instruction_table(path);
  }();
  return table;
}

}  // namespace flashtune::model
