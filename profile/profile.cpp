#include "profile/profile.h"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <initializer_list>
#include <limits>

#include "model/json_file.h"
#include "model/text_check.h"
#include "profile/output_file.h"
#include "profile/profile_check.h"
#include "profile/profile_journal.h"

namespace flashtune {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

const char* const kKnownStatuses[] = {status::kOk, status::kCompile, status::kLaunch, status::kResources,
                                      status::kWrongResult};

// ---- reading, with the field path in every message ------------------------------------------

struct Reader {
  const std::string& source;
  [[noreturn]] void fail(const std::string& what) const { throw ProfileError(source + ": " + what); }

  const json& field(const json& obj, const char* key, const std::string& at) const {
    const auto it = obj.find(key);
    if (it == obj.end()) fail("missing field '" + at + key + "'");
    return *it;
  }
  const json* optional_field(const json& obj, const char* key) const {
    const auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  std::string str(const json& obj, const char* key, const std::string& at, bool required = true) const {
    const json* v = required ? &field(obj, key, at) : optional_field(obj, key);
    if (!v) return "";
    if (!v->is_string()) fail("field '" + at + key + "' must be a string");
    return v->get<std::string>();
  }
  double num(const json& obj, const char* key, const std::string& at, bool required = true) const {
    const json* v = required ? &field(obj, key, at) : optional_field(obj, key);
    if (!v) return 0;
    if (!v->is_number()) fail("field '" + at + key + "' must be a number");
    return v->get<double>();
  }
  long long integer(const json& obj, const char* key, const std::string& at, bool required = true,
                    long long max = std::numeric_limits<long long>::max()) const {
    const json* v = required ? &field(obj, key, at) : optional_field(obj, key);
    if (!v) return 0;
    if (!v->is_number_integer()) fail("field '" + at + key + "' must be an integer");
    // Checked: 4294967360 must not be read as 64 once narrowed to int.
    const auto x = json_integer_in(*v, std::numeric_limits<long long>::min(), max);
    if (!x) fail("field '" + at + key + "' = " + v->dump() + " is out of range (at most " + std::to_string(max) + ")");
    return *x;
  }
  int small_integer(const json& obj, const char* key, const std::string& at, bool required = true) const {
    const long long x = integer(obj, key, at, required, std::numeric_limits<int>::max());
    if (x < std::numeric_limits<int>::min()) fail("field '" + at + key + "' = " + std::to_string(x) + " is out of range");
    return static_cast<int>(x);
  }
  const json& object(const json& obj, const char* key, const std::string& at) const {
    const json& v = field(obj, key, at);
    if (!v.is_object()) fail("field '" + at + key + "' must be an object");
    return v;
  }
  const json& array(const json& obj, const char* key, const std::string& at) const {
    const json& v = field(obj, key, at);
    if (!v.is_array()) fail("field '" + at + key + "' must be an array");
    return v;
  }
  // Optional fields that have no "not recorded" value of their own: absent stays nullopt.
  std::optional<double> opt_num(const json& obj, const char* key, const std::string& at) const {
    if (!optional_field(obj, key)) return std::nullopt;
    return num(obj, key, at);
  }
  std::optional<int> opt_small_integer(const json& obj, const char* key, const std::string& at) const {
    if (!optional_field(obj, key)) return std::nullopt;
    return small_integer(obj, key, at);
  }
};

// The fields of `obj` not in `known`, kept so that a rewrite writes them back.
json unknown_fields(const json& obj, std::initializer_list<const char*> known) {
  json extra = json::object();
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool is_known = false;
    for (const char* k : known) is_known = is_known || it.key() == k;
    if (!is_known) extra[it.key()] = *it;
  }
  return extra;
}

// Writes the kept unknown fields after the known ones (a known name is never taken over).
void put_extra(ordered_json& j, const json& extra) {
  for (auto it = extra.begin(); it != extra.end(); ++it)
    if (!j.contains(it.key())) j[it.key()] = *it;
}

GpuIdentity read_gpu(const Reader& r, const json& g) {
  const std::string at = "gpu.";
  GpuIdentity id;
  id.name = r.str(g, "name", at);
  id.spec = r.str(g, "spec", at);
  id.sm_count = r.small_integer(g, "sm_count", at, false);
  id.cc = r.str(g, "cc", at, false);
  id.sm_clock_max_mhz = r.small_integer(g, "sm_clock_max_mhz", at, false);
  id.mem_clock_mhz = r.small_integer(g, "mem_clock_mhz", at, false);
  id.l2_bytes = r.integer(g, "l2_bytes", at, false);
  id.driver = r.str(g, "driver", at, false);
  id.cuda_runtime = r.str(g, "cuda_runtime", at, false);
  id.device_index = r.small_integer(g, "device_index", at, false);
  id.extra = unknown_fields(g, {"name", "spec", "sm_count", "cc", "sm_clock_max_mhz", "mem_clock_mhz", "l2_bytes",
                                "driver", "cuda_runtime", "device_index"});
  return id;
}

Measurement read_measurement(const Reader& r, const json& m, const std::string& at) {
  if (!m.is_object()) r.fail("field '" + at + "' must be an object");
  const std::string p = at + ".";
  Measurement x;
  x.workload = r.str(m, "workload", p);
  x.config = r.str(m, "config", p);
  x.status = r.str(m, "status", p);
  if (!is_known_status(x.status))
    r.fail("field '" + p + "status' = '" + x.status + "' (known: ok, compile, launch, resources, wrong-result)");
  x.reason = r.str(m, "reason", p, false);
  if (const json* v = r.optional_field(m, "verify")) {
    if (!v->is_object()) r.fail("field '" + p + "verify' must be an object");
    x.verify = VerifyResult{r.num(*v, "rel_l2", p + "verify."), r.num(*v, "max_abs", p + "verify.", false)};
  }
  if (const json* t = r.optional_field(m, "timing")) {
    if (!t->is_object()) r.fail("field '" + p + "timing' must be an object");
    const std::string q = p + "timing.";
    TimingSummary s;
    s.median_ms = r.num(*t, "median_ms", q);
    s.min_ms = r.opt_num(*t, "min_ms", q);
    s.max_ms = r.opt_num(*t, "max_ms", q);
    s.mean_ms = r.opt_num(*t, "mean_ms", q);
    s.stdev_ms = r.opt_num(*t, "stdev_ms", q);
    s.rel_stdev = r.opt_num(*t, "rel_stdev", q);
    s.samples = r.opt_small_integer(*t, "samples", q);
    s.dropped = r.opt_small_integer(*t, "dropped", q);
    s.sm_clock_mhz = r.num(*t, "sm_clock_mhz", q, false);
    s.stop = r.str(*t, "stop", q, false);
    if (const json* sm = r.optional_field(*t, "samples_ms")) {
      if (!sm->is_array()) r.fail("field '" + q + "samples_ms' must be an array of numbers");
      for (const json& v : *sm) {
        if (!v.is_number()) r.fail("field '" + q + "samples_ms' must be an array of numbers");
        s.samples_ms.push_back(v.get<double>());
      }
    }
    s.extra = unknown_fields(*t, {"median_ms", "min_ms", "max_ms", "mean_ms", "stdev_ms", "rel_stdev", "samples",
                                  "dropped", "sm_clock_mhz", "stop", "samples_ms"});
    x.timing = s;
  }
  if (x.status == status::kOk && !x.timing) r.fail("field '" + p + "timing' is required when status is ok");
  if (const json* c = r.optional_field(m, "counters")) {
    if (!c->is_object()) r.fail("field '" + p + "counters' must be an object");
    for (auto it = c->begin(); it != c->end(); ++it) {
      if (!it->is_number()) r.fail("field '" + p + "counters." + it.key() + "' must be a number");
      x.counters[it.key()] = it->get<double>();
    }
  }
  x.counters_status = r.str(m, "counters_status", p, false);
  if (const json* res = r.optional_field(m, "resources")) {
    if (!res->is_object()) r.fail("field '" + p + "resources' must be an object");
    const std::string q = p + "resources.";
    x.resources = ResourceUsage{r.small_integer(*res, "registers", q),  // required: 0 is no kernel
                                r.small_integer(*res, "static_smem", q, false),
                                r.small_integer(*res, "dynamic_smem", q, false),
                                r.small_integer(*res, "local_bytes", q, false),
                                r.small_integer(*res, "threads", q)};
  }
  x.timestamp = r.str(m, "timestamp", p, false);
  x.device_index = r.small_integer(m, "device_index", p, false);
  x.elapsed_s = r.num(m, "elapsed_s", p, false);
  x.extra = unknown_fields(m, {"workload", "config", "status", "reason", "verify", "timing", "counters",
                               "counters_status", "resources", "timestamp", "device_index", "elapsed_s"});
  return x;
}

// ---- writing --------------------------------------------------------------------------------

ordered_json workload_json(const NamedWorkload& w) {
  ordered_json j = {{"name", w.name}, {"B", w.workload.B}, {"N", w.workload.N}, {"d", w.workload.d},
                    {"causal", w.workload.causal}, {"dtype", dtype_name(w.workload.dtype)}};
  // Only where they differ from self-attention: a self-attention workload reads as in version 2.
  if (w.workload.keys() != w.workload.N) j["kv_len"] = w.workload.keys();
  if (w.workload.kv_group != 1) j["kv_group"] = w.workload.kv_group;
  put_extra(j, w.extra);
  return j;
}

ordered_json measurement_json(const Measurement& m) {
  ordered_json j = {{"workload", m.workload}, {"config", m.config}, {"status", m.status}, {"reason", m.reason}};
  if (m.verify) j["verify"] = {{"rel_l2", m.verify->rel_l2}, {"max_abs", m.verify->max_abs}};
  if (m.timing) {
    const TimingSummary& t = *m.timing;
    // What the measurement did not record is left out rather than written as 0.
    ordered_json timing = {{"median_ms", t.median_ms}};
    const auto put = [&timing](const char* key, const auto& value) {
      if (value) timing[key] = *value;
    };
    put("min_ms", t.min_ms);
    put("mean_ms", t.mean_ms);
    put("stdev_ms", t.stdev_ms);
    put("rel_stdev", t.rel_stdev);
    put("samples", t.samples);
    put("dropped", t.dropped);
    if (t.sm_clock_mhz > 0) timing["sm_clock_mhz"] = t.sm_clock_mhz;
    put("max_ms", t.max_ms);
    if (!t.stop.empty()) timing["stop"] = t.stop;
    if (!t.samples_ms.empty()) timing["samples_ms"] = t.samples_ms;
    put_extra(timing, t.extra);
    j["timing"] = timing;
  }
  ordered_json counters = ordered_json::object();
  for (const auto& [name, value] : m.counters) counters[name] = value;
  j["counters"] = counters;
  j["counters_status"] = m.counters_status;
  if (m.resources) {
    const ResourceUsage& r = *m.resources;
    j["resources"] = {{"registers", r.registers},     {"static_smem", r.static_smem}, {"dynamic_smem", r.dynamic_smem},
                      {"local_bytes", r.local_bytes}, {"threads", r.threads}};
  }
  j["timestamp"] = m.timestamp;
  j["device_index"] = m.device_index;
  j["elapsed_s"] = m.elapsed_s;
  put_extra(j, m.extra);
  return j;
}

// Registers per config at a glance for other tools, derived from the measurements' resources on
// every write (flashtune itself reads the measurements: profile/model_profile.h).
ordered_json kernel_resources_json(const Profile& p) {
  std::map<std::string, int> registers;
  for (const Measurement& m : p.measurements)
    if (m.resources && m.resources->registers > 0) registers[m.config] = m.resources->registers;
  ordered_json j = ordered_json::object();
  for (const auto& [config, regs] : registers) j[config] = {{"registers", regs}};
  return j;
}

}  // namespace

