#include "fit/compiled_instruction_fit.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "kernels/traits/variants.h"
#include "model/compiled_instructions.h"
#include "model/config_catalog.h"
#include "model/counts.h"
#include "model/summary_stats.h"

namespace flashtune::fit {

CompiledInstructionFit fit_compiled_instructions(const std::vector<model::CounterObservation>& observations,
                                                 const std::string& source) {
  // The traits' count alone: an empty table adds nothing, so the fit never reads its own output.
  const model::CompiledInstructionTable none;
  std::map<std::string, ConfigInstructionObservations> by_config;
  std::map<std::string, model::GeometryAnalysis> geometry;
  for (const model::CounterObservation& o : observations) {
    const auto it = o.counters.find(model::kWarpInstructionsMetric);
    if (it == o.counters.end()) continue;
    const std::string name = o.config.name();
    auto g = geometry.find(name);
    if (g == geometry.end()) {
      model::GeometryAnalysis a = model::analyse_geometry(make_geometry(o.config));
      model::apply_compiled_instruction_correction(a, none);
      g = geometry.emplace(name, std::move(a)).first;
      by_config[name].variant = variant_name(o.config.variant);
      by_config[name].traits_per_warp_tile = model::traits_warp_instructions_per_warp_tile(g->second);
    }
    const model::Counts n = model::count_work(o.workload, g->second);
    const double warp_blocks = double(g->second.warps_per_block) * double(n.tiles.blocks);
    by_config[name].rows.push_back({n.warp_tile_visits, warp_blocks, it->second - n.warp_instructions, it->second});
  }
  if (by_config.empty())
    throw std::invalid_argument(std::string("no measurement has ") + model::kWarpInstructionsMetric +
                                " (tune with this build's counters)");
  return fit_instruction_extras(by_config, source);
}

CompiledInstructionFit fit_instruction_extras(const std::map<std::string, ConfigInstructionObservations>& by_config,
                                              const std::string& source) {
  CompiledInstructionFit out;
  out.table.source = source;
  std::vector<double> residuals;
  std::map<std::string, std::vector<double>> shares, per_block;  // by variant
  for (const auto& [name, obs] : by_config) {
    const std::vector<InstructionObservation>& rs = obs.rows;
    Eigen::MatrixXd A(rs.size(), 2);
    Eigen::VectorXd y(rs.size());
    for (std::size_t i = 0; i < rs.size(); ++i) {
      A(Eigen::Index(i), 0) = rs[i].warp_tiles;
      A(Eigen::Index(i), 1) = rs[i].warp_blocks;
      y(Eigen::Index(i)) = rs[i].extra;
    }
    // Columns scaled to unit norm so the rank test compares their directions, not their sizes.
    const Eigen::Vector2d scale(A.col(0).norm(), A.col(1).norm());
    if (rs.empty() || scale.minCoeff() <= 0) {
      out.left_out.push_back(name + ": no computed tiles or no blocks");
      continue;
    }
    const Eigen::MatrixXd As = A * scale.cwiseInverse().asDiagonal();
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(As);
    qr.setThreshold(1e-6);
    if (qr.rank() < 2) {
      out.left_out.push_back(name + ": " + std::to_string(rs.size()) +
                             " workload(s) with one ratio of tiles to blocks; needs two that differ");
      continue;
    }
    const Eigen::Vector2d x = qr.solve(y).cwiseQuotient(scale);
    const model::ExtraInstructions e{x(0), x(1)};
    out.table.configs[name] = e;
    ++out.configs_fitted;
    out.observations_used += int(rs.size());
    for (const InstructionObservation& r : rs) {
      const double model_count = r.counter - r.extra + e.per_warp_tile * r.warp_tiles + e.per_warp_block * r.warp_blocks;
      residuals.push_back(std::fabs(model_count - r.counter) / r.counter);
    }
    if (obs.traits_per_warp_tile > 0) shares[obs.variant].push_back(e.per_warp_tile / obs.traits_per_warp_tile);
    per_block[obs.variant].push_back(e.per_warp_block);
  }
  for (const auto& [variant, s] : shares)
    out.table.variant_shares[variant] = {model::median(s), model::median(per_block.at(variant))};
  if (!residuals.empty()) {
    out.max_rel_residual = *std::max_element(residuals.begin(), residuals.end());
    out.median_rel_residual = model::median(residuals);
  }
  return out;
}

}  // namespace flashtune::fit
