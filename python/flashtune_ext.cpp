// The Python module's native half (pybind11): the attention call on raw device pointers and
// strides through the dispatcher, and the model's predict / rank returning plain Python data.
// flashtune/__init__.py turns tensors (PyTorch's data_ptr/stride, or __cuda_array_interface__)
// into the pointers, strides in elements and a dtype name (fp32, bf16, fp16) and checks that the
// operands share one dtype, their device and shapes; everything here raises ValueError with the same one-line
// message the CLI prints (without the "flashtune <command>: " prefix), RuntimeError for CUDA
// failures.
#include <cuda_runtime_api.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "dispatch/attention_forward.h"
#include "dispatch/dispatcher.h"
#include "kernels/cuda_check.h"
#include "kernels/registry.h"
#include "kernels/traits/tensor_strides.h"
#include "model/baselines.h"
#include "model/config_catalog.h"
#include "model/gpu_spec.h"
#include "model/prediction_json.h"
#include "model/profile.h"
#include "profile/model_profile.h"
#include "model/rank.h"
#include "model/workload_limits.h"
#include "tuner/config_select.h"
#include "profile/profile.h"

namespace py = pybind11;

namespace flashtune::python {
namespace {

// ---- shared by attention, predict and rank ------------------------------------------------

DType dtype_of(const std::string& name) {
  if (const std::optional<DType> t = parse_dtype(name)) return *t;
  throw py::value_error(unknown_dtype_message(name));
}

// kv_len: keys per entry (None: N); kv_group: query heads per K/V head.
Workload workload_of(long long B, long long N, int d, bool causal, std::optional<double> scale,
                     DType dtype = DType::Fp32, std::optional<long long> kv_len = std::nullopt, int kv_group = 1) {
  Workload w;
  w.B = B;
  w.N = N;
  w.d = d;
  w.causal = causal;
  w.dtype = dtype;
  if (kv_len) {
    if (*kv_len < 1) throw py::value_error("kv_len=" + std::to_string(*kv_len) + ": must be >= 1");
    w.kv_len = *kv_len;
  }
  w.kv_group = kv_group;
  if (scale) {
    if (!(*scale > 0.0) || !(*scale < 3.4e38)) throw py::value_error("scale=" + std::to_string(*scale) + ": must be a positive finite number");
    w.scale = static_cast<float>(*scale);
  }
  // The checks and messages of `flashtune run` / `predict`.
  if (B < 1) throw py::value_error("B=" + std::to_string(B) + ": must be >= 1");
  if (N < 1) throw py::value_error("N=" + std::to_string(N) + ": must be >= 1");
  try {
    require_compiled_head_dim(d, w.dtype);
  } catch (const UsageError& e) {
    throw py::value_error(e.what());
  }
  if (const auto why = model::workload_limit_error(w)) throw py::value_error(*why);
  return w;
}

Precision precision_of(const std::string& name) {
  try {
    return parse_precision_or_throw(name);
  } catch (const UsageError& e) {
    throw py::value_error(e.what());
  }
}

py::object to_python(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

// ---- attention ----------------------------------------------------------------------------

// One dispatcher per device, built on first use (the shipped profile of the GPU when there is one).
const Dispatcher& dispatcher_for(int device) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<Dispatcher>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(device);
  if (it == cache.end()) {
    try {
      // new T(prvalue) constructs in place: a Dispatcher (it holds a mutex) cannot move.
      it = cache.emplace(device, std::unique_ptr<Dispatcher>(new Dispatcher(Dispatcher::for_device(device)))).first;
    } catch (const DispatchError& e) {
      throw py::value_error(e.what());
    }
  }
  return *it->second;
}

// N rounded up to one of 8 steps per octave (at least 64): sequence lengths that share a step
// share a config.
long long n_bucket(long long n) {
  long long octave = 64;
  while (octave * 2 <= n) octave *= 2;
  const long long step = octave >= 512 ? octave / 8 : 64;
  return (n + step - 1) / step * step;
}

// The dispatcher's choice, reused for every N (and number of keys) of the same bucket (same device,
// B, kv_group, d, causal, dtype, precision): a new choice ranks every config with the model (about 0.1 s), and generation asks
// for a new N at every token. The first N of a bucket decides (a measured workload of the
// profile matches exactly there); a tile choice does not change within an eighth of an octave.
Choice choice_for(int device, const Workload& w, Precision p) {
  using Key = std::tuple<int, long long, long long, long long, int, int, bool, DType, Precision>;
  static std::mutex mutex;
  static std::map<Key, Choice> cache;
  const Key key{device, w.B, n_bucket(w.N), n_bucket(w.keys()), w.kv_group, w.d, w.causal, w.dtype, p};
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  const Dispatcher& dispatcher = dispatcher_for(device);
  Choice c;
  try {
    c = dispatcher.choose(w, p);
  } catch (const DispatchError& e) {
    throw py::value_error(e.what());
  }
  std::lock_guard<std::mutex> lock(mutex);
  return cache.emplace(key, c).first->second;
}

// What the last attention() call handed to the kernel: lets a test check that no copy was made.
struct LastLaunch {
  std::uintptr_t q = 0, k = 0, v = 0, o = 0;
  std::string config;
  std::string why;
  std::string dtype;
};
LastLaunch last_launch;

OperandStrides strides_of(const std::vector<long long>& s, const char* name) {
  if (s.size() != 3) throw py::value_error(std::string(name) + ": expected 3 strides (batch, head, row)");
  return {s[0], s[1], s[2]};
}

// A config named by the caller instead of the dispatcher's choice: compiled, of the workload's d and
// dtype, admitted by the precision, and runnable on the device.
Choice named_choice(const std::string& name, const Workload& w, Precision p, int device) {
  const std::optional<TileConfig> c = parse_config_name(name);
  if (!c) throw py::value_error("config '" + name + "' is not a config name (e.g. mma_3xtf32/d64/br64xbc64/swizzled)");
  if (c->d != w.d)
    throw py::value_error("config " + name + " is for d=" + std::to_string(c->d) + ", the tensors have d=" +
                          std::to_string(w.d));
  if (auto why = model::config_rejection(*c, w)) throw py::value_error(*why);
  if (!config_serves(*c, w, p))
    throw py::value_error("config " + name + " is " + precision_name(variant_precision(c->variant)) +
                          "-accurate only; pass precision=\"tf32\" to run it");
  const KernelInstance* kernel = find_kernel(*c);
  if (!kernel) throw py::value_error("config " + name + " is not compiled in this build (flashtune.configs())");
  if (const Support s = kernel->can_implement(w, dispatcher_for(device).device()); !s)
    throw py::value_error("config " + name + " cannot run here: " + s.reason);
  Choice choice;
  choice.config = *c;
  choice.precision = p;
  return choice;
}

// q, k, v, o: device addresses; *_strides: (batch, head, row) in elements of dtype; q and o
// [batch, heads, N, d] logically, k and v [batch, kv_heads, kv_len, d] (kv_heads dividing heads:
// grouped-query attention, no copy; causal bottom-right aligned); dtype: "fp32", "bf16" or "fp16",
// the element type of all four. config: a config name to run instead of the dispatcher's choice.
// Returns the config name that ran.
std::string attention(std::uintptr_t q, const std::vector<long long>& q_strides, std::uintptr_t k,
                      const std::vector<long long>& k_strides, std::uintptr_t v,
                      const std::vector<long long>& v_strides, std::uintptr_t o,
                      const std::vector<long long>& o_strides, long long batch, long long heads, long long N, int d,
                      bool causal, std::optional<double> scale, std::uintptr_t stream, const std::string& precision,
                      const std::string& dtype, const std::optional<std::string>& config,
                      std::optional<long long> kv_heads, std::optional<long long> kv_len) {
  if (batch < 1) throw py::value_error("batch=" + std::to_string(batch) + ": must be >= 1");
  if (heads < 1) throw py::value_error("heads=" + std::to_string(heads) + ": must be >= 1");
  const long long hkv = kv_heads.value_or(heads);
  if (hkv < 1) throw py::value_error("kv_heads=" + std::to_string(hkv) + ": must be >= 1");
  if (heads % hkv != 0)
    throw py::value_error("heads=" + std::to_string(heads) + " is not a multiple of kv-heads=" + std::to_string(hkv) +
                          " (each K/V head serves the same number of query heads)");
  const DType element = dtype_of(dtype);
  const Workload w = workload_of(batch * heads, N, d, causal, scale, element, kv_len,
                                 static_cast<int>(std::min<long long>(heads / hkv, 1 << 30)));
  const Precision p = precision_of(precision);
  AttentionTensors t;
  t.q = reinterpret_cast<const void*>(q);
  t.k = reinterpret_cast<const void*>(k);
  t.v = reinterpret_cast<const void*>(v);
  t.o = reinterpret_cast<void*>(o);
  t.strides = {heads, strides_of(q_strides, "q"), strides_of(k_strides, "k"), strides_of(v_strides, "v"),
               strides_of(o_strides, "out")};
  if (const Support s = check_tensors(t, w); !s) throw py::value_error(s.reason);

  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, t.q) != cudaSuccess || attr.type != cudaMemoryTypeDevice) {
    cudaGetLastError();  // clear the sticky error of a host pointer
    throw py::value_error("q is not CUDA device memory");
  }
  int current = 0;
  FLASHTUNE_CUDA_CHECK(cudaGetDevice(&current));
  if (attr.device != current)
    throw py::value_error("q is on CUDA device " + std::to_string(attr.device) + ", the current device is " +
                          std::to_string(current));
  const Choice choice = config ? named_choice(*config, w, p, attr.device) : choice_for(attr.device, w, p);
  const KernelInstance* kernel = find_kernel(choice.config);
  if (!kernel) throw py::value_error("config " + choice.config.name() + " is not compiled in this build");
  {
    // A failure throws with the GIL released; the guard takes it back while the exception leaves.
    py::gil_scoped_release release;
    FLASHTUNE_CUDA_CHECK(kernel->launch(t, w, reinterpret_cast<cudaStream_t>(stream)));
  }
  last_launch = {q, k, v, o, choice.config.name(), config ? std::string("named by the caller") : choice.why(),
                 dtype_name(element)};
  return choice.config.name();
}