ordered_json measurement_to_json(const Measurement& m) { return measurement_json(m); }

Measurement measurement_from_json(const json& j, const std::string& source, const std::string& at) {
  return read_measurement(Reader{source}, j, at);
}

bool is_known_status(const std::string& s) {
  for (const char* k : kKnownStatuses)
    if (s == k) return true;
  return false;
}

void recompute_best(Profile& p) {
  p.best.clear();
  for (const Measurement& m : p.measurements) {
    if (m.status != status::kOk || !m.timing || !(m.timing->median_ms > 0)) continue;
    auto it = p.best.find(m.workload);
    if (it == p.best.end() || m.timing->median_ms < it->second.median_ms)
      p.best[m.workload] = BestConfig{m.config, m.timing->median_ms};
  }
}

ordered_json to_json(const Profile& p) {
  ordered_json j;
  j["schema_version"] = kProfileSchemaVersion;
  j["kind"] = kProfileKind;
  const GpuIdentity& g = p.gpu;
  j["gpu"] = {{"name", g.name},
              {"spec", g.spec},
              {"sm_count", g.sm_count},
              {"cc", g.cc},
              {"sm_clock_max_mhz", g.sm_clock_max_mhz},
              {"mem_clock_mhz", g.mem_clock_mhz},
              {"l2_bytes", g.l2_bytes},
              {"driver", g.driver},
              {"cuda_runtime", g.cuda_runtime},
              {"device_index", g.device_index}};
  put_extra(j["gpu"], g.extra);
  j["build"] = {{"compiler", p.build.compiler},
                {"cuda_arch", p.build.cuda_arch},
                {"git_commit", p.build.git_commit},
                {"kernel_set", p.build.kernel_set}};
  put_extra(j["build"], p.build.extra);
  j["workloads"] = ordered_json::array();
  for (const NamedWorkload& w : p.workloads) j["workloads"].push_back(workload_json(w));
  j["measurements"] = ordered_json::array();
  for (const Measurement& m : p.measurements) j["measurements"].push_back(measurement_json(m));
  ordered_json best = ordered_json::object();
  for (const NamedWorkload& w : p.workloads) {
    const auto it = p.best.find(w.name);
    if (it != p.best.end()) best[w.name] = {{"config", it->second.config}, {"median_ms", it->second.median_ms}};
  }
  j["best"] = best;
  j["coefficients"] = p.coefficients;
  j["kernel_resources"] = kernel_resources_json(p);
  j["tune_settings"] = p.tune_settings;
  for (auto it = p.extra.begin(); it != p.extra.end(); ++it) j[it.key()] = *it;
  return j;
}

