#include "profile/workload_set.h"

#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/json_file.h"
#include "model/text_check.h"
#include "model/workload_limits.h"

namespace flashtune {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw WorkloadFileError(file + ": " + what);
}

long long positive_integer(const json& obj, const std::string& key, const std::string& field, const std::string& file,
                           long long max_value) {
  const auto it = obj.find(key);
  if (it == obj.end()) fail(file, "missing field '" + field + "'");
  const auto value = json_integer_in(*it, 1, max_value);
  if (!value) fail(file, "field '" + field + "' must be an integer in [1, " + std::to_string(max_value) + "]");
  return *value;
}

}  // namespace

WorkloadSet load_workload_set(const std::string& path) {
  json doc;
  try {
    doc = read_json_file(path, "workload file");
  } catch (const JsonFileError& e) {
    throw WorkloadFileError(e.what());
  }
  return workload_set_from_json(doc, path);
}

WorkloadSet workload_set_from_json(const json& doc, const std::string& path) {
  if (!doc.is_object()) fail(path, "top level must be a JSON object");
  const auto version = doc.find("schema_version");
  if (version == doc.end()) fail(path, "missing field 'schema_version'");
  // 2 adds the optional "dtype" per workload (absent: fp32), 3 the optional "kv_len" (absent: N)
  // and "kv_group" (absent: 1), so earlier files read unchanged.
  if (!json_integer_in(*version, 1, 3))
    fail(path, "field 'schema_version' must be 1 to 3 (got " + version->dump() + ")");
  WorkloadSet set;
  set.file = path;
  for (const char* key : {"name", "description"}) {
    const auto it = doc.find(key);
    if (it == doc.end()) continue;
    if (!it->is_string()) fail(path, std::string("field '") + key + "' must be a string");
    (std::string(key) == "name" ? set.name : set.description) = it->get<std::string>();
  }
  const auto list = doc.find("workloads");
  if (list == doc.end()) fail(path, "missing field 'workloads'");
  if (!list->is_array() || list->empty()) fail(path, "field 'workloads' must be a non-empty array");
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    const std::string at = "workloads[" + std::to_string(i) + "]";
    if (!item.is_object()) fail(path, "field '" + at + "' must be an object");
    NamedWorkload nw;
    const auto name = item.find("name");
    if (name == item.end()) fail(path, "missing field '" + at + ".name'");
    if (!name->is_string() || name->get<std::string>().empty())
      fail(path, "field '" + at + ".name' must be a non-empty string");
    nw.name = name->get<std::string>();
    if (const auto why = name_problem(nw.name)) fail(path, "field '" + at + ".name' " + *why);  // reaches the terminal
    if (!seen.emplace(nw.name, i).second)
      fail(path, "workload name '" + nw.name + "' appears twice (workloads[" + std::to_string(seen[nw.name]) +
                     "] and " + at + ")");
    nw.workload.B = positive_integer(item, "B", at + ".B", path, std::numeric_limits<int>::max());
    nw.workload.N = positive_integer(item, "N", at + ".N", path, std::numeric_limits<int>::max());
    nw.workload.d = static_cast<int>(positive_integer(item, "d", at + ".d", path, 1024));
    const auto causal = item.find("causal");
    if (causal != item.end()) {
      if (!causal->is_boolean()) fail(path, "field '" + at + ".causal' must be true or false");
      nw.workload.causal = causal->get<bool>();
    }
    if (const auto dt = item.find("dtype"); dt != item.end()) {
      const auto parsed = dt->is_string() ? parse_dtype(dt->get<std::string>()) : std::nullopt;
      if (!parsed)
        fail(path, "field '" + at + ".dtype' = " + dt->dump() + ": " +
                       unknown_dtype_message(dt->is_string() ? dt->get<std::string>() : dt->dump()));
      nw.workload.dtype = *parsed;
    }
    if (item.contains("kv_len"))
      nw.workload.kv_len = positive_integer(item, "kv_len", at + ".kv_len", path, std::numeric_limits<int>::max());
    if (item.contains("kv_group"))
      nw.workload.kv_group = static_cast<int>(positive_integer(item, "kv_group", at + ".kv_group", path, 1024));
    for (auto it = item.begin(); it != item.end(); ++it)
      if (it.key() != "name" && it.key() != "B" && it.key() != "N" && it.key() != "d" && it.key() != "causal" &&
          it.key() != "dtype" && it.key() != "kv_len" && it.key() != "kv_group")
        fail(path, "unknown field '" + at + "." + it.key() + "' (known: name, B, N, d, causal, dtype, kv_len, kv_group)");
    if (const auto why = model::workload_limit_error(nw.workload)) fail(path, at + ": " + *why);
    set.workloads.push_back(nw);
  }
  return set;
}

std::string default_workload_name(const Workload& w) {
  return "b" + std::to_string(w.B) + "_n" + std::to_string(w.N) +
         (w.keys() != w.N ? "_kv" + std::to_string(w.keys()) : "") +
         (w.kv_group != 1 ? "_g" + std::to_string(w.kv_group) : "") + "_d" + std::to_string(w.d) +
         (w.causal ? "_causal" : "") + (w.dtype != DType::Fp32 ? std::string("_") + dtype_name(w.dtype) : "");
}

bool same_dimensions(const Workload& a, const Workload& b) {
  return a.B == b.B && a.N == b.N && a.d == b.d && a.causal == b.causal && a.dtype == b.dtype &&
         a.keys() == b.keys() && a.kv_group == b.kv_group;
}

std::string describe_workload(const Workload& w) {
  return "B=" + std::to_string(w.B) + " N=" + std::to_string(w.N) + inference_suffix(w) + " d=" + std::to_string(w.d) +
         (w.causal ? " causal" : " non-causal") + (w.dtype != DType::Fp32 ? std::string(" ") + dtype_name(w.dtype) : "");
}

std::vector<NamedWorkload> merge_workloads(const std::vector<WorkloadSet>& sets) {
  std::vector<NamedWorkload> out;
  std::map<std::string, std::pair<std::size_t, std::string>> where;  // name -> (index in out, source)
  for (const WorkloadSet& set : sets) {
    const std::string source = set.file.empty() ? "the command line" : set.file;
    for (const NamedWorkload& nw : set.workloads) {
      const auto it = where.find(nw.name);
      if (it == where.end()) {
        where.emplace(nw.name, std::make_pair(out.size(), source));
        out.push_back(nw);
        continue;
      }
      const NamedWorkload& first = out[it->second.first];
      if (!same_dimensions(first.workload, nw.workload))
        throw WorkloadFileError("workload '" + nw.name + "' is " + describe_workload(first.workload) + " in " +
                                it->second.second + " but " + describe_workload(nw.workload) + " in " + source);
    }
  }
  return out;
}

}  // namespace flashtune