py::dict last_launch_dict() {
  py::dict d;
  d["q"] = last_launch.q;
  d["k"] = last_launch.k;
  d["v"] = last_launch.v;
  d["o"] = last_launch.o;
  d["config"] = last_launch.config;
  d["why"] = last_launch.why;
  d["dtype"] = last_launch.dtype;
  return d;
}

// ---- predict and rank ---------------------------------------------------------------------

model::GpuSpec gpu_of(const std::string& gpu) {
  try {
    return model::gpu_spec_by_name_or_file(gpu);
  } catch (const std::runtime_error& e) {
    throw py::value_error(e.what());
  }
}

// profile: None -> the GPU's shipped profile as predict reads it (default_model_profile); "" -> none
// (spec-only defaults); else that file.
model::ModelProfile profile_of(const std::optional<std::string>& profile, const model::GpuSpec& gpu) {
  try {
    if (!profile) return default_model_profile(gpu);
    if (profile->empty()) return {};
    return load_model_profile(*profile);
  } catch (const std::runtime_error& e) {
    throw py::value_error(e.what());
  }
}

struct Ranked {
  std::vector<nlohmann::json> results;
  std::vector<nlohmann::json> refused;
};

Ranked rank_json(const Workload& w, const std::vector<TileConfig>& configs, const model::GpuSpec& gpu,
                 const model::ModelProfile& profile) {
  model::ConfigCatalog catalog;
  model::Ranking ranking = model::rank_configs(w, configs, gpu, profile, catalog);
  Ranked out;
  int rank = 0;
  for (const model::RankedConfig& r : ranking.ranked) {
    nlohmann::json j = model::prediction_json(r.prediction, *r.geometry, model::roofline_time(w, gpu),
                                              model::seed_model_time(w, r.config, gpu));
    j["rank"] = ++rank;
    j["precision"] = precision_name(variant_precision(r.config.variant));
    j["dtype"] = dtype_name(r.config.dtype);
    j["coefficients_from"] = profile.path.empty() || profile.fitted_coefficients == 0 ? "defaults" : profile.path;
    out.results.push_back(std::move(j));
  }
  for (const model::RefusedConfig& c : ranking.refused)
    out.refused.push_back({{"config", c.config.name()}, {"reason", c.reason}});
  return out;
}

