// Times the decode family on decode shapes with the project's harness (L2 flushed before every
// sample, CUDA events around the launch alone, warm-up, median; docs/measurement.md): per shape
// every compiled decode config of the dtype at its default split, and (--sweep) the best config
// again at every split count from 1 to the most the keys allow, for the model's split check; each
// config also at the split the model picks where it differs from the default (what the dispatcher
// and flashtune.attention launch: model::pick_decode_splits, \"model_split\": true).
// Prints one JSON object per line (shape, config, splits, median ms, GB/s of Q + K + V + O moved
// once, fraction of --copy-gbps, and whether the launch streamed K/V evict-first: the model
// predicts that stream, model::predict_decode), and whether its splits merged inside a
// thread-block cluster (\"cluster_combine\": the model's combine term follows it).
//
// --flush read empties L2 by reading instead of writing (tuner/timing_harness.h, L2Flush: the
// state a decode step finds after read-mostly work); each line names the flush ("flush").
//
//   decode_bench --dtype bf16 [--shapes b,hq,hkv,nq,keys,d;...] [--sweep] [--copy-gbps 3022] [--flush write|read]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

#include "kernels/decode_api.h"
#include "kernels/registry.h"
#include "kernels/traits/decode_traits.h"
#include "dispatch/dispatcher.h"
#include "model/decode_model.h"
#include "tuner/timing_harness.h"

namespace {

using namespace flashtune;

struct Shape {
  int batch, q_heads, kv_heads, nq;
  long long keys;
  int d;
};

// The anchors' decode cases (../shared/anchors, H100) and a sweep over keys at batch 1..8 with
// Hq 32 / Hkv 8 and Hq = Hkv, Nq 1 and 4.
std::vector<Shape> default_shapes() {
  std::vector<Shape> s = {{1, 32, 32, 1, 8192, 128},  {8, 32, 32, 1, 4096, 128}, {1, 32, 8, 1, 32768, 128},
                          {16, 32, 8, 1, 8192, 128},  {64, 12, 12, 1, 1024, 64}, {4, 32, 8, 4, 16384, 128},
                          {1, 12, 12, 1, 65536, 64}};
  for (int batch : {1, 8})
    for (int kvh : {8, 32})
      for (int nq : {1, 4})
        for (long long keys : {4096LL, 16384LL, 65536LL}) s.push_back({batch, 32, kvh, nq, keys, 128});
  return s;
}

std::vector<Shape> parse_shapes(const std::string& text) {
  std::vector<Shape> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ';')) {
    Shape s{};
    if (std::sscanf(item.c_str(), "%d,%d,%d,%d,%lld,%d", &s.batch, &s.q_heads, &s.kv_heads, &s.nq, &s.keys, &s.d) != 6 ||
        s.batch < 1 || s.q_heads < 1 || s.kv_heads < 1 || s.q_heads % s.kv_heads != 0 || s.nq < 1 || s.keys < 1)
      throw std::invalid_argument("--shapes: '" + item + "' is not b,hq,hkv,nq,keys,d (positive, hq a multiple of hkv)");
    out.push_back(s);
  }
  return out;
}

void fill(void* p, std::size_t bytes) {
  // One finite value everywhere (bytes 0x3C: 1.06 in fp16, 0.0115 in bf16 and fp32): the time
  // does not depend on the values, and the tests check the results.
  cudaMemset(p, 0x3C, bytes);
}

// --cluster-capacity: the clusters of 2..16 blocks this GPU runs at once when one block fills an SM
// (the bf16 d = 128 Br 16 s3 config: 196 KB of shared memory), one JSON line: what a GPU spec's
// clusters_at_once_one_block_per_sm records for the model's cluster-combine rule.
int print_cluster_capacity() {
  for (const KernelInstance* kern : kernel_registry()) {
    const TileConfig& c = kern->config();
    if (c.variant != Variant::Decode || c.dtype != DType::Bf16 || c.d != 128 || c.Br != 16 || c.stages != 3) continue;
    const DecodeKernel* dk = as_decode(kern);
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return 1;
    std::printf("{\"device\": \"%s\", \"sms\": %d, \"config\": \"%s\", \"clusters_at_once_one_block_per_sm\": [", prop.name,
                prop.multiProcessorCount, c.name().c_str());
    for (int n = 2; n <= traits::Decode::kMaxClusterSplits; ++n) std::printf("%s%d", n > 2 ? ", " : "", dk->clusters_at_once(n));
    std::printf("]}\n");
    return 0;
  }
  std::fprintf(stderr, "no bf16 d128 Br16 s3 decode config compiled\n");
  return 1;
}

}  // namespace

