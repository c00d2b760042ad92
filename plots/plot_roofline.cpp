// Plot 4: a roofline with the spec's DRAM, L2 and shared-memory slopes and a ceiling per pipe that
// does the arithmetic (FP32, SFU, the tensor cores in TF32 and in bf16/fp16); every measured config
// at the model's DRAM intensity and its measured FLOP/s. The tensor ceilings are the datasheet
// rates: mma.sync reaches a fraction of them (Coefficients::tensor_efficiency).
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
  const double tf32 = gpu.tf32_tensor_peak_flops();
  const double rate16 = gpu.sm_count * gpu.clock_hz();
  const double bf16 = gpu.tensor_flops_per_clock_per_sm(DType::Bf16) * rate16;
  const double fp16 = gpu.tensor_flops_per_clock_per_sm(DType::Fp16) * rate16;
  // The slopes run up to the highest ceiling; wide enough to show where every ridge lies.
  const double top = std::max({gpu.fp32_peak_flops(), sfu, tf32, bf16, fp16});
  const double ridge_lo = gpu.fp32_peak_flops() / gpu.smem_bytes_per_s();
  const double ridge_hi = top / gpu.dram_bytes_per_s();
  vars.insert(vars.end(), {{"dram", num(gpu.dram_bytes_per_s())},
                           {"l2", num(gpu.l2_bytes_per_s())},
                           {"smem", num(gpu.smem_bytes_per_s())},
                           {"fp32", num(gpu.fp32_peak_flops())},
                           {"sfu", num(sfu)},
                           {"sfu_fpe", num(fpe)},
                           // 0 where the spec has no such tensor cores (the template leaves it out).
                           {"tf32", num(tf32)},
                           {"bf16", num(bf16)},
                           {"fp16", num(fp16)},
                           {"top", num(top)},
                           {"xmin", num(std::min(xmin, ridge_lo) / 2)},
                           {"xmax", num(std::max(xmax, ridge_hi) * 2)}});
  dr.draw("roofline", "roofline", data, vars);
  return {"Roofline: DRAM, L2 and shared slopes; FP32, SFU and tensor-core (TF32, bf16/fp16) ceilings of the spec; "
          "measured configs at the model's DRAM intensity",
          {"roofline"},
          "SFU ceiling in FLOP/s = exp rate x the median FLOPs per exp of the plotted configs"};
}

}  // namespace flashtune::plots
