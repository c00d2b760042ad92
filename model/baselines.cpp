#include "model/baselines.h"

#include <algorithm>

#include "model/counts.h"

namespace flashtune::model {
namespace {
// The seed's constants (seeds/fa-performance-model-rtx3090.txt).
constexpr double kSeedDramUtilisation = 0.01;
constexpr double kSeedL2Utilisation = 0.01;
constexpr double kSeedL1Utilisation = 0.10;
constexpr double kSeedBankConflictFactor = 6.5;
constexpr double kSeedL2OverDram = 1500.0 / 936.2;
constexpr double kSeedL1OverDram = 3000.0 / 936.2;
}  // namespace

RooflineEstimate roofline_time(const Workload& w, const GpuSpec& gpu) {
  RooflineEstimate r;
  const double B = double(w.B), N = double(w.N), d = double(w.d), keys = double(w.keys());
  const double off = double(std::max(0LL, w.causal_offset()));
  const double flops = w.causal ? 2.0 * B * N * (N + 1.0 + 2.0 * off) * d : 4.0 * B * N * keys * d;
  // fp32 data: the SIMT FP32 roof (the seed's baseline); 16-bit data: the tensor cores of that type.
  const double tensor16 = gpu.tensor_flops_per_clock_per_sm(w.dtype) * gpu.sm_count * gpu.clock_hz();
  r.compute_s = flops / (w.dtype != DType::Fp32 && tensor16 > 0 ? tensor16 : gpu.fp32_peak_flops());
  // Q and O once per entry, K and V once per K/V head.
  const double kv_heads_entries = B / double(std::max(1, w.kv_group));
  r.dram_s = (2.0 * B * N + 2.0 * kv_heads_entries * keys) * d * w.element_bytes() / gpu.dram_bytes_per_s();
  r.time_s = std::max(r.compute_s, r.dram_s);
  return r;
}

SeedEstimate seed_model_time(const Workload& w, const TileConfig& c, const GpuSpec& gpu) {
  SeedEstimate s;
  const double Br = c.Br, Bc = c.Bc, d = w.d, B = double(w.B), N = double(w.N);
  const double pairs = double(count_tile_visits(w, c.Br, c.Bc).visits);  // includes B
  s.flops = pairs * (4.0 * Br * Bc * d + 4.0 * Br * Bc + 7.0 * Br + 10.0 * Br * d);
  s.dram_bytes = 4.0 * B * N * d * 4.0 + 4.0 * B * N * 4.0;
  s.l2_bytes = s.dram_bytes;
  s.l1_bytes = pairs * 4.0 * (Br * d + 2.0 * Bc * d + 2.0 * Br * Bc * d + Br * Bc + 2.0 * Br * Bc * d);
  const double dram_bw = gpu.dram_bytes_per_s();
  s.compute_s = s.flops / gpu.fp32_peak_flops();
  s.dram_s = s.dram_bytes / (dram_bw * kSeedDramUtilisation);
  s.l2_s = s.l2_bytes / (dram_bw * kSeedL2OverDram * kSeedL2Utilisation);
  s.l1_s = s.l1_bytes * kSeedBankConflictFactor / (dram_bw * kSeedL1OverDram * kSeedL1Utilisation);
  s.time_s = std::max({s.compute_s, s.dram_s, s.l2_s, s.l1_s});
  s.bound = s.time_s == s.l1_s ? "L1" : s.time_s == s.l2_s ? "L2" : s.time_s == s.dram_s ? "DRAM" : "compute";
  return s;
}

}  // namespace flashtune::model
