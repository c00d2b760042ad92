#include "dispatch/dispatcher.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "kernels/traits/variants.h"
#include "model/config_catalog.h"
#include "model/decode_model.h"
#include "model/rank.h"
#include "model/workload_limits.h"
#include "profile/workload_set.h"

namespace flashtune {
namespace {

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f ms", ms);
  return buf;
}

}  // namespace

const char* choice_source_name(ChoiceSource s) {
  return s == ChoiceSource::ProfileBest ? "profile-best" : "model";
}

std::string Choice::why() const {
  const std::string split = splits > 0 ? ", " + std::to_string(splits) + (splits == 1 ? " split" : " splits") + " (model)" : "";
  if (source == ChoiceSource::ProfileBest)
    return "profile best for " + workload_name + ", measured " + ms_text(measured_ms) + split;
  return "model rank " + std::to_string(rank) + " of " + std::to_string(candidates) + ", predicted " +
         ms_text(predicted_ms) + split;
}

Dispatcher::Dispatcher(std::optional<DispatchProfile> profile, model::GpuSpec spec, DeviceLimits device)
    : profile_(std::move(profile)), spec_(std::move(spec)), device_(std::move(device)) {}

Choice Dispatcher::choose(const Workload& w, Precision precision) const {
  const Key key{w.B, w.N, w.keys(), w.kv_group, w.d, w.causal, w.dtype, precision};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  // Choosing runs the model over a few dozen configs (well under a millisecond each); done outside
  // the lock so other workloads are not held up. Two threads racing on one new workload both
  // compute the same answer; the first stored wins.
  Choice c = choose_uncached(w, precision);
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_.emplace(key, std::move(c)).first->second;
}

std::size_t Dispatcher::cached_choices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_.size();
}

Choice Dispatcher::choose_uncached(const Workload& w, Precision precision) const {
  if (w.B < 1 || w.N < 1)
    throw DispatchError(DispatchError::Kind::BadInput,
                        "B=" + std::to_string(w.B) + " N=" + std::to_string(w.N) + ": both must be >= 1");
  // The inference operands' refusals (kv_len, kv_group, causal with more queries than keys) in
  // the same words as every other command's.
  if (!w.self_attention())
    if (const auto why = model::workload_limit_error(w)) throw DispatchError(DispatchError::Kind::BadInput, *why);
  const std::vector<int> dims = compiled_head_dims(w.dtype);
  if (std::find(dims.begin(), dims.end(), w.d) == dims.end()) {
    std::string compiled;
    for (int d : dims) compiled += (compiled.empty() ? "" : ", ") + std::to_string(d);
    throw DispatchError(DispatchError::Kind::BadInput,
                        "unsupported d=" + std::to_string(w.d) +
                            (w.dtype != DType::Fp32 ? std::string(" in ") + dtype_name(w.dtype) : "") +
                            " (compiled: " + (compiled.empty() ? "none" : compiled) + ")");
  }
  std::string note;
  std::optional<Choice> measured = profile_choice(w, precision, note);
  Choice c = measured ? *measured : model_choice(w, precision);
  // The decode family's split: the model picks it, for a measured best too (a profile's decode
  // measurement ran the traits' default split; its config name holds none).
  if (c.config.variant == Variant::Decode) {
    const model::Coefficients k = profile_ ? profile_->model.coefficients : model::Coefficients{};
    const model::DecodePrediction d = model::pick_decode_splits(w, c.config, spec_, k);
    c.splits = d.refusal.empty() ? d.splits : 0;
  }
  c.precision = precision;
  c.note = note;
  return c;
}

namespace {

// Whether `precision` admits the profile's config `name`. Under Fp32 a name that does not parse
// (an unknown variant) is not admitted: its accuracy is unknown.
bool admits_name(Precision precision, const std::string& name) {
  if (precision == Precision::Tf32) return true;
  const std::optional<TileConfig> c = parse_config_name(name);
  return c && precision_admits(precision, c->variant);
}

}  // namespace