constexpr const char* kUsage =
    "decode_bench [--dtype bf16|fp16|fp32] [--shapes b,hq,hkv,nq,keys,d;...] [--sweep] [--copy-gbps G] [--config NAME] [--flush write|read] "
    "| --cluster-capacity";

int run(int argc, char** argv) {
  DType dtype = DType::Bf16;
  std::vector<Shape> shapes = default_shapes();
  bool sweep = false;
  double copy_gbps = 3022;
  std::string only;
  L2Flush flush = L2Flush::Write;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--help" || a == "-h") {
      std::printf("%s\n", kUsage);
      return 0;
    } else if (a == "--dtype" && has_value) {
      const auto t = parse_dtype(argv[++i]);
      if (!t) throw std::invalid_argument(std::string("unknown --dtype '") + argv[i] + "' (bf16, fp16, fp32)");
      dtype = *t;
    } else if (a == "--shapes" && has_value) {
      shapes = parse_shapes(argv[++i]);
    } else if (a == "--sweep") {
      sweep = true;
    } else if (a == "--copy-gbps" && has_value) {
      copy_gbps = std::atof(argv[++i]);
      if (!(copy_gbps > 0)) throw std::invalid_argument(std::string("--copy-gbps needs a positive number, got '") + argv[i] + "'");
    } else if (a == "--flush" && has_value) {
      const std::string f = argv[++i];
      const std::optional<L2Flush> kind = parse_l2_flush(f);
      if (!kind) throw std::invalid_argument("--flush must be write or read, got '" + f + "'");
      flush = *kind;
    } else if (a == "--config" && has_value) {
      only = argv[++i];
    } else if (a == "--cluster-capacity") {
      return print_cluster_capacity();
    } else {
      throw std::invalid_argument("unknown or incomplete argument '" + a + "' (usage: " + kUsage + ")");
    }
  }
  const DeviceLimits dev = DeviceLimits::query(0);
  HarnessOptions ho;
  ho.rule.min_samples = 25;
  ho.rule.time_cap_s = 0.5;
  ho.flush_kind = flush;
  TimingHarness harness(0, ho);
  // The dispatcher's view of this GPU: its spec and its shipped profile's coefficients.
  const Dispatcher dispatcher = Dispatcher::for_device(0);
  const model::Coefficients coefficients =
      dispatcher.profile() ? dispatcher.profile()->model.coefficients : model::Coefficients{};
  for (const Shape& sh : shapes) {
    const int group = sh.q_heads / sh.kv_heads;
    const std::size_t eb = dtype_bytes(dtype);
    const std::size_t q_el = std::size_t(sh.batch) * sh.q_heads * sh.nq * sh.d;
    const std::size_t kv_el = std::size_t(sh.batch) * sh.kv_heads * sh.keys * sh.d;
    void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
    if (cudaMalloc(&q, q_el * eb) || cudaMalloc(&k, kv_el * eb) || cudaMalloc(&v, kv_el * eb) ||
        cudaMalloc(&o, q_el * eb)) {
      std::fprintf(stderr, "allocation failed\n");
      return 1;
    }
    fill(q, q_el * eb);
    fill(k, kv_el * eb);
    fill(v, kv_el * eb);
    DecodeProblem p;
    p.q = q, p.k = k, p.v = v, p.o = o;
    p.strides = DecodeProblem::dense_strides(sh.q_heads, group, sh.nq, sh.keys, sh.d);
    p.batch = sh.batch, p.q_heads = sh.q_heads, p.kv_group = group, p.nq = sh.nq, p.keys = sh.keys, p.d = sh.d;
    p.dtype = dtype;
    const double bytes = double(eb) * (2.0 * q_el + 2.0 * kv_el);
    auto time_one = [&](const KernelInstance* kern, int splits, bool model_split = false) {
      const DecodeKernel* dk = as_decode(kern);
      const TimingResult r = harness.time([&](cudaStream_t s) { return dk->launch_decode(p, splits, s); });
      const TileConfig& c = kern->config();
      const int used = traits::Decode::shape(c, p.batch, p.q_heads, p.kv_group, p.nq, p.keys,
                                             splits > 0 ? splits : dk->default_splits(p, dev))
                           .splits;
      const double gbps = bytes / (r.stats.median_ms * 1e-3) / 1e9;
      std::printf(
          "{\"batch\": %d, \"q_heads\": %d, \"kv_heads\": %d, \"nq\": %d, \"keys\": %lld, \"d\": %d, \"dtype\": \"%s\", "
          "\"config\": \"%s\", \"splits\": %d, \"default_split\": %s, \"median_ms\": %.5f, \"min_ms\": %.5f, "
          "\"samples\": %d, \"bytes\": %.0f, \"gbps\": %.1f, \"copy_fraction\": %.3f, \"model_split\": %s, "
          "\"evict_first\": %s, \"cluster_combine\": %s, \"flush\": \"%s\"}\n",
          sh.batch, sh.q_heads, sh.kv_heads, sh.nq, sh.keys, sh.d, dtype_name(dtype), c.name().c_str(), used,
          splits == 0 ? "true" : "false", r.stats.median_ms, r.stats.min_ms, r.stats.samples, bytes, gbps,
          gbps / copy_gbps, model_split ? "true" : "false",
          kernels::decode_streams_evict_first(p, dev.l2_bytes) ? "true" : "false",
          dk->combines_in_cluster(p, used) ? "true" : "false", l2_flush_name(flush));
      std::fflush(stdout);
      return r.stats.median_ms;
    };
    const KernelInstance* best = nullptr;
    double best_ms = 1e30;
    for (const KernelInstance* kern : kernel_registry()) {
      const TileConfig& c = kern->config();
      if (c.variant != Variant::Decode || c.dtype != dtype || c.d != sh.d) continue;
      if (!only.empty() && c.name() != only) continue;
      if (!as_decode(kern)->can_run(p, dev)) continue;
      double ms = time_one(kern, 0);
      Workload w;
      w.B = static_cast<long long>(sh.batch) * sh.q_heads;
      w.N = sh.nq;
      w.d = sh.d;
      w.causal = true;  // a decode step sees every cached key (bottom-right)
      w.dtype = dtype;
      w.kv_len = sh.keys;
      w.kv_group = group;
      const model::DecodePrediction pick = model::pick_decode_splits(w, c, dispatcher.spec(), coefficients);
      const int default_used =
          traits::Decode::shape(c, p.batch, p.q_heads, p.kv_group, p.nq, p.keys, as_decode(kern)->default_splits(p, dev))
              .splits;
      if (pick.refusal.empty() && pick.splits > 0 && pick.splits != default_used)
        ms = std::min(ms, time_one(kern, pick.splits, true));
      if (ms < best_ms) best_ms = ms, best = kern;
    }
    if (sweep && best) {
      const auto one = traits::Decode::shape(best->config(), p.batch, p.q_heads, p.kv_group, p.nq, p.keys, 1);
      int last = 0;
      for (long long s = 1; s <= one.block_tiles && s <= 512; s = s < 8 ? s + 1 : s * 5 / 4) {
        const int used = traits::Decode::shape(best->config(), p.batch, p.q_heads, p.kv_group, p.nq, p.keys,
                                               static_cast<int>(s)).splits;
        if (used == last) continue;
        last = used;
        time_one(best, used);
      }
    }
    cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o);
  }
  return 0;
}

// One line and exit 2 for bad arguments or a machine without a usable GPU (no abort).
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "decode_bench: %s\n", e.what());
    return 2;
  }
}