std::string profile_text(const Profile& p) {
  const ordered_json j = to_json(p);
  std::string out = "{\n";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out += first ? "  " : ",\n  ";
    first = false;
    out += json(it.key()).dump() + ": ";
    if ((it.key() == "workloads" || it.key() == "measurements") && !it->empty()) {
      out += "[\n";
      for (std::size_t i = 0; i < it->size(); ++i) out += "    " + (*it)[i].dump() + (i + 1 < it->size() ? ",\n" : "\n");
      out += "  ]";
    } else if (it.key() == "best" || it.key() == "kernel_resources") {
      if (it->empty()) {
        out += "{}";
        continue;
      }
      out += "{\n";
      std::size_t i = 0;
      for (auto e = it->begin(); e != it->end(); ++e, ++i)
        out += "    " + json(e.key()).dump() + ": " + e->dump() + (i + 1 < it->size() ? ",\n" : "\n");
      out += "  }";
    } else {
      out += it->dump();
    }
  }
  out += "\n}\n";
  return out;
}

Profile profile_from_json(const json& doc, const std::string& source) {
  const Reader r{source};
  if (!doc.is_object()) r.fail("top level must be a JSON object");
  const json& version = r.field(doc, "schema_version", "");
  if (!json_integer_in(version, kOldestProfileSchemaVersion, kProfileSchemaVersion))
    r.fail("field 'schema_version' must be " + std::to_string(kOldestProfileSchemaVersion) + " to " +
           std::to_string(kProfileSchemaVersion) + " (got " + version.dump() + ")");
  if (r.str(doc, "kind", "") != kProfileKind)
    r.fail("field 'kind' must be \"" + std::string(kProfileKind) + "\"");
  Profile p;
  p.gpu = read_gpu(r, r.object(doc, "gpu", ""));
  const json& b = r.object(doc, "build", "");
  p.build.compiler = r.str(b, "compiler", "build.", false);
  p.build.cuda_arch = r.str(b, "cuda_arch", "build.", false);
  p.build.git_commit = r.str(b, "git_commit", "build.", false);
  p.build.kernel_set = r.str(b, "kernel_set", "build.", false);
  p.build.extra = unknown_fields(b, {"compiler", "cuda_arch", "git_commit", "kernel_set"});
  const json& ws = r.array(doc, "workloads", "");
  std::set<std::string> names;
  for (std::size_t i = 0; i < ws.size(); ++i) {
    const std::string at = "workloads[" + std::to_string(i) + "].";
    if (!ws[i].is_object()) r.fail("field 'workloads[" + std::to_string(i) + "]' must be an object");
    NamedWorkload w;
    w.name = r.str(ws[i], "name", at);
    if (const auto why = name_problem(w.name)) r.fail("field '" + at + "name' " + *why);  // reaches the terminal
    w.workload.B = r.integer(ws[i], "B", at);
    w.workload.N = r.integer(ws[i], "N", at);
    w.workload.d = r.small_integer(ws[i], "d", at);
    const json& causal = r.field(ws[i], "causal", at);
    if (!causal.is_boolean()) r.fail("field '" + at + "causal' must be true or false");
    w.workload.causal = causal.get<bool>();
    if (const auto dt = ws[i].find("dtype"); dt != ws[i].end()) {
      const auto parsed = dt->is_string() ? parse_dtype(dt->get<std::string>()) : std::nullopt;
      if (!parsed) r.fail("field '" + at + "dtype' = " + dt->dump() + ": " + unknown_dtype_message(dt->is_string() ? dt->get<std::string>() : dt->dump()));
      w.workload.dtype = *parsed;
    }
    if (w.workload.B < 1 || w.workload.N < 1 || w.workload.d < 1) r.fail("field '" + at + "B/N/d' must be >= 1");
    if (r.optional_field(ws[i], "kv_len")) {
      w.workload.kv_len = r.integer(ws[i], "kv_len", at);
      if (w.workload.kv_len < 1)  // 0 means N in code; a file says N by leaving the field out
        r.fail("field '" + at + "kv_len' = " + std::to_string(w.workload.kv_len) + ": must be >= 1");
    }
    if (r.optional_field(ws[i], "kv_group")) w.workload.kv_group = r.small_integer(ws[i], "kv_group", at);
    if (!names.insert(w.name).second) r.fail("workload '" + w.name + "' listed twice");
    w.extra = unknown_fields(ws[i], {"name", "B", "N", "d", "causal", "dtype", "kv_len", "kv_group"});
    p.workloads.push_back(w);
  }
  const json& ms = r.array(doc, "measurements", "");
  DoneIndex seen;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const std::string at = "measurements[" + std::to_string(i) + "]";
    Measurement m = read_measurement(r, ms[i], at);
    if (!names.count(m.workload)) r.fail("field '" + at + ".workload' = '" + m.workload + "' is not in 'workloads'");
    if (seen.contains(m.workload, m.config))
      r.fail("field '" + at + "': (" + m.workload + ", " + m.config + ") measured twice");
    seen.insert(m.workload, m.config);
    p.measurements.push_back(std::move(m));
  }
  if (const json* c = r.optional_field(doc, "coefficients")) {
    if (!c->is_object()) r.fail("field 'coefficients' must be an object");
    p.coefficients = *c;
  }
  if (const json* t = r.optional_field(doc, "tune_settings")) p.tune_settings = *t;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    static const std::set<std::string> kOwn = {"schema_version", "kind", "gpu", "build", "workloads", "measurements",
                                               "best", "coefficients", "kernel_resources", "tune_settings"};
    if (!kOwn.count(it.key())) p.extra[it.key()] = *it;
  }
  check_profile_values(p, source);
  recompute_best(p);
  return p;
}

