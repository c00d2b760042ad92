#include "profile/export.h"

#include <cstdio>
#include <set>
#include <sstream>

namespace flashtune {
namespace {

using nlohmann::ordered_json;

// RFC 4180: quote a field holding a comma, a quote or a line break; double the quotes.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

// An empty cell for what the measurement did not record.
std::string number(const std::optional<double>& x) { return x ? number(*x) : std::string(); }
std::string number(const std::optional<int>& x) { return x ? std::to_string(*x) : std::string(); }

const NamedWorkload* find_workload(const Profile& p, const std::string& name) {
  for (const NamedWorkload& w : p.workloads)
    if (w.name == name) return &w;
  return nullptr;
}

}  // namespace

const char* t4_invalidity(const std::string& s) {
  if (s == status::kOk) return "correct";
  if (s == status::kCompile) return "compile";
  if (s == status::kLaunch) return "runtime";
  if (s == status::kResources) return "constraints";
  if (s == status::kWrongResult) return "correctness";
  return "runtime";
}

std::string profile_to_csv(const Profile& p) {
  std::set<std::string> counter_names;
  for (const Measurement& m : p.measurements)
    for (const auto& kv : m.counters) counter_names.insert(kv.first);
  std::ostringstream out;
  out << "gpu,workload,B,N,d,causal,dtype,kv_len,kv_group,config,variant,Br,Bc,layout,stages,q_smem,status,reason,rel_l2,max_abs,median_ms,min_ms,mean_ms,"
         "stdev_ms,rel_stdev,samples,dropped,sm_clock_mhz,tflops,registers,static_smem,dynamic_smem,local_bytes,"
         "threads,best,counters_status";
  for (const std::string& c : counter_names) out << "," << csv_field(c);
  out << "\n";
  for (const Measurement& m : p.measurements) {
    const NamedWorkload* w = find_workload(p, m.workload);
    const auto tile = parse_config_name(m.config);
    out << csv_field(p.gpu.spec) << "," << csv_field(m.workload) << ",";
    if (w)
      out << w->workload.B << "," << w->workload.N << "," << w->workload.d << "," << (w->workload.causal ? 1 : 0) << ","
          << dtype_name(w->workload.dtype) << "," << w->workload.keys() << "," << w->workload.kv_group << ",";
    else
      out << ",,,,,,,";
    out << csv_field(m.config) << ",";
    if (tile)
      out << variant_name(tile->variant) << "," << tile->Br << "," << tile->Bc << "," << layout_name(tile->layout) << ","
          << tile->stages << "," << (tile->q_smem ? 1 : 0) << ",";
    else
      out << ",,,,,,";
    out << m.status << "," << csv_field(m.reason) << ",";
    if (m.verify)
      out << number(m.verify->rel_l2) << "," << number(m.verify->max_abs) << ",";
    else
      out << ",,";
    if (m.timing) {
      const TimingSummary& t = *m.timing;
      const double tflops = w && t.median_ms > 0 ? w->workload.nominal_flops() / (t.median_ms * 1e-3) / 1e12 : 0;
      out << number(t.median_ms) << "," << number(t.min_ms) << "," << number(t.mean_ms) << "," << number(t.stdev_ms)
          << "," << number(t.rel_stdev) << "," << number(t.samples) << "," << number(t.dropped) << ","
          << (t.sm_clock_mhz > 0 ? number(t.sm_clock_mhz) : std::string()) << ","
          << number(tflops) << ",";
    } else {
      out << ",,,,,,,,,";
    }
    if (m.resources) {
      const ResourceUsage& r = *m.resources;
      out << r.registers << "," << r.static_smem << "," << r.dynamic_smem << "," << r.local_bytes << "," << r.threads
          << ",";
    } else {
      out << ",,,,,";
    }
    const auto best = p.best.find(m.workload);
    out << (best != p.best.end() && best->second.config == m.config ? 1 : 0) << "," << csv_field(m.counters_status);
    for (const std::string& c : counter_names) {
      const auto it = m.counters.find(c);
      out << "," << (it == m.counters.end() ? std::string() : number(it->second));
    }
    out << "\n";
  }
  return out.str();
}

ordered_json profile_to_t4(const Profile& p) {
  ordered_json results = ordered_json::array();
  for (const Measurement& m : p.measurements) {
    const NamedWorkload* w = find_workload(p, m.workload);
    const auto tile = parse_config_name(m.config);
    ordered_json r;
    r["timestamp"] = m.timestamp;
    // The configuration is the point of the search space plus the workload it was measured on, so
    // that one T4 file can hold a whole multi-workload sweep.
    ordered_json conf = {{"workload", m.workload}};
    if (w) {
      conf["B"] = w->workload.B;
      conf["N"] = w->workload.N;
      conf["d"] = w->workload.d;
      conf["causal"] = w->workload.causal;
      conf["dtype"] = dtype_name(w->workload.dtype);
      conf["kv_len"] = w->workload.keys();
      conf["kv_group"] = w->workload.kv_group;
    }
    if (tile) {
      conf["variant"] = variant_name(tile->variant);
      conf["Br"] = tile->Br;
      conf["Bc"] = tile->Bc;
      conf["layout"] = layout_name(tile->layout);
      conf["stages"] = tile->stages;
      conf["q_smem"] = tile->q_smem;
      conf["overlap"] = tile->overlap;
      conf["ping_pong"] = tile->ping_pong;
      conf["persistent"] = tile->persistent;
    }
    conf["config"] = m.config;
    r["configuration"] = conf;
    r["objectives"] = ordered_json::array({"time"});
    ordered_json times = ordered_json::object();
    // Kernels are compiled ahead of time: no compilation in the tune.
    times["compilation_time"] = 0;
    times["runtimes"] = m.timing ? ordered_json(m.timing->samples_ms) : ordered_json::array();
    times["framework"] = m.elapsed_s;
    r["times"] = times;
    r["invalidity"] = t4_invalidity(m.status);
    r["correctness"] = m.status == status::kOk ? 1 : 0;
    ordered_json ms = ordered_json::array();
    auto add = [&ms](const std::string& name, const ordered_json& value, const std::string& unit) {
      ms.push_back({{"name", name}, {"value", value}, {"unit", unit}});
    };
    if (m.timing) {
      add("time", m.timing->median_ms, "ms");
      // What the measurement did not record is left out rather than reported as 0.
      if (m.timing->min_ms) add("time_min", *m.timing->min_ms, "ms");
      if (m.timing->mean_ms) add("time_mean", *m.timing->mean_ms, "ms");
      if (m.timing->stdev_ms) add("time_stdev", *m.timing->stdev_ms, "ms");
      if (m.timing->samples) add("samples", *m.timing->samples, "");
      if (m.timing->sm_clock_mhz > 0) add("sm_clock", m.timing->sm_clock_mhz, "MHz");
      if (w && m.timing->median_ms > 0)
        add("GFLOP/s", w->workload.nominal_flops() / (m.timing->median_ms * 1e-3) / 1e9, "GFLOP/s");
    }
    if (m.verify) add("rel_l2_error", m.verify->rel_l2, "");
    if (m.resources) {
      add("registers", m.resources->registers, "");
      add("shared_memory", m.resources->static_smem + m.resources->dynamic_smem, "bytes");
      add("local_memory", m.resources->local_bytes, "bytes");
      add("threads", m.resources->threads, "");
    }
    for (const auto& [name, value] : m.counters) add(name, value, "");
    if (!m.reason.empty()) add("reason", m.reason, "");
    r["measurements"] = ms;
    results.push_back(r);
  }
  ordered_json doc;
  doc["schema_version"] = "1.0.0";
  doc["results"] = results;
  return doc;
}

}  // namespace flashtune