py::object rank(long long B, long long N, int d, bool causal, const std::string& gpu_name,
                const std::optional<std::string>& profile, const std::string& precision, const std::string& dtype,
                std::optional<long long> kv_len, int kv_group) {
  const Workload w = workload_of(B, N, d, causal, std::nullopt, dtype_of(dtype), kv_len, kv_group);
  const Precision p = precision_of(precision);
  const model::GpuSpec gpu = gpu_of(gpu_name);
  const model::ModelProfile prof = profile_of(profile, gpu);
  std::vector<TileConfig> configs;
  for (const TileConfig& c : model::compiled_tile_configs())
    if (config_serves(c, w, p)) configs.push_back(c);
  if (configs.empty())
    throw py::value_error("no compiled config matches d=" + std::to_string(w.d) + ", dtype " + dtype_name(w.dtype) +
                          " and precision " + precision_name(p));
  Ranked ranked = rank_json(w, configs, gpu, prof);
  // Nothing the GPU can run (bf16 on a spec without 16-bit tensor cores): one line with the first
  // reason rather than an empty list.
  if (ranked.results.empty() && !ranked.refused.empty())
    throw py::value_error("no " + std::string(dtype_name(w.dtype)) + " config of d=" + std::to_string(w.d) +
                          " can run on " + gpu.name + ": " + ranked.refused.front().at("config").get<std::string>() +
                          ": " + ranked.refused.front().at("reason").get<std::string>());
  nlohmann::json out = nlohmann::json::array();
  for (nlohmann::json& j : ranked.results) out.push_back(std::move(j));
  return to_python(out);
}