// (a) The measured best, among the configs `precision` admits, of the profile's workload with the
// same dimensions, when this build can run it here; `note` says why a matched best was passed over
// (or that a faster measured config was TF32-accurate only).
std::optional<Choice> Dispatcher::profile_choice(const Workload& w, Precision precision, std::string& note) const {
  if (!profile_) return std::nullopt;
  const NamedWorkload* match = nullptr;
  for (const NamedWorkload& nw : profile_->workloads)
    if (same_dimensions(nw.workload, w)) match = &nw;
  if (!match) return std::nullopt;
  const auto fastest = profile_->best.find(match->name);
  const BestConfig* best = nullptr;
  if (const auto ok = profile_->ok_measurements.find(match->name); ok != profile_->ok_measurements.end()) {
    for (const BestConfig& m : ok->second)
      if (admits_name(precision, m.config) && (!best || m.median_ms < best->median_ms)) best = &m;
  } else if (fastest != profile_->best.end() && admits_name(precision, fastest->second.config)) {
    best = &fastest->second;  // a DispatchProfile built without its measurements: its best alone
  }
  if (!best) {
    note = fastest == profile_->best.end()
               ? "profile has no ok measurement for " + match->name
               : "profile has no ok fp32-accurate measurement for " + match->name + " (its best, " +
                     fastest->second.config + ", is not fp32-accurate)";
    return std::nullopt;
  }
  if (fastest != profile_->best.end() && fastest->second.config != best->config &&
      fastest->second.median_ms < best->median_ms)
    note = "profile's fastest for " + match->name + " (" + fastest->second.config +
           ") is not fp32-accurate; the fastest fp32-accurate one is taken";
  const std::string& name = best->config;
  const std::optional<TileConfig> config = parse_config_name(name);
  const KernelInstance* kernel = config ? find_kernel(*config) : nullptr;
  if (!kernel) {
    note = "profile best for " + match->name + " (" + name + ") is not compiled in this build";
    return std::nullopt;
  }
  if (const Support s = kernel->can_implement(w, device_); !s) {
    note = "profile best for " + match->name + " (" + name + ") cannot run here: " + s.reason;
    return std::nullopt;
  }
  Choice c;
  c.config = *config;
  c.source = ChoiceSource::ProfileBest;
  c.workload_name = match->name;
  c.measured_ms = best->median_ms;
  return c;
}

// (b) The model's fastest among the compiled configs of d that `precision` admits and the device
// can run.
Choice Dispatcher::model_choice(const Workload& w, Precision precision) const {
  std::vector<TileConfig> candidates;
  std::string first_refusal;
  int compiled = 0;
  for (const TileConfig& c : model::compiled_tile_configs()) {
    if (!config_serves(c, w, precision)) continue;
    ++compiled;
    const KernelInstance* kernel = find_kernel(c);
    const Support s = kernel ? kernel->can_implement(w, device_) : Support::no("not in the kernel registry");
    if (s)
      candidates.push_back(c);
    else if (first_refusal.empty())
      first_refusal = c.name() + ": " + s.reason;
  }
  model::ConfigCatalog catalog;
  const model::ModelProfile no_profile;
  const model::Ranking ranking =
      model::rank_configs(w, candidates, spec_, profile_ ? profile_->model : no_profile, catalog);
  if (ranking.ranked.empty()) {
    if (first_refusal.empty() && !ranking.refused.empty())
      first_refusal = ranking.refused.front().config.name() + ": " + ranking.refused.front().reason;
    throw DispatchError(DispatchError::Kind::Unsupported,
                        "none of the " + std::to_string(compiled) + " compiled " +
                            (precision == Precision::Fp32 ? "fp32-accurate " : "") + "configs of d=" + std::to_string(w.d) +
                            " can run " + describe_workload(w) + " on " + device_.name + " (first: " +
                            first_refusal + ")");
  }
  Choice c;
  c.config = ranking.ranked.front().config;
  c.source = ChoiceSource::Model;
  c.predicted_ms = ranking.ranked.front().prediction.time_s * 1e3;
  c.rank = 1;
  c.candidates = static_cast<int>(ranking.ranked.size());
  return c;
}

}  // namespace flashtune
