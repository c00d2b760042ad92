#include "model/prediction_json.h"

namespace flashtune::model {

using nlohmann::json;

json workload_json(const Workload& w) {
  json j = {{"B", w.B}, {"N", w.N}, {"d", w.d}, {"causal", w.causal}, {"scale", w.effective_scale()}};
  // The inference operands only where they differ from self-attention, so that every earlier
  // output reads the same.
  if (w.keys() != w.N) j["kv_len"] = w.keys();
  if (w.kv_group != 1) j["kv_group"] = w.kv_group;
  return j;
}

json coefficients_json(const Coefficients& k) {
  json j = json::object();
  for (const CoefficientInfo& ci : coefficient_table()) j[ci.name] = k.*(ci.member);
  return j;
}

json gpu_json(const GpuSpec& g) {
  return {{"name", g.name},
          {"file", g.file},
          {"sm_count", g.sm_count},
          {"sm_clock_mhz", g.sm_clock_boost_mhz},
          {"fp32_peak_tflops", g.fp32_peak_flops() / 1e12},
          {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
          {"tf32_tensor_peak_tflops", g.tf32_tensor_peak_flops() / 1e12},
          {"dram_bandwidth_gbs", g.dram_bandwidth_gbs},
          {"l2_bandwidth_gbs", g.l2_bandwidth_gbs},
          {"l2_bytes", g.l2_bytes}};
}

json prediction_json(const Prediction& p, const GeometryAnalysis& g, const RooflineEstimate& roofline,
                     const SeedEstimate& seed) {
  const TileConfig& c = g.config;
  json j = {{"config", c.name()},
            {"variant", variant_name(c.variant)},
            {"d", c.d},
            {"Br", c.Br},
            {"Bc", c.Bc},
            {"layout", layout_name(c.layout)}};
  if (!p.refusal.empty()) {
    j["refused"] = p.refusal;
    return j;
  }
  const Counts& n = p.counts;
  j["time_s"] = p.time_s;
  if (p.decode_splits > 0) {
    j["decode_splits"] = p.decode_splits;
    if (p.decode_splits > 1) j["decode_combine"] = p.decode_cluster_combine ? "cluster" : "kernel";
  }
  if (p.decode) {
    const DecodePrediction& d = *p.decode;
    j["decode"] = {{"split_kernel_s", d.split_kernel_s},
                   {"combine_s", d.combine_s},
                   {"launch_s", d.launch_s},
                   {"bound", d.bound},
                   {"blocks", d.blocks},
                   {"stream_bytes_per_s_per_block", d.stream_bytes_per_s_per_block},
                   {"tile_cycles", d.tile_cycles},
                   {"tile_traits_instructions", d.tile_traits_instructions},
                   {"tile_compiled_instructions", d.tile_compiled_instructions},
                   {"tile_stretch", d.tile_stretch},
                   {"dram_bytes", d.dram_bytes},
                   {"kv_bytes", d.kv_bytes},
                   {"qo_bytes", d.qo_bytes},
                   {"writeback_bytes", d.writeback_bytes},
                   {"l2_bytes", d.l2_bytes},
                   {"workspace_bytes", d.workspace_bytes}};
  }
  j["tflops"] = p.achieved_flops() / 1e12;
  j["bound"] = pipe_name(p.bound);
  j["causal_imbalance"] = p.imbalance;
  j["first_touch"] = {{"work_share", p.first_touch.work_share},
                      {"dram_share", p.first_touch.dram_share},
                      {"factor", p.first_touch_factor}};
  json pipes = json::object();
  for (Pipe q : kAllPipes) pipes[pipe_name(q)] = p.pipes[q];
  j["pipes_s"] = pipes;
  j["overhead_s"] = p.overhead_s;
  const Occupancy& o = p.occupancy;
  j["occupancy"] = {{"threads_per_block", o.threads_per_block},
                    {"warps_per_block", o.warps_per_block},
                    {"registers_per_thread", o.registers_per_thread},
                    {"registers_from", p.registers_from_profile ? "profile" : "traits estimate"},
                    {"smem_allocated_per_block", o.smem_allocated_per_block},
                    {"blocks_per_sm", o.blocks_per_sm},
                    {"warps_per_sm", o.warps_per_sm},
                    {"fraction", o.fraction},
                    {"limiter", limiter_name(o.limiter)},
                    {"blocks_by", {{"warps", o.blocks_by_warps},
                                   {"registers", o.blocks_by_registers},
                                   {"shared_memory", o.blocks_by_smem},
                                   {"block_limit", o.blocks_by_limit}}}};
  j["waves"] = {{"blocks", p.waves.blocks},
                {"per_wave", p.waves.per_wave},
                {"waves", p.waves.waves},
                {"tail_blocks", p.waves.tail_blocks},
                {"tail_fill", p.waves.tail_fill}};
  json sites = json::array();
  for (const SiteAnalysis& s : g.sites) {
    const double units = s.scope == SiteScope::PerKvTile ? double(n.tiles.visits) : double(n.tiles.blocks);
    sites.push_back({{"name", s.name},
                     {"op", smem_op_name(s.op)},
                     {"scope", s.scope == SiteScope::PerKvTile ? "per_kv_tile" : "per_block"},
                     {"bytes_per_lane", s.bytes_per_lane},
                     {"requests", s.requests * units},
                     {"wavefronts", s.wavefronts * units},
                     {"conflict_degree", s.conflict_degree()}});
  }
  j["smem_sites"] = sites;
  j["intensity_flops_per_byte"] = {{"dram", p.intensity_dram}, {"l2", p.intensity_l2}, {"shared", p.intensity_shared}};
  j["counts"] = {{"q_tiles", n.tiles.q_tiles},
                 {"kv_tiles", n.tiles.kv_tiles},
                 {"blocks", n.tiles.blocks},
                 {"kv_tile_visits", n.tiles.visits},
                 {"mean_kv_tiles_per_block", n.tiles.mean_tiles_per_block},
                 {"nominal_flops", n.nominal_flops},
                 {"useful_flops", n.useful_flops},
                 {"executed_flops", n.executed_flops},
                 {"ffma", n.ffma},
                 {"fp32_other", n.fp32_other},
                 {"exp", n.exp},
                 {"shuffles", n.shuffles},
                 {"int_logic", n.int_logic},
                 {"mma", n.mma},
                 {"mma_flops", n.mma_flops()},
                 {"warp_tile_visits", n.warp_tile_visits},
                 {"warp_instructions", n.warp_instructions},
                 {"barriers", n.barriers},
                 {"smem_requests", n.smem_requests},
                 {"smem_wavefronts", n.smem_wavefronts},
                 {"smem_ideal_wavefronts", n.smem_ideal_wavefronts},
                 {"smem_load_requests", n.smem_load_requests},
                 {"smem_load_wavefronts", n.smem_load_wavefronts},
                 {"smem_store_requests", n.smem_store_requests},
                 {"smem_store_wavefronts", n.smem_store_wavefronts},
                 {"smem_async_copy_requests", n.smem_async_copy_requests},
                 {"smem_async_copy_wavefronts", n.smem_async_copy_wavefronts},
                 {"shared_pipe_requests", n.shared_pipe_requests},
                 {"shared_pipe_wavefronts", n.shared_pipe_wavefronts},
                 {"l2_bytes", n.l2_bytes()},
                 {"dram_compulsory_bytes", n.dram_compulsory_bytes}};
  j["dram"] = {{"bytes", p.dram.bytes},
               {"working_set_bytes", p.dram.working_set_bytes},
               {"usable_l2_bytes", p.dram.usable_l2_bytes},
               {"reread_hit_fraction", p.dram.reread_hit_fraction},
               {"entries_in_flight", p.dram.entries_in_flight}};
  j["baselines"] = {{"roofline_s", roofline.time_s},
                    {"seed_s", seed.time_s},
                    {"seed_bound", seed.bound}};
  return j;
}

}  // namespace flashtune::model