// dtype: None -> the config's own element type (a bf16 config name predicts a bf16 workload).
py::object predict(long long B, long long N, int d, const std::string& config, bool causal,
                   const std::string& gpu_name, const std::optional<std::string>& profile,
                   std::optional<double> scale, const std::optional<std::string>& dtype,
                   std::optional<long long> kv_len, int kv_group) {
  const std::optional<TileConfig> c = parse_config_name(config);
  if (!c) throw py::value_error("config '" + config + "' is not a config name (e.g. mma_3xtf32/d64/br64xbc64/swizzled)");
  const Workload w = workload_of(B, N, d, causal, scale, dtype ? dtype_of(*dtype) : c->dtype, kv_len, kv_group);
  if (c->d != w.d)
    throw py::value_error("config " + config + " is for d=" + std::to_string(c->d) + ", workload has d=" +
                          std::to_string(w.d));
  if (auto why = model::config_rejection(*c, w)) throw py::value_error(c->name() + ": " + *why);
  const model::GpuSpec gpu = gpu_of(gpu_name);
  const Ranked r = rank_json(w, {*c}, gpu, profile_of(profile, gpu));
  if (!r.refused.empty())
    throw py::value_error(c->name() + " cannot run on " + gpu.name + ": " + r.refused.front().at("reason").get<std::string>());
  return to_python(r.results.front());
}

}  // namespace
}  // namespace flashtune::python

PYBIND11_MODULE(_flashtune, m) {
  using namespace flashtune::python;
  namespace py = pybind11;
  m.doc() = "flashtune native module: FlashAttention forward kernels, dispatcher and model";
  m.def("attention", &attention, py::arg("q"), py::arg("q_strides"), py::arg("k"), py::arg("k_strides"),
        py::arg("v"), py::arg("v_strides"), py::arg("o"), py::arg("o_strides"), py::arg("batch"), py::arg("heads"),
        py::arg("N"), py::arg("d"), py::arg("causal"), py::arg("scale"), py::arg("stream"), py::arg("precision"),
        py::arg("dtype") = "fp32", py::arg("config") = py::none(), py::arg("kv_heads") = py::none(),
        py::arg("kv_len") = py::none(),
        "Launch the dispatcher's config (or the named one) on raw device pointers of element type dtype "
        "(fp32, bf16, fp16), strides in elements; K/V of kv_heads heads (default heads) and kv_len rows "
        "(default N); returns the config name");
  m.def("last_launch", &last_launch_dict, "Pointers and config of the last attention() launch");
  m.def(
      "configs",
      [](const std::optional<std::string>& dtype) {
        std::optional<flashtune::DType> only;
        if (dtype) only = dtype_of(*dtype);
        std::vector<std::string> names;
        for (const flashtune::TileConfig& c : flashtune::model::compiled_tile_configs())
          if (!only || c.dtype == *only) names.push_back(c.name());
        return names;
      },
      py::arg("dtype") = py::none(),
      "Names of the compiled kernel configs (as `flashtune list`; dtype: only those of that element type)");
  m.def("rank", &rank, py::arg("B"), py::arg("N"), py::arg("d"), py::arg("causal") = false,
        py::arg("gpu") = "h200", py::arg("profile") = py::none(), py::arg("precision") = "fp32",
        py::arg("dtype") = "fp32", py::arg("kv_len") = py::none(), py::arg("kv_group") = 1,
        "Every compiled config of d and dtype the precision admits, by predicted time (list of dicts); kv_len: "
        "keys per entry (default N), kv_group: query heads per K/V head");
  m.def("predict", &predict, py::arg("B"), py::arg("N"), py::arg("d"), py::arg("config"), py::arg("causal") = false,
        py::arg("gpu") = "h200", py::arg("profile") = py::none(), py::arg("scale") = py::none(),
        py::arg("dtype") = py::none(), py::arg("kv_len") = py::none(), py::arg("kv_group") = 1,
        "The model's prediction for one config (dict); dtype defaults to the config's own; kv_len: keys per "
        "entry (default N), kv_group: query heads per K/V head");
}
