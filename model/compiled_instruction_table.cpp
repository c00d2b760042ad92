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

// Reads the array j[array_key] of {name_key, tile_key, "per_warp_block"} entries into `out`, by
// name ("config" or "variant"); `known` says whether a name is one.
void read_entries(const nlohmann::json& j, const char* array_key, const char* name_key, const char* tile_key,
                  bool (*known)(const std::string&), std::map<std::string, ExtraInstructions>& out,
                  const std::string& path) {
  const std::string entry = std::string("a ") + array_key + " entry";
  const std::string what = name_key;
  for (const nlohmann::json& e : j.at(array_key)) {
    require_keys(e, {name_key, tile_key, "per_warp_block"}, path, entry);
    if (!e.at(name_key).is_string()) fail(path, entry + ": '" + name_key + "' must be a string");
    const std::string name = e.at(name_key).get<std::string>();
    if (!known(name)) fail(path, what + " '" + name + "' is not a " + what + " name");
    // Negative counts are allowed: ptxas may fuse what the traits count as two instructions.
    const ExtraInstructions x{count_at(e, tile_key, path, name), count_at(e, "per_warp_block", path, name)};
    if (!out.emplace(name, x).second) fail(path, what + " '" + name + "' given twice");
  }
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
  read_entries(
      j, "configs", "config", "per_warp_tile", [](const std::string& n) { return parse_config_name(n).has_value(); },
      t.configs, path);
  read_entries(
      j, "variant_shares", "variant", "per_warp_tile_share",
      [](const std::string& n) { return parse_variant(n).has_value(); }, t.variant_shares, path);
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
