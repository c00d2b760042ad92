#include "fit/fit_dataset.h"

#include <algorithm>
#include <map>
#include <set>

#include "kernels/traits/decode_traits.h"
#include "model/occupancy.h"
#include "model/predict.h"

namespace flashtune::fit {

std::vector<std::string> FitDataset::workload_names() const {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const FitPoint& p : points)
    if (seen.insert(p.workload).second) names.push_back(p.workload);
  return names;
}

std::vector<const FitPoint*> FitDataset::all() const {
  std::vector<const FitPoint*> out;
  out.reserve(points.size());
  for (const FitPoint& p : points) out.push_back(&p);
  return out;
}

FitDataset make_fit_dataset(const Profile& p, const std::string& source, const model::GpuSpec& gpu) {
  FitDataset ds;
  ds.source = source;
  ds.gpu = gpu;
  ds.catalog = std::make_shared<model::ConfigCatalog>();
  std::map<std::string, Workload> workloads;
  for (const NamedWorkload& nw : p.workloads) workloads[nw.name] = nw.workload;
  for (const Measurement& m : p.measurements) {
    if (m.status != status::kOk || !m.timing || !(m.timing->median_ms > 0)) continue;
    auto w = workloads.find(m.workload);
    if (w == workloads.end())
      throw FitInputError(source + ": measurement of workload '" + m.workload + "' that the profile does not list");
    const std::optional<TileConfig> c = parse_config_name(m.config);
    if (!c) throw FitInputError(source + ": config name '" + m.config + "' does not parse");
    if (auto why = model::config_rejection(*c, w->second)) {
      ds.skipped.push_back(m.workload + " " + m.config + ": " + *why);
      continue;
    }
    if (auto why = model::instruction_set_refusal(*c, gpu)) {
      ds.skipped.push_back(m.workload + " " + m.config + ": " + *why);
      continue;
    }
    FitPoint pt;
    pt.workload = m.workload;
    pt.config = m.config;
    pt.w = w->second;
    pt.c = *c;
    pt.geometry = &ds.catalog->analysis(*c);
    // A profile's decode measurement ran KernelInstance::launch: the traits' default split.
    if (c->variant == Variant::Decode)
      pt.splits = traits::Decode::default_splits(*c, pt.w.B / pt.w.kv_group, pt.w.kv_group, pt.w.kv_group, pt.w.N,
                                                 pt.w.keys(), gpu.sm_count);
    pt.registers = m.resources ? m.resources->registers : 0;
    pt.measured_s = m.timing->median_ms * 1e-3;
    const int regs = pt.registers > 0 ? pt.registers : pt.geometry->registers_estimate;
    const model::Occupancy occ = model::compute_occupancy(gpu, pt.geometry->threads_per_block, regs, pt.geometry->smem_bytes);
    if (!occ.refusal.empty()) {
      ds.skipped.push_back(m.workload + " " + m.config + ": " + occ.refusal);
      continue;
    }
    ds.points.push_back(std::move(pt));
  }
  return ds;
}

FitDataset load_fit_dataset(const std::string& profile_path, const std::string& spec_dir) {
  Profile p;
  try {
    p = load_profile(profile_path);
  } catch (const ProfileError& e) {
    throw FitInputError(e.what());
  }
  if (p.gpu.spec.empty()) throw FitInputError(profile_path + ": field 'gpu.spec' is empty (which spec sheet?)");
  model::GpuSpec gpu;
  try {
    gpu = model::find_gpu_spec(p.gpu.spec, spec_dir);
  } catch (const std::exception& e) {
    throw FitInputError(profile_path + ": gpu.spec '" + p.gpu.spec + "': " + e.what());
  }
  return make_fit_dataset(p, profile_path, gpu);
}

void join_fit_datasets(FitDataset& into, FitDataset other) {
  if (other.gpu.name != into.gpu.name)
    throw FitInputError(other.source + ": measured on " + other.gpu.name + ", the fit's profile " + into.source +
                        " on " + into.gpu.name + " (join only sweeps of one GPU)");
  std::set<std::pair<std::string, std::string>> pairs;
  for (const FitPoint& p : into.points) pairs.emplace(p.workload, p.config);
  for (const FitPoint& p : other.points)
    if (!pairs.emplace(p.workload, p.config).second)
      throw FitInputError(other.source + ": workload " + p.workload + " config " + p.config + " is also in " +
                          into.source);
  into.points.insert(into.points.end(), other.points.begin(), other.points.end());
  into.skipped.insert(into.skipped.end(), other.skipped.begin(), other.skipped.end());
  into.joined_catalogs.push_back(std::move(other.catalog));
  for (auto& c : other.joined_catalogs) into.joined_catalogs.push_back(std::move(c));
  into.source += " + " + other.source;
}

void keep_variants(FitDataset& ds, const std::vector<Variant>& variants) {
  if (variants.empty()) return;
  std::vector<FitPoint> kept;
  for (FitPoint& p : ds.points) {
    if (std::find(variants.begin(), variants.end(), p.c.variant) != variants.end())
      kept.push_back(std::move(p));
    else
      ds.skipped.push_back(p.workload + " " + p.config + ": variant left out (--variants)");
  }
  ds.points = std::move(kept);
}

}  // namespace flashtune::fit