Profile load_profile(const std::string& path) {
  json doc;
  try {
    doc = read_json_file(path, "profile");  // strict: duplicate keys, 1e999, folders and FIFOs named
  } catch (const JsonFileError& e) {
    throw ProfileError(e.what());
  }
  Profile p = profile_from_json(doc, path);
  // A reader that does not fold the journal in says what it leaves out (profile_journal.h).
  note_pending_journal(path, p);
  return p;
}

void write_profile_atomic(const std::string& path, const Profile& p) {
  try {
    // A file (never a stream: its journal and lock sit beside it), in a folder that exists (no
    // writer creates folders: profile/output_file.h).
    StagedOutput::file_only(path, profile_text(p)).commit();
  } catch (const OutputError& e) {
    throw ProfileError(e.what());
  }
}

DoneIndex::DoneIndex(const Profile& p) {
  for (const Measurement& m : p.measurements) insert(m.workload, m.config);
}

bool DoneIndex::contains(const std::string& workload, const std::string& config) const {
  return done_.count({workload, config}) > 0;
}

void DoneIndex::insert(const std::string& workload, const std::string& config) { done_.insert({workload, config}); }

void add_workloads(Profile& p, const std::vector<NamedWorkload>& workloads) {
  for (const NamedWorkload& w : workloads) {
    bool found = false;
    for (const NamedWorkload& have : p.workloads) {
      if (have.name != w.name) continue;
      found = true;
      if (!same_dimensions(have.workload, w.workload))
        throw ProfileError("workload '" + w.name + "' is " + describe_workload(have.workload) +
                           " in the profile but " + describe_workload(w.workload) + " now (rename one of them)");
    }
    if (!found) p.workloads.push_back(w);
  }
}

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

}  // namespace flashtune
