// Plot 4: a roofline with the spec's DRAM, L2 and shared-memory slopes and FP32 and SFU ceilings;
// every measured config at the model's DRAM intensity and its measured FLOP/s.
#include <algorithm>
#include <limits>
#include <map>

#include "plots/plot_kinds.h"

namespace flashtune::plots {

PlotOutcome plot_roofline(const Drawer& dr, const std::vector<PlotPoint>& pts, const model::GpuSpec& gpu) {
  std::map<Variant, std::string> rows;
  double xmin = std::numeric_limits<double>::max(), xmax = 0;
  std::vector<double> flops_per_exp;
  for (const PlotPoint& p : pts) {
    const double x = p.ours.intensity_dram;
    const double y = p.ours.counts.nominal_flops / p.measured_s() / 1e12;
    rows[p.m.config.variant] += num(x) + "\t" + num(y) + "\n";
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
    if (p.ours.counts.exp > 0) flops_per_exp.push_back(p.ours.counts.nominal_flops / p.ours.counts.exp);
  }
  auto [data, vars] = variant_blocks(rows);
  std::sort(flops_per_exp.begin(), flops_per_exp.end());
  const double fpe = flops_per_exp.empty() ? 0 : flops_per_exp[flops_per_exp.size() / 2];
  const double sfu = double(gpu.sfu_ops_per_clock_per_sm) * gpu.sm_count * gpu.clock_hz() * fpe;
  // Wide enough to show where every ceiling's ridge lies.
  const double ridge_lo = gpu.fp32_peak_flops() / gpu.smem_bytes_per_s();
  const double ridge_hi = gpu.fp32_peak_flops() / gpu.dram_bytes_per_s();
  vars.insert(vars.end(), {{"dram", num(gpu.dram_bytes_per_s())},
                           {"l2", num(gpu.l2_bytes_per_s())},
                           {"smem", num(gpu.smem_bytes_per_s())},
                           {"fp32", num(gpu.fp32_peak_flops())},
                           {"sfu", num(sfu)},
                           {"sfu_fpe", num(fpe)},
                           {"xmin", num(std::min(xmin, ridge_lo) / 2)},
                           {"xmax", num(std::max(xmax, ridge_hi) * 2)}});
  dr.draw("roofline", "roofline", data, vars);
  return {"Roofline: DRAM, L2, shared, FP32 and SFU ceilings of the spec; measured configs at the model's DRAM "
          "intensity",
          {"roofline"},
          "SFU ceiling in FLOP/s = exp rate x the median FLOPs per exp of the plotted configs"};
}

}  // namespace flashtune::plots
