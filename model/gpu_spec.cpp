#include "model/gpu_spec.h"
#include "model/number_text.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "kernels/traits/tile_config.h"
#include "model/data_dir.h"
#include "model/json_file.h"
#include "model/text_check.h"

namespace flashtune::model {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

// The {"value", "source"} object of figure `key`; both parts must be present.
const json& figure(const json& doc, const std::string& path, const std::string& key) {
  auto it = doc.find(key);
  if (it == doc.end()) fail(path, "missing field '" + key + "'");
  if (!it->is_object()) fail(path, "field '" + key + "' must be an object {\"value\": ..., \"source\": \"...\"}");
  auto src = it->find("source");
  if (src == it->end()) fail(path, "missing field '" + key + ".source'");
  if (!src->is_string() || src->get<std::string>().empty())
    fail(path, "field '" + key + ".source' must be a non-empty string");
  auto val = it->find("value");
  if (val == it->end()) fail(path, "missing field '" + key + ".value'");
  return *val;
}

long long integer_figure(const json& doc, const std::string& path, const std::string& key) {
  const json& v = figure(doc, path, key);
  if (!v.is_number_integer()) fail(path, "field '" + key + ".value' must be an integer");
  // Checked, so 2^64-1 is reported as written rather than as -1.
  const auto x = json_integer_in(v, 0, std::numeric_limits<long long>::max());
  if (!x) fail(path, "field '" + key + ".value' must be an integer in [0, 2^63-1] (got " + v.dump() + ")");
  return *x;
}

int int_figure(const json& doc, const std::string& path, const std::string& key) {
  const long long x = integer_figure(doc, path, key);
  if (x > 1'000'000'000LL) fail(path, "field '" + key + ".value' is out of range (" + std::to_string(x) + ")");
  return static_cast<int>(x);
}

int positive_int_figure(const json& doc, const std::string& path, const std::string& key) {
  const int x = int_figure(doc, path, key);
  if (x <= 0) fail(path, "field '" + key + ".value' must be positive (got " + std::to_string(x) + ")");
  return x;
}

// Every real-valued figure of a sheet (clocks in MHz, bandwidths in GB/s, TFLOP/s, per-clock
// rates) lies well inside this range; a value outside it (5e-324 passes "positive") would reach
// the model as a rate that turns times into inf or nan.
constexpr double kFigureMin = 1e-3;
constexpr double kFigureMax = 1e7;

double positive_number_figure(const json& doc, const std::string& path, const std::string& key) {
  const json& v = figure(doc, path, key);
  if (!v.is_number()) fail(path, "field '" + key + ".value' must be a number");
  const double x = v.get<double>();
  if (!(x > 0)) fail(path, "field '" + key + ".value' must be positive");
  if (!(x >= kFigureMin && x <= kFigureMax))
    fail(path, "field '" + key + ".value' = " + number_text(x) + " is outside the plausible range [" +
                   number_text(kFigureMin) + ", " + number_text(kFigureMax) + "]");
  return x;
}

double nonnegative_number_figure(const json& doc, const std::string& path, const std::string& key) {
  const json& v = figure(doc, path, key);
  if (!v.is_number()) fail(path, "field '" + key + ".value' must be a number");
  const double x = v.get<double>();
  if (!(x >= 0)) fail(path, "field '" + key + ".value' must not be negative (got " + number_text(x) + ")");
  if (x != 0) return positive_number_figure(doc, path, key);
  return x;
}

std::optional<double> optional_number_figure(const json& doc, const std::string& path, const std::string& key) {
  if (!doc.contains(key)) return std::nullopt;
  return positive_number_figure(doc, path, key);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// Strict reading (model/json_file.h): duplicate keys, numbers beyond double range and non-files
// are errors naming the file.
json parse_file(const std::string& path) { return read_json_file(path); }

}  // namespace

GpuSpec load_gpu_spec(const std::string& path) { return gpu_spec_from_json(parse_file(path), path); }

GpuSpec gpu_spec_from_json(const json& doc, const std::string& path) {
  if (!doc.is_object()) fail(path, "top level must be a JSON object");
  GpuSpec s;
  s.file = path;

  auto sv = doc.find("schema_version");
  if (sv == doc.end()) fail(path, "missing field 'schema_version'");
  if (json_integer_in(*sv, 1, 1) != std::optional<std::int64_t>(1)) fail(path, "field 'schema_version' must be 1");

  auto nm = doc.find("name");
  if (nm == doc.end()) fail(path, "missing field 'name'");
  if (!nm->is_string()) fail(path, "field 'name' must be a string");
  s.name = nm->get<std::string>();
  // The name and aliases reach the terminal: not empty, no control characters (model/text_check.h).
  if (const auto why = name_problem(s.name)) fail(path, "field 'name' " + *why);
  if (auto al = doc.find("aliases"); al != doc.end()) {
    if (!al->is_array()) fail(path, "field 'aliases' must be an array of strings");
    for (const json& a : *al) {
      if (!a.is_string()) fail(path, "field 'aliases' must be an array of strings");
      s.aliases.push_back(a.get<std::string>());
      if (const auto why = name_problem(s.aliases.back()))
        fail(path, "field 'aliases[" + std::to_string(s.aliases.size() - 1) + "]' " + *why);
    }
  }

  const json& cc = figure(doc, path, "compute_capability");
  if (!cc.is_string()) fail(path, "field 'compute_capability.value' must be a string like \"9.0\"");
  {
    const std::string c = cc.get<std::string>();
    const auto dot = c.find('.');
    bool ok = dot != std::string::npos && dot > 0 && dot + 1 < c.size();
    for (std::size_t i = 0; ok && i < c.size(); ++i) ok = (i == dot) || std::isdigit(static_cast<unsigned char>(c[i]));
    // At most three digits a side: stoi must not overflow on "99999999999.0".
    ok = ok && dot <= 3 && c.size() - dot - 1 <= 3;
    if (!ok) fail(path, "field 'compute_capability.value' must look like \"9.0\" (got \"" + c + "\")");
    s.cc_major = std::stoi(c.substr(0, dot));
    s.cc_minor = std::stoi(c.substr(dot + 1));
  }

  s.sm_count = positive_int_figure(doc, path, "sm_count");
  s.sm_clock_base_mhz = positive_number_figure(doc, path, "sm_clock_base_mhz");
  s.sm_clock_boost_mhz = positive_number_figure(doc, path, "sm_clock_boost_mhz");
  if (s.sm_clock_base_mhz > s.sm_clock_boost_mhz)
    fail(path, "field 'sm_clock_base_mhz.value' = " + number_text(s.sm_clock_base_mhz) +
                   " is above 'sm_clock_boost_mhz.value' = " + number_text(s.sm_clock_boost_mhz) +
                   " (the base clock is the lower one)");
  s.fp32_lanes_per_sm = positive_int_figure(doc, path, "fp32_lanes_per_sm");
  s.sfu_ops_per_clock_per_sm = positive_int_figure(doc, path, "sfu_ops_per_clock_per_sm");
  s.warp_schedulers_per_sm = positive_int_figure(doc, path, "warp_schedulers_per_sm");
  // 0 where the GPU has no TF32 tensor cores (compute capability below 8.0).
  s.tf32_tensor_flops_per_clock_per_sm = nonnegative_number_figure(doc, path, "tf32_tensor_flops_per_clock_per_sm");
  s.smem_per_sm_bytes = positive_int_figure(doc, path, "shared_memory_per_sm_bytes");
  s.smem_per_block_optin_bytes = positive_int_figure(doc, path, "shared_memory_per_block_optin_bytes");
  s.smem_reserved_per_block_bytes = int_figure(doc, path, "shared_memory_reserved_per_block_bytes");
  s.smem_allocation_granularity_bytes = positive_int_figure(doc, path, "shared_memory_allocation_granularity_bytes");
  s.smem_banks = positive_int_figure(doc, path, "shared_memory_banks");
  s.smem_bytes_per_clock_per_sm = positive_int_figure(doc, path, "shared_memory_bytes_per_clock_per_sm");
  s.smem_wavefronts_per_clock_per_sm = positive_number_figure(doc, path, "shared_memory_wavefronts_per_clock_per_sm");
  s.registers_per_sm = positive_int_figure(doc, path, "registers_per_sm");
  s.registers_per_block_max = positive_int_figure(doc, path, "registers_per_block_max");
  s.max_registers_per_thread = positive_int_figure(doc, path, "max_registers_per_thread");
  s.register_allocation_granularity = positive_int_figure(doc, path, "register_allocation_granularity");
  s.register_file_partitions = positive_int_figure(doc, path, "register_file_partitions");
  s.max_threads_per_sm = positive_int_figure(doc, path, "max_threads_per_sm");
  s.max_threads_per_block = positive_int_figure(doc, path, "max_threads_per_block");
  s.max_blocks_per_sm = positive_int_figure(doc, path, "max_blocks_per_sm");
  s.max_warps_per_sm = positive_int_figure(doc, path, "max_warps_per_sm");
  s.l2_bytes = integer_figure(doc, path, "l2_bytes");
  if (s.l2_bytes <= 0) fail(path, "field 'l2_bytes.value' must be positive");
  s.dram_bandwidth_gbs = positive_number_figure(doc, path, "dram_bandwidth_gbs");
  s.l2_bandwidth_gbs = positive_number_figure(doc, path, "l2_bandwidth_gbs");
  s.dram_bandwidth_measured_gbs = optional_number_figure(doc, path, "dram_bandwidth_measured_gbs");
  s.fp32_measured_tflops = optional_number_figure(doc, path, "fp32_measured_tflops");
  s.tf32_measured_tflops = optional_number_figure(doc, path, "tf32_measured_tflops");
  // Optional, so that a sheet written before 16-bit kernels existed still loads (no 16-bit rate).
  for (auto [field, rate] : {std::pair{"bf16_tensor_flops_per_clock_per_sm", &s.bf16_tensor_flops_per_clock_per_sm},
                             std::pair{"fp16_tensor_flops_per_clock_per_sm", &s.fp16_tensor_flops_per_clock_per_sm}}) {
    *rate = doc.contains(field) ? nonnegative_number_figure(doc, path, field) : 0.0;
  }
  if (doc.contains("clusters_at_once_one_block_per_sm")) {
    const json& v = figure(doc, path, "clusters_at_once_one_block_per_sm");
    const std::string what = "field 'clusters_at_once_one_block_per_sm.value' must be an array of 15 integers in [0, "
                             "sm_count] (clusters of 2..16 blocks)";
    if (!v.is_array() || v.size() != 15) fail(path, what);
    s.clusters_at_once.assign(2, 0);
    for (const json& n : v) {
      const auto x = json_integer_in(n, 0, s.sm_count);
      if (!x) fail(path, what);
      s.clusters_at_once.push_back(static_cast<int>(*x));
    }
  }
  if (s.compute_capability() < kTensorCoreMinComputeCapability && s.tf32_tensor_flops_per_clock_per_sm > 0)
    fail(path, "field 'tf32_tensor_flops_per_clock_per_sm.value' must be 0 below compute capability 8.0 (no TF32 "
               "tensor cores), the sheet says " + std::to_string(s.cc_major) + "." + std::to_string(s.cc_minor));
  if (s.smem_banks != 32) fail(path, "field 'shared_memory_banks.value' must be 32 (the bank simulator assumes it)");
  return s;
}

std::string default_gpu_spec_dir() { return data_path("configs/gpus"); }

std::string spec_stem(const GpuSpec& spec) { return std::filesystem::path(spec.file).stem().string(); }

std::vector<std::string> known_gpu_names(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".json") names.push_back(it->path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

GpuSpec find_gpu_spec(const std::string& name, const std::string& dir) {
  const std::vector<std::string> names = known_gpu_names(dir);
  const std::string want = lower(name);
  for (const std::string& stem : names)
    if (lower(stem) == want) return load_gpu_spec(dir + "/" + stem + ".json");
  // Aliases live inside the files; a file that does not parse cannot claim an alias (and breaks no
  // other GPU), but is named when nothing else claims the name. Two files claiming one alias are
  // refused naming both, rather than the first in the listing winning.
  std::vector<std::string> claimed_by, unreadable;
  std::string first_error;
  for (const std::string& stem : names) {
    const std::string file = dir + "/" + stem + ".json";
    try {
      const json doc = parse_file(file);
      if (auto al = doc.find("aliases"); al != doc.end() && al->is_array())
        for (const json& a : *al)
          if (a.is_string() && lower(a.get<std::string>()) == want) {
            claimed_by.push_back(file);
            break;
          }
    } catch (const std::runtime_error& e) {
      unreadable.push_back(stem);
      // The file whose name holds the one asked for ("h200" in nvidia-h200.json) comes first.
      if (first_error.empty() || lower(stem).find(want) != std::string::npos) first_error = e.what();
    }
  }
  if (claimed_by.size() > 1)
    throw std::runtime_error("GPU '" + printable(name) + "' is an alias in both " + claimed_by[0] + " and " + claimed_by[1] +
                             " (remove it from one)");
  if (claimed_by.size() == 1) return load_gpu_spec(claimed_by[0]);
  // A file that could have named it but does not read: its own error, not "unknown GPU".
  for (const std::string& stem : unreadable)
    if (!want.empty() && lower(stem).find(want) != std::string::npos)
      throw std::runtime_error(first_error + " (the spec of GPU '" + printable(name) + "'?)");
  std::string known;
  for (const std::string& stem : names) known += (known.empty() ? "" : ", ") + stem;
  if (known.empty()) known = "none: no *.json in " + dir;
  std::string broken;
  if (!unreadable.empty()) broken = "; " + std::to_string(unreadable.size()) + " unreadable, first: " + printable(first_error);
  throw std::runtime_error("unknown GPU '" + printable(name) + "' (known: " + known + ")" + broken);
}

namespace {

// "NVIDIA H100 80GB HBM3" -> {"nvidia", "h100", "80gb", "hbm3"}
std::vector<std::string> name_tokens(const std::string& name) {
  std::vector<std::string> tokens;
  std::string cur;
  for (char ch : name) {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    } else if (!cur.empty()) {
      tokens.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) tokens.push_back(cur);
  return tokens;
}

std::string join_dash(const std::vector<std::string>& tokens, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n && i < tokens.size(); ++i) s += (i ? "-" : "") + tokens[i];
  return s;
}

// The stem of the spec file that `candidate` names (a stem or an alias), if any.
std::optional<std::string> stem_of_spec_named(const std::string& candidate, const std::string& spec_dir) {
  try {
    return spec_stem(find_gpu_spec(candidate, spec_dir));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::string gpu_spec_name(const std::string& device_name, const std::string& spec_dir) {
  const std::vector<std::string> all = name_tokens(device_name);
  if (all.empty()) return "unknown-gpu";
  // Memory size and memory type say which board, not which chip: the spec files do not carry them.
  static const std::regex memory_token("[0-9]+gb|hbm[0-9]*e?|gddr[0-9]*x?");
  std::vector<std::string> tokens;
  for (const std::string& t : all)
    if (!std::regex_match(t, memory_token)) tokens.push_back(t);
  if (auto stem = stem_of_spec_named(join_dash(all, all.size()), spec_dir)) return *stem;
  // Longest prefix first, then without the vendor word ("geforce-rtx-3090" is an alias).
  for (std::size_t first = 0; first < 2 && first < tokens.size(); ++first) {
    const std::vector<std::string> rest(tokens.begin() + static_cast<std::ptrdiff_t>(first), tokens.end());
    for (std::size_t n = rest.size(); n >= 2; --n)
      if (auto stem = stem_of_spec_named(join_dash(rest, n), spec_dir)) return *stem;
  }
  return join_dash(all, all.size());
}

GpuSpec gpu_spec_by_name_or_file(const std::string& gpu) {
  if (std::filesystem::path(gpu).extension() == ".json") return load_gpu_spec(gpu);
  return find_gpu_spec(gpu, default_gpu_spec_dir());
}

}  // namespace flashtune::model
