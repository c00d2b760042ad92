#include "fit/fit_run.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "model/prediction_json.h"
#include "profile/model_profile.h"
#include "profile/profile.h"

namespace flashtune::fit {
namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// snprintf into a string of the length it needs: a long label or a huge error must not cut the
// row (a 256-byte buffer dropped the line break of long rows).
std::string formatted(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string formatted(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string out(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, format, again);
  va_end(again);
  return out;
}

// A model that predicts every config of a workload alike (the roofline) has no rank order:
// its Spearman is undefined, shown as "-" rather than "nan".
std::string spearman_cell(double rho, int width) {
  return std::isfinite(rho) ? formatted("%*.3f", width, rho) : std::string(std::size_t(width - 1), ' ') + "-";
}

std::string row_text(const std::string& label, const AccuracyMetrics& m) {
  return formatted("  %-44s %6d %7.1f %7.1f %8.1f ", label.c_str(), m.points, m.mape, m.median_ape, m.max_ape) +
         spearman_cell(m.median_spearman, 8) + " " + spearman_cell(m.min_spearman, 7) +
         formatted(" %8.1f %8.1f\n", m.median_regret, m.max_regret);
}

nlohmann::ordered_json metrics_json(const AccuracyMetrics& m) {
  return {{"points", m.points},
          {"workloads", m.workloads},
          {"mape_pct", m.mape},
          {"median_ape_pct", m.median_ape},
          {"max_ape_pct", m.max_ape},
          {"worst_point", m.worst_ape_point},
          {"median_spearman", m.median_spearman},
          {"min_spearman", m.min_spearman},
          {"median_regret_pct", m.median_regret},
          {"max_regret_pct", m.max_regret},
          {"worst_regret_workload", m.worst_regret_workload}};
}

// The points of fp32-accurate configs (SIMT and mma_3xtf32): what the dispatcher picks among by
// default (--precision fp32).
std::vector<ScoredPoint> fp32_accurate(const std::vector<ScoredPoint>& points) {
  std::vector<ScoredPoint> out;
  for (const ScoredPoint& p : points)
    if (variant_precision(*parse_variant(p.variant)) == Precision::Fp32) out.push_back(p);
  return out;
}

// The element-type family of a point ("fp32" or "16-bit"), from its config name.
const char* dtype_family_of_point(const ScoredPoint& p) {
  const std::optional<TileConfig> c = parse_config_name(p.config);
  return dtype_family_of(c ? c->dtype : DType::Fp32);
}

std::vector<ScoredPoint> of_dtype_family(const std::vector<ScoredPoint>& points, const std::string& family) {
  std::vector<ScoredPoint> out;
  for (const ScoredPoint& p : points)
    if (dtype_family_of_point(p) == family) out.push_back(p);
  return out;
}

void note_incomplete(FitRun& r, const CrossValidation& cv) {
  r.incomplete_folds.insert(r.incomplete_folds.end(), cv.incomplete.begin(), cv.incomplete.end());
}

}  // namespace

FitRun run_fit(const FitRunOptions& o, const std::function<void(const std::string&)>& progress) {
  check_coefficient_names(o.free);
  FitRun r;
  r.data = load_fit_dataset(o.profile, o.spec_dir);
  for (const std::string& with : o.with_profiles) join_fit_datasets(r.data, load_fit_dataset(with, o.spec_dir));
  keep_variants(r.data, o.variants);
  const FitDataset& ds = r.data;
  const model::Coefficients defaults;
  progress("fitting " + std::to_string(o.free.size()) + " coefficients to " + std::to_string(ds.points.size()) +
           " measurements");
  try {
    r.fit = fit_coefficients(ds.all(), ds.gpu, defaults, o.free);
  } catch (const std::invalid_argument& e) {  // too few measurements: say which profile
    throw std::invalid_argument(o.profile + ": " + e.what());
  }

  r.scores.push_back({"flashtune model, spec only (default coefficients)", score(score_points(ds, Predictor::Model, defaults))});
  r.in_sample = score_points(ds, Predictor::Model, r.fit.coefficients);
  r.scores.push_back({"flashtune model, fitted, in-sample", score(r.in_sample)});
  if (o.cv_workload) {
    progress("leave-one-workload-out: " + std::to_string(ds.workload_names().size()) + " folds");
    const CrossValidation cv = cross_validate(ds, Holdout::Workload, defaults, o.free, progress);
    note_incomplete(r, cv);
    if (!cv.held_out.empty()) r.scores.push_back({"flashtune model, leave-one-workload-out", score(cv.held_out)});
    // What the dispatcher chooses among by default (--precision fp32): TF32-only configs left out.
    const std::vector<ScoredPoint> fp32 = fp32_accurate(cv.held_out);
    if (fp32.size() != cv.held_out.size() && !fp32.empty())
      r.scores.push_back({"  the same, fp32-accurate configs only", score(fp32)});
    // A profile of both element types: each family's share of the same held-out points.
    for (const char* family : {"fp32", "16-bit"}) {
      const std::vector<ScoredPoint> part = of_dtype_family(cv.held_out, family);
      if (!part.empty() && part.size() != cv.held_out.size())
        r.scores.push_back({std::string("  the same, ") + family + " pairs only", score(part)});
    }
    r.held_out_workloads = per_workload(cv.held_out);
    r.held_out = cv.held_out;
    r.guided = evaluate_guided(cv.held_out, default_top_k());
  }
  if (o.cv_variant) {
    progress("leave-one-variant-out");
    const CrossValidation cv = cross_validate(ds, Holdout::Variant, defaults, o.free, progress);
    note_incomplete(r, cv);
    if (!cv.held_out.empty()) r.scores.push_back({"flashtune model, leave-one-variant-out", score(cv.held_out)});
    // Each variant held out on its own row: a new family's figure, fitted on the others alone.
    std::set<std::string> variants;
    for (const ScoredPoint& p : cv.held_out) variants.insert(p.variant);
    if (variants.size() > 1)
      for (const std::string& v : variants) {
        std::vector<ScoredPoint> part;
        for (const ScoredPoint& p : cv.held_out)
          if (p.variant == v) part.push_back(p);
        r.scores.push_back({"  " + v + " held out (fitted on the other variants)", score(part)});
      }
  }
  std::set<std::string> families;
  for (const FitPoint& p : ds.points) families.insert(family_of(p.c.variant));
  if (o.cv_family && families.size() > 1) {
    // The new pipe's test: the coefficients fitted on the SIMT variants alone predict the
    // tensor-core family (tensor_efficiency then keeps its start value, see docs/fit.md), and
    // the other way round.
    progress("leave-one-family-out: 2 folds");
    const CrossValidation cv = cross_validate(ds, Holdout::Family, defaults, o.free, progress);
    note_incomplete(r, cv);
    for (const char* held : {"tensor-core", "simt"}) {
      std::vector<ScoredPoint> part;
      for (const ScoredPoint& p : cv.held_out)
        if (family_of(*parse_variant(p.variant)) == std::string(held)) part.push_back(p);
      if (!part.empty()) r.scores.push_back({std::string("flashtune model, ") + held + " family held out", score(part)});
    }
  }
  std::set<std::string> dtype_families;
  for (const FitPoint& p : ds.points) dtype_families.insert(dtype_family_of(p.w.dtype));
  if (o.cv_dtype && dtype_families.size() > 1) {
    // Issue 24's test of the 16-bit family: every coefficient fitted on the fp32 pairs alone, the
    // 16-bit pairs predicted; and the other way round.
    progress("leave-one-dtype-family-out: 2 folds");
    const CrossValidation cv = cross_validate(ds, Holdout::Dtype, defaults, o.free, progress);
    note_incomplete(r, cv);
    for (const auto& [held, trained] : {std::pair{"16-bit", "fp32"}, std::pair{"fp32", "16-bit"}}) {
      const std::vector<ScoredPoint> part = of_dtype_family(cv.held_out, held);
      if (!part.empty())
        r.scores.push_back({std::string("flashtune model, ") + held + " family held out (fitted on " + trained + ")",
                            score(part)});
    }
  }
  r.scores.push_back({"roofline", score(score_points(ds, Predictor::Roofline, defaults))});
  r.scores.push_back({"seed model", score(score_points(ds, Predictor::Seed, defaults))});

  for (const std::string& other : o.cross_profiles) {
    progress("predicting " + other);
    FitDataset od = load_fit_dataset(other, o.spec_dir);
    keep_variants(od, o.variants);
    CrossGpuRow row;
    row.profile = other;
    row.spec = od.gpu.name;
    row.fitted = score(score_points(od, Predictor::Model, r.fit.coefficients));
    row.spec_only = score(score_points(od, Predictor::Model, defaults));
    r.cross.push_back(row);
  }
  for (const std::string& path : o.unseen_profiles) {
    progress("scoring the unseen set " + path);
    FitDataset ud = load_fit_dataset(path, o.spec_dir);
    keep_variants(ud, o.variants);
    const std::vector<ScoredPoint> all = score_points(ud, Predictor::Model, r.fit.coefficients);
    // Both what a tune with --precision tf32 ranks and what the dispatcher picks among by default.
    for (const bool fp32_only : {false, true}) {
      UnseenRow row;
      row.profile = path;
      row.spec = ud.gpu.name;
      row.configs = fp32_only ? "fp32-accurate configs" : "all configs";
      const std::vector<ScoredPoint> points = fp32_only ? fp32_accurate(all) : all;
      if (points.empty()) continue;
      row.m = score(points);
      const std::vector<GuidedResult> g = evaluate_guided(points, {{"K=3", 3, 0}, {"top 5%", 0, 0.05}});
      row.top3 = g[0];
      row.top5pct = g[1];
      row.workloads = per_workload(points);
      if (!fp32_only) row.points = points;
      r.unseen.push_back(row);
    }
  }
  return r;
}

std::string render_text(const FitRun& r) {
  std::ostringstream out;
  const FitDataset& ds = r.data;
  std::set<std::string> variants;
  for (const FitPoint& p : ds.points) variants.insert(variant_name(p.c.variant));
  out << "profile " << ds.source << " (" << ds.gpu.name << "): " << ds.points.size() << " ok measurements, "
      << ds.workload_names().size() << " workloads, " << variants.size() << " variants";
  if (!ds.skipped.empty()) out << ", " << ds.skipped.size() << " refused by the model (left out)";
  out << "\n\nfit: " << r.fit.free.size() << " coefficients, " << r.fit.evaluations << " model sweeps, " << r.fit.status
      << "\n  rms log error " << fixed(r.fit.rms_log_start, 4) << " (defaults) -> " << fixed(r.fit.rms_log_end, 4)
      << "\n";
  for (const std::string& name : r.fit.uninformed)
    out << "  " << name << " kept at its start value: no measurement of a kernel that uses it\n";
  const model::Coefficients defaults;
  for (const model::CoefficientInfo& ci : model::coefficient_table()) {
    const bool is_free = std::find(r.fit.free.begin(), r.fit.free.end(), ci.name) != r.fit.free.end();
    out << formatted("  %-26s %12.5g -> %12.5g%s\n", ci.name, defaults.*(ci.member), r.fit.coefficients.*(ci.member),
                     is_free ? "" : "   (fixed)");
  }
  out << "\naccuracy (APE and regret in %; Spearman per workload)\n"
      << "  " << std::string(44, ' ') << " points    MAPE  medAPE   maxAPE  rho med  rho min  regret med  max\n";
  for (const ScoreRow& s : r.scores) out << row_text(s.label, s.m);
  for (const std::string& f : r.incomplete_folds) out << "  incomplete: " << f << "\n";
  if (!r.guided.empty()) {
    out << "\nmodel-guided tuning (rank by the leave-one-workload-out model, measure the top K)\n"
        << "  rule        measured   regret med   regret max   within 2% of best\n";
    for (const GuidedResult& g : r.guided) {
      out << formatted("  %-10s %8.1f%% %11.2f%% %11.2f%%   %d of %d\n", g.rule.label.c_str(), 100.0 * g.share_measured,
                       g.median_regret, g.max_regret, g.within_2pct, g.workloads);
    }
  }
  if (!r.held_out_workloads.empty()) {
    out << "\nper workload (leave-one-workload-out): regret of the model's pick, Spearman\n";
    for (const WorkloadRegret& w : r.held_out_workloads) {
      // Workload and config names are the profile's, of any length: no fixed buffer.
      out << formatted("  %-26s %6.1f%%  rho %6.3f  pick %s%s\n", w.workload.c_str(), 100.0 * w.regret, w.spearman,
                       w.pick.c_str(), w.pick == w.best ? " (the best)" : ("; best " + w.best).c_str());
    }
  }
  if (!r.cross.empty()) {
    out << "\nacross GPUs (coefficients fitted on " << ds.gpu.name << ")\n";
    for (const CrossGpuRow& c : r.cross) {
      out << row_text(c.spec + ", fitted here", c.fitted);
      out << row_text(c.spec + ", spec only", c.spec_only);
    }
  }
  for (const UnseenRow& u : r.unseen) {
    out << "\nunseen workloads, " << u.configs << " (" << u.profile << ", " << u.spec << "; coefficients fitted on "
        << ds.gpu.name << ")\n";
    out << row_text("model, fitted here", u.m);
    out << formatted(
        "  top-1 regret max %.1f%% (%s); top-3 regret max %.1f%% (%s); top 5%% within 2%% of the best on %d of %d\n",
        u.m.max_regret, u.m.worst_regret_workload.c_str(), u.top3.max_regret, u.top3.worst_workload.c_str(),
        u.top5pct.within_2pct, u.top5pct.workloads);
    for (const WorkloadRegret& w : u.workloads)
      out << formatted("  %-28s %6.1f%%  rho %6.3f  pick %s%s\n", w.workload.c_str(), 100.0 * w.regret, w.spearman,
                       w.pick.c_str(), w.pick == w.best ? " (the best)" : ("; best " + w.best).c_str());
  }
  return out.str();
}

nlohmann::ordered_json render_json(const FitRun& r) {
  nlohmann::ordered_json j;
  j["profile"] = r.data.source;
  j["gpu"] = r.data.gpu.name;
  j["points"] = r.data.points.size();
  j["skipped"] = r.data.skipped;
  j["fit"] = {{"free", r.fit.free},
              {"uninformed", r.fit.uninformed},
              {"status", r.fit.status},
              {"evaluations", r.fit.evaluations},
              {"rms_log_start", r.fit.rms_log_start},
              {"rms_log_end", r.fit.rms_log_end},
              {"coefficients", model::coefficients_json(r.fit.coefficients)}};
  auto& scores = j["accuracy"] = nlohmann::ordered_json::array();
  for (const ScoreRow& s : r.scores) {
    auto row = metrics_json(s.m);
    row["model"] = s.label;
    scores.push_back(row);
  }
  j["incomplete_folds"] = r.incomplete_folds;
  auto& guided = j["guided"] = nlohmann::ordered_json::array();
  for (const GuidedResult& g : r.guided)
    guided.push_back({{"rule", g.rule.label},
                      {"share_measured", g.share_measured},
                      {"median_regret_pct", g.median_regret},
                      {"max_regret_pct", g.max_regret},
                      {"within_2pct", g.within_2pct},
                      {"workloads", g.workloads},
                      {"worst_workload", g.worst_workload}});
  auto& wl = j["held_out_workloads"] = nlohmann::ordered_json::array();
  for (const WorkloadRegret& w : r.held_out_workloads)
    wl.push_back({{"workload", w.workload}, {"pick", w.pick}, {"best", w.best}, {"regret", w.regret},
                  {"spearman", w.spearman}, {"configs", w.configs}});
  auto& cross = j["cross_gpu"] = nlohmann::ordered_json::array();
  for (const CrossGpuRow& c : r.cross)
    cross.push_back({{"profile", c.profile}, {"gpu", c.spec}, {"fitted", metrics_json(c.fitted)},
                     {"spec_only", metrics_json(c.spec_only)}});
  auto& unseen = j["unseen"] = nlohmann::ordered_json::array();
  for (const UnseenRow& u : r.unseen) {
    auto& row = unseen.emplace_back(
        nlohmann::ordered_json{{"profile", u.profile}, {"gpu", u.spec}, {"configs", u.configs}});
    row["accuracy"] = metrics_json(u.m);
    row["top3_max_regret_pct"] = u.top3.max_regret;
    row["top3_worst_workload"] = u.top3.worst_workload;
    row["top5pct_within_2pct"] = u.top5pct.within_2pct;
    row["workloads"] = u.top5pct.workloads;
    auto& per_workload = row["per_workload"] = nlohmann::ordered_json::array();
    for (const WorkloadRegret& w : u.workloads)
      per_workload.push_back({{"workload", w.workload}, {"pick", w.pick}, {"best", w.best}, {"regret", w.regret},
                    {"spearman", w.spearman}, {"configs", w.configs}});
  }
  return j;
}

std::string residuals_csv(const FitRun& r) {
  std::map<std::pair<std::string, std::string>, double> held;
  for (const ScoredPoint& p : r.held_out) held[{p.workload, p.config}] = p.predicted_s;
  std::ostringstream out;
  out << "workload,config,variant,measured_ms,predicted_ms,held_out_ms,set\n";
  for (const ScoredPoint& p : r.in_sample) {
    auto h = held.find({p.workload, p.config});
    out << p.workload << ',' << p.config << ',' << p.variant << ',' << p.measured_s * 1e3 << ',' << p.predicted_s * 1e3
        << ',';
    if (h != held.end()) out << h->second * 1e3;
    out << ",fit\n";
  }
  for (const UnseenRow& u : r.unseen)
    for (const ScoredPoint& p : u.points)
      out << p.workload << ',' << p.config << ',' << p.variant << ',' << p.measured_s * 1e3 << ',' << p.predicted_s * 1e3
          << ',' << p.predicted_s * 1e3 << ",unseen\n";
  return out.str();
}

void write_coefficients(const std::string& profile_path, const FitRun& r) {
  Profile p = load_profile(profile_path);
  set_coefficients(p, r.fit.coefficients);
  nlohmann::ordered_json summary = {{"timestamp", utc_timestamp()},
                                    {"free", r.fit.free},
                                    {"points", r.data.points.size()},
                                    {"rms_log_error", r.fit.rms_log_end}};
  for (const ScoreRow& s : r.scores)
    if (s.label.find("leave-one-workload-out") != std::string::npos) summary["leave_one_workload_out"] = metrics_json(s.m);
  p.extra["fit"] = summary;
  write_profile_atomic(profile_path, p);
}

}  // namespace flashtune::fit
