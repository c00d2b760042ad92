#include "tuner/config_select.h"

#include <algorithm>
#include <cstdio>

#include "kernels/traits/variants.h"

namespace flashtune {
namespace {

bool matches(const TileConfig& c, int d, const ConfigRequest& r) {
  return c.d == d && c.dtype == r.dtype && precision_admits(r.precision, c.variant) && (!r.variant || c.variant == *r.variant) &&
         (!r.Br || c.Br == *r.Br) && (!r.Bc || c.Bc == *r.Bc) && (!r.layout || c.layout == *r.layout) &&
         (!r.stages || c.stages == *r.stages) && (!r.q_smem || c.q_smem == *r.q_smem) &&
         (!r.overlap || c.overlap == *r.overlap) && (!r.ping_pong || c.ping_pong == *r.ping_pong) &&
         (!r.persistent || c.persistent == *r.persistent);
}

std::string describe_request(int d, const ConfigRequest& r) {
  std::string s = r.variant ? variant_name(*r.variant) : "*";
  s += "/d" + std::to_string(d);
  s += "/br" + (r.Br ? std::to_string(*r.Br) : std::string("*"));
  s += "xbc" + (r.Bc ? std::to_string(*r.Bc) : std::string("*"));
  s += "/" + std::string(r.layout ? layout_name(*r.layout) : "*");
  if (r.dtype != DType::Fp32) s += std::string("/") + dtype_name(r.dtype);
  if (r.stages) s += "/s" + std::to_string(*r.stages);
  if (r.q_smem && *r.q_smem) s += "/qsmem";
  if (r.overlap && *r.overlap) s += "/ov";
  if (r.ping_pong && *r.ping_pong) s += "/pp";
  if (r.persistent && *r.persistent) s += "/pe";
  return s;
}

}  // namespace

std::string join_ints(const std::vector<int>& values) {
  std::string s;
  for (std::size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s;
}

std::string known_variants() {
  std::string known;
  for (Variant v : kAllVariants) known += (known.empty() ? "" : ", ") + std::string(variant_name(v));
  return known;
}

Variant parse_variant_or_throw(const std::string& name) {
  if (const auto v = parse_variant(name)) return *v;
  throw UsageError("unknown variant '" + name + "' (known: " + known_variants() + ")");
}

std::string known_precisions() {
  std::string known;
  for (Precision p : kAllPrecisions) known += (known.empty() ? "" : ", ") + std::string(precision_name(p));
  return known;
}

Precision parse_precision_or_throw(const std::string& name) {
  if (const auto p = parse_precision(name)) return *p;
  throw UsageError("unknown precision '" + name + "' (known: " + known_precisions() + ")");
}

void require_precision(Variant v, Precision requested) {
  if (precision_admits(requested, v)) return;
  char tol[16];
  std::snprintf(tol, sizeof tol, "%.0e", rel_l2_tolerance(variant_precision(v)));
  // Only Tf32 variants are ever refused (Fp32 admits fp32-accurate ones, Tf32 admits all).
  throw UsageError(std::string(variant_name(v)) + " is TF32-accurate only (rel L2 up to " + tol +
                   "): pass --precision " + precision_name(variant_precision(v)) + " to use it");
}

Layout parse_layout_or_throw(const std::string& name) {
  if (const auto l = parse_layout(name)) return *l;
  std::string known;
  for (Layout l : kAllLayouts) known += (known.empty() ? "" : ", ") + std::string(layout_name(l));
  throw UsageError("unknown layout '" + name + "' (known: " + known + ")");
}

void require_compiled_head_dim(int d, DType t) {
  const std::vector<int> ds = compiled_head_dims(t);
  if (std::find(ds.begin(), ds.end(), d) == ds.end())
    throw UsageError("unsupported d=" + std::to_string(d) + (t != DType::Fp32 ? std::string(" in ") + dtype_name(t) : "") +
                     " (compiled: " + (ds.empty() ? std::string("none") : join_ints(ds)) + ")");
}

std::vector<TileConfig> matching_configs(int d, const ConfigRequest& request) {
  std::vector<TileConfig> out;
  for (const TileConfig& c : compiled_configs())
    if (matches(c, d, request)) out.push_back(c);
  return out;
}

TileConfig select_config(int d, const ConfigRequest& request, const TileConfig& default_config) {
  // A named config is checked whole below (its d, its dtype, compiled or not); the head-dim list
  // holds the tiled families' only and would refuse a compiled decode config of another d.
  if (!request.named) require_compiled_head_dim(d, request.dtype);
  if (request.variant) require_precision(*request.variant, request.precision);
  if (request.named && request.named->d != d)
    throw UsageError("config " + request.named->name() + " is built for d=" + std::to_string(request.named->d) +
                     ", the workload has d=" + std::to_string(d));
  if (request.named && request.named->dtype != request.dtype)
    throw UsageError("config " + request.named->name() + " takes " + dtype_name(request.named->dtype) +
                     " operands, the workload is " + dtype_name(request.dtype) + " (--dtype)");
  TileConfig wanted = default_config;
  wanted.d = d;
  if (request.variant) wanted.variant = *request.variant;
  if (request.Br) wanted.Br = *request.Br;
  if (request.Bc) wanted.Bc = *request.Bc;
  if (request.layout) wanted.layout = *request.layout;
  wanted.dtype = request.dtype;
  if (request.stages) wanted.stages = *request.stages;
  if (request.q_smem) wanted.q_smem = *request.q_smem;
  if (request.overlap) wanted.overlap = *request.overlap;
  if (request.ping_pong) wanted.ping_pong = *request.ping_pong;
  if (request.persistent) wanted.persistent = *request.persistent;
  const std::vector<TileConfig> candidates = matching_configs(d, request);
  if (std::find(candidates.begin(), candidates.end(), wanted) != candidates.end()) return wanted;
  if (!candidates.empty()) return candidates.front();

  // Nothing compiled matches: say whether the config cannot exist at all or is only not compiled.
  const bool fully_given = request.variant && request.Br && request.Bc && request.layout;
  if (fully_given) {
    if (const auto why = tile_rejection(wanted))
      throw UsageError("config " + wanted.name() + " cannot be built: " + *why);
  }
  std::string compiled;
  ConfigRequest any_of_precision;
  any_of_precision.precision = request.precision;
  any_of_precision.dtype = request.dtype;
  for (const TileConfig& c : matching_configs(d, any_of_precision))
    compiled += (compiled.empty() ? "" : ", ") + c.name();
  throw UsageError("config " + describe_request(d, request) + " is not compiled (compiled for d=" + std::to_string(d) +
                   (request.dtype != DType::Fp32 ? std::string(" in ") + dtype_name(request.dtype) : "") + ": " +
                   (compiled.empty() ? "none" : compiled) + ")");
}

}  // namespace flashtune
