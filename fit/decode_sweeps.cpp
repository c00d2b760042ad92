#include "fit/decode_sweeps.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "fit/decode_lines.h"
#include "kernels/traits/decode_traits.h"

#include "model/decode_model.h"

namespace flashtune::fit {

DecodeSweeps load_decode_sweeps(const std::vector<std::string>& paths, const model::GpuSpec& gpu) {
  DecodeSweeps out;
  out.data.gpu = gpu;
  out.data.catalog = std::make_shared<model::ConfigCatalog>();
  for (const std::string& path : paths) out.data.source += (out.data.source.empty() ? "" : ", ") + path;
  for_each_decode_line(paths, [&](const DecodeLine& line) {
    DecodeSweepPoint m;
    m.source = line.file;
    m.batch = line.j.at("batch").get<long long>();
    m.q_heads = line.j.at("q_heads").get<int>();
    m.kv_heads = line.j.at("kv_heads").get<int>();
    m.default_split = line.j.value("default_split", false);
    m.model_split = line.j.value("model_split", false);
    if (m.batch < 1 || m.kv_heads < 1 || m.q_heads % m.kv_heads != 0)
      throw FitInputError(line.where + ": q_heads must be a multiple of kv_heads");
    FitPoint p;
    p.workload = line.file + ":" + std::to_string(line.line_no);
    p.config = line.j.at("config").get<std::string>();
    p.c = line.config;
    p.w.B = m.batch * m.q_heads;
    p.w.N = line.j.at("nq").get<long long>();
    p.w.d = line.j.at("d").get<int>();
    p.w.dtype = line.config.dtype;
    p.w.kv_len = line.j.at("keys").get<long long>();
    p.w.kv_group = m.q_heads / m.kv_heads;
    p.splits = line.j.at("splits").get<int>();
    p.decode_run.evict_first = line.j.value("evict_first", false);
    // Timings from before the cluster combine carry no such field: their splits went through the
    // combine kernel. Where the field is, it says what a launch of 2..16 splits did; at other
    // splits the traits' rule (no cluster) holds, and the shape's split pick follows it.
    m.records_combine = line.j.contains("cluster_combine");
    if (!m.records_combine)
      p.decode_run.cluster_combine = false;
    else if (p.splits >= 2 && p.splits <= traits::Decode::kMaxClusterSplits)
      p.decode_run.cluster_combine = line.j.at("cluster_combine").get<bool>();
    const std::string flush = line.j.value("flush", std::string("write"));
    if (flush != "write" && flush != "read") throw FitInputError(line.where + ": flush must be write or read, got '" + flush + "'");
    p.decode_run.dirty_l2 = flush == "write";
    p.measured_s = line.j.at("median_ms").get<double>() * 1e-3;
    p.geometry = &out.data.catalog->analysis(line.config);
    if (!(p.measured_s > 0) || p.splits < 1) throw FitInputError(line.where + ": needs median_ms > 0 and splits >= 1");
    const model::DecodePrediction pred = model::predict_decode(p.w, p.c, gpu, model::Coefficients{}, p.splits, p.decode_run);
    if (!pred.refusal.empty()) throw FitInputError(line.where + ": " + pred.refusal);
    out.data.points.push_back(std::move(p));
    out.meta.push_back(m);
  });
  if (out.data.points.empty()) throw FitInputError(out.data.source + ": no decode timing");
  return out;
}

DecodeScore score_decode(const DecodeSweeps& s, const model::GpuSpec& gpu, const model::Coefficients& k) {
  DecodeScore r;
  double ape = 0;
  std::map<std::string, std::pair<double, int>> by_dtype;
  // A swept shape: the file, the shape and the config; its measured times by split.
  // Every timing of the config counts at its split, the default split's too: the benchmark's sweep
  // steps past some splits (1..8, then x 5/4) that the default (one wave) or the model's pick may
  // land on, and judging a pick by the next swept split instead measured the model at a split it
  // did not choose (16 splits of 8 K/V heads, 128 blocks in one wave, scored at 18: two waves).
  // Repeated timings of one split are averaged. Only configs the benchmark swept are scored (at
  // least two splits beside the default and the model's pick).
  using Key = std::tuple<std::string, long long, int, int, long long, long long, int, std::string>;
  std::map<Key, std::map<int, std::pair<double, int>>> sweeps;
  std::map<Key, int> swept_splits;
  std::map<Key, const FitPoint*> first;
  std::map<Key, const DecodeSweepPoint*> first_meta;
  for (std::size_t i = 0; i < s.data.points.size(); ++i) {
    const FitPoint& p = s.data.points[i];
    const DecodeSweepPoint& m = s.meta[i];
    const double t = model::predict_decode(p.w, p.c, gpu, k, p.splits, p.decode_run).time_s;
    const double e = std::abs(t - p.measured_s) / p.measured_s;
    ape += e;
    auto& d = by_dtype[dtype_name(p.c.dtype)];
    d.first += e;
    ++d.second;
    const Key key{m.source, m.batch, m.q_heads, m.kv_heads, p.w.N, p.w.keys(), p.w.d, p.config};
    auto& at = sweeps[key][p.splits];
    at.first += p.measured_s * 1e3;
    ++at.second;
    if (!m.default_split && !m.model_split) ++swept_splits[key];
    first.emplace(key, &p);
    first_meta.emplace(key, &m);
  }
  r.timings = static_cast<int>(s.data.points.size());
  r.mape = r.timings > 0 ? ape / r.timings : 0;
  for (const auto& [name, v] : by_dtype) r.mape_by_dtype.emplace_back(name, v.first / v.second);
  for (const auto& [key, timings] : sweeps) {
    if (swept_splits[key] < 2) continue;
    std::map<int, double> by_split;
    for (const auto& [splits, sum] : timings) by_split[splits] = sum.first / sum.second;
    const FitPoint& p = *first.at(key);
    DecodeShapeScore sc;
    const auto& [source, batch, hq, hkv, nq, keys, d, config] = key;
    char label[256];
    std::snprintf(label, sizeof label, "%s %lldx%d/%d heads Nq %lld keys %lld d %d %s", source.c_str(), batch, hq, hkv,
                  nq, keys, d, config.c_str());
    sc.label = label;
    sc.source = source;
    sc.config = config;
    sc.batch = batch, sc.q_heads = hq, sc.kv_heads = hkv, sc.nq = nq, sc.keys = keys, sc.d = d;
    sc.dtype = p.c.dtype;
    sc.bytes = double(dtype_bytes(p.c.dtype)) * d * (2.0 * batch * hq * nq + 2.0 * batch * hkv * keys);
    // The pick runs the launch's rule at every split: one timing's combine (the default split's, say,
    // which could not run in clusters) says nothing about the others'.
    model::DecodeRunState pick_run = p.decode_run;
    if (first_meta.at(key)->records_combine) pick_run.cluster_combine.reset();
    const model::DecodePrediction pick = model::pick_decode_splits(p.w, p.c, gpu, k, pick_run);
    sc.model_splits = pick.splits;
    sc.model_ms = pick.time_s * 1e3;
    sc.best_ms = 1e300;
    for (const auto& [splits, ms] : by_split)
      if (ms < sc.best_ms) sc.best_ms = ms, sc.best_splits = splits;
    auto at = by_split.lower_bound(sc.model_splits);
    if (at == by_split.end()) --at;
    sc.measured_at = at->first;
    sc.at_ms = at->second;
    sc.regret = sc.at_ms / sc.best_ms - 1.0;
    r.within5 += sc.regret <= 0.05;
    r.within10 += sc.regret <= 0.10;
    r.worst = std::max(r.worst, sc.regret);
    r.shapes.push_back(sc);
  }
  return r;
}

std::string render_decode_score(const DecodeScore& r, bool per_shape) {
  std::string out;
  char buf[512];
  if (per_shape)
    for (const DecodeShapeScore& s : r.shapes) {
      std::snprintf(buf, sizeof buf, "  %s: model splits %d (measured at %d: %.4f ms), best %d: %.4f ms (+%.1f%%)\n",
                    s.label.c_str(), s.model_splits, s.measured_at, s.at_ms, s.best_splits, s.best_ms, 100 * s.regret);
      out += buf;
    }
  std::string dtypes;
  for (const auto& [name, m] : r.mape_by_dtype) {
    std::snprintf(buf, sizeof buf, "%s%s %.1f%%", dtypes.empty() ? "" : ", ", name.c_str(), 100 * m);
    dtypes += buf;
  }
  const int n = static_cast<int>(r.shapes.size());
  std::snprintf(buf, sizeof buf,
                "decode model on %d timings: MAPE %.1f%% (%s); model's split within 5%% of the measured best on %d/%d "
                "swept shapes (%.0f%%), within 10%% on %d, worst +%.1f%%\n",
                r.timings, 100 * r.mape, dtypes.c_str(), r.within5, n, n > 0 ? 100.0 * r.within5 / n : 0.0, r.within10,
                100 * r.worst);
  out += buf;
  return out;
}

nlohmann::ordered_json decode_score_json(const DecodeScore& r) {
  nlohmann::ordered_json j = {{"timings", r.timings}, {"mape", r.mape}};
  auto& by = j["mape_by_dtype"] = nlohmann::ordered_json::object();
  for (const auto& [name, m] : r.mape_by_dtype) by[name] = m;
  j["shapes_scored"] = r.shapes.size();
  j["within5"] = r.within5;
  j["within10"] = r.within10;
  j["worst"] = r.worst;
  auto& shapes = j["shapes"] = nlohmann::ordered_json::array();
  for (const DecodeShapeScore& s : r.shapes)
    shapes.push_back({{"label", s.label},     {"model_splits", s.model_splits}, {"measured_at", s.measured_at},
                      {"best_splits", s.best_splits}, {"at_ms", s.at_ms},     {"best_ms", s.best_ms},
                      {"regret", s.regret}});
  return j;
}

std::string decode_residuals_csv(const DecodeSweeps& s, const model::GpuSpec& gpu, const model::Coefficients& k) {
  std::ostringstream out;
  out << "timing,batch,q_heads,kv_heads,nq,keys,d,dtype,config,splits,cluster_combine,flush,measured_ms,predicted_ms,"
         "error\n";
  for (std::size_t i = 0; i < s.data.points.size(); ++i) {
    const FitPoint& p = s.data.points[i];
    const DecodeSweepPoint& m = s.meta[i];
    const model::DecodePrediction pred = model::predict_decode(p.w, p.c, gpu, k, p.splits, p.decode_run);
    const double t = pred.time_s;
    out << p.workload << ',' << m.batch << ',' << m.q_heads << ',' << m.kv_heads << ',' << p.w.N << ',' << p.w.keys()
        << ',' << p.w.d << ',' << dtype_name(p.c.dtype) << ',' << p.config << ',' << p.splits << ','
        << (pred.cluster_combine ? 1 : 0) << ',' << (p.decode_run.dirty_l2 ? "write" : "read") << ',' << p.measured_s * 1e3 << ','
        << t * 1e3 << ',' << (t - p.measured_s) / p.measured_s << '\n';
  }
  return out.str();
}

std::vector<std::string> default_decode_free_coefficients() {
  return {"stream_dram_efficiency", "stream_knee_blocks",   "cold_l2_dirty_fraction",
          "decode_block_cycles",    "combine_cycles",       "combine_split_cycles", "decode_copy_cycles",
          "cluster_combine_cycles"};
}

}  // namespace flashtune::fit
