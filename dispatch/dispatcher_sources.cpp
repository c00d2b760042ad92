// Where a dispatcher's inputs come from: the profile file, the GPU spec, the device's limits.
#include <filesystem>
#include <utility>

#include "dispatch/dispatcher.h"
#include "model/data_dir.h"
#include "model/gpu_spec.h"
#include "profile/model_profile.h"

namespace flashtune {
namespace {

[[noreturn]] void bad_input(const std::string& what) { throw DispatchError(DispatchError::Kind::BadInput, what); }

// A name or alias from configs/gpus, or a spec file when it ends in .json.
model::GpuSpec gpu_spec_for(const std::string& gpu) {
  try {
    return model::gpu_spec_by_name_or_file(gpu);
  } catch (const std::runtime_error& e) {
    bad_input(e.what());
  }
}

void require_same_gpu(const DispatchProfile& profile, const std::string& stem) {
  if (profile.gpu_spec != stem)
    bad_input(profile.path + ": measured on " + profile.gpu_spec + ", not on " + stem);
}

// Folds a 16-bit companion of a shipped profile into it: the same GPU, and only workloads of that
// element type (so no name can stand for two shapes).
void fold_companion(DispatchProfile& into, const std::string& path, DType dtype) {
  const DispatchProfile c = load_dispatch_profile(path);
  if (c.gpu_spec != into.gpu_spec) bad_input(path + ": measured on " + c.gpu_spec + ", not on " + into.gpu_spec);
  for (const NamedWorkload& w : c.workloads) {
    if (w.workload.dtype != dtype)
      bad_input(path + ": workload " + w.name + " is " + dtype_name(w.workload.dtype) + ", not " + dtype_name(dtype) +
                " (a companion profile holds only its element type)");
    for (const NamedWorkload& have : into.workloads)
      if (have.name == w.name) bad_input(path + ": workload " + w.name + " is also in " + into.path);
  }
  into.workloads.insert(into.workloads.end(), c.workloads.begin(), c.workloads.end());
  into.best.insert(c.best.begin(), c.best.end());
  into.ok_measurements.insert(c.ok_measurements.begin(), c.ok_measurements.end());
  into.companions.push_back(path);
}

}  // namespace

DispatchProfile load_dispatch_profile(const std::string& path) {
  DispatchProfile d;
  d.path = path;
  try {
    Profile p = load_profile(path);
    d.model = model_profile_of(p, path);  // the same file, read once
    d.gpu_spec = p.gpu.spec;
    d.workloads = std::move(p.workloads);
    d.best = std::move(p.best);
    for (const Measurement& m : p.measurements)
      if (m.status == status::kOk && m.timing && m.timing->median_ms > 0)
        d.ok_measurements[m.workload].push_back(BestConfig{m.config, m.timing->median_ms});
  } catch (const std::runtime_error& e) {  // ProfileError: one line naming the file
    bad_input(e.what());
  }
  return d;
}

DeviceLimits device_limits_from_spec(const model::GpuSpec& spec) {
  DeviceLimits d;
  d.name = spec.name;
  d.cc_major = spec.cc_major;
  d.cc_minor = spec.cc_minor;
  d.sm_count = spec.sm_count;
  d.max_threads_per_block = spec.max_threads_per_block;
  d.max_threads_per_sm = spec.max_threads_per_sm;
  d.smem_per_block_optin = spec.smem_per_block_optin_bytes;
  d.smem_per_sm = spec.smem_per_sm_bytes;
  d.regs_per_sm = spec.registers_per_sm;
  d.l2_bytes = spec.l2_bytes;
  return d;
}

namespace {

// The profile a dispatcher for the GPU `stem` reads: the given one (checked against the GPU),
// else the shipped one unless spec-only.
std::optional<DispatchProfile> profile_for(std::optional<DispatchProfile> given, const std::string& stem,
                                           ProfileDefault fallback) {
  if (given) {
    if (fallback == ProfileDefault::SpecOnly) bad_input(given->path + ": a profile and spec-only exclude each other");
    require_same_gpu(*given, stem);
    return given;
  }
  if (fallback == ProfileDefault::SpecOnly) return std::nullopt;
  std::string shipped;
  try {
    shipped = model::shipped_profile_path(stem);
  } catch (const std::runtime_error& e) {  // no data folder
    bad_input(e.what());
  }
  if (shipped.empty()) return std::nullopt;
  DispatchProfile profile = load_dispatch_profile(shipped);
  for (DType t : kAllDTypes)
    if (const std::string companion = model::shipped_companion_profile_path(stem, t); !companion.empty())
      fold_companion(profile, companion, t);
  return profile;
}

}  // namespace

Dispatcher Dispatcher::from_files(const std::string& profile_path, const std::string& gpu, ProfileDefault fallback) {
  if (profile_path.empty() && gpu.empty()) bad_input("the dispatcher needs a profile or a GPU spec");
  std::optional<DispatchProfile> profile;
  if (!profile_path.empty()) profile = load_dispatch_profile(profile_path);
  model::GpuSpec spec = gpu_spec_for(gpu.empty() ? profile->gpu_spec : gpu);
  profile = profile_for(std::move(profile), model::spec_stem(spec), fallback);
  DeviceLimits limits = device_limits_from_spec(spec);
  return Dispatcher(std::move(profile), std::move(spec), std::move(limits));
}

Dispatcher Dispatcher::for_device(const DeviceLimits& device, std::optional<DispatchProfile> profile,
                                  ProfileDefault fallback) {
  std::string stem;
  try {
    stem = model::gpu_spec_name(device.name, model::default_gpu_spec_dir());
  } catch (const std::runtime_error& e) {  // no data folder
    bad_input(e.what());
  }
  model::GpuSpec spec = gpu_spec_for(stem);
  profile = profile_for(std::move(profile), stem, fallback);
  return Dispatcher(std::move(profile), std::move(spec), device);
}

Dispatcher Dispatcher::for_device(int device, const std::string& profile_path, ProfileDefault fallback) {
  const DeviceLimits limits = DeviceLimits::query(device);
  std::optional<DispatchProfile> profile;
  if (!profile_path.empty()) profile = load_dispatch_profile(profile_path);
  return for_device(limits, std::move(profile), fallback);
}

}  // namespace flashtune
