#include "model/geometry_analysis.h"

#include <array>
#include <set>
#include <stdexcept>
#include <utility>

#include "model/bank_sim.h"

namespace flashtune::model {
namespace {

constexpr long long kSectorBytes = 32;  // the unit L2 serves and the crossbar moves

}  // namespace

GeometryAnalysis analyse_geometry(const KernelGeometry& g) {
  GeometryAnalysis a;
  a.config = g.config;
  a.threads_per_block = g.threads_per_block;
  a.warps_per_block = (g.threads_per_block + kWarpSize - 1) / kWarpSize;
  a.smem_bytes = g.smem_bytes;
  a.registers_estimate = g.registers_estimate;
  a.per_kv_tile = g.per_kv_tile;
  a.q_bytes_per_block = g.q_bytes_per_block;
  a.o_bytes_per_block = g.o_bytes_per_block;
  a.kv_bytes_per_kv_tile = g.kv_bytes_per_kv_tile;
  a.kv_loads_overlap_compute = g.kv_loads_overlap_compute;
  a.warps_skip_masked_tiles = g.warps_skip_masked_tiles;
  a.rows_per_warp = g.rows_per_warp;
  a.mask_instructions_per_score = g.mask_instructions_per_score;
  a.causal_heavy_first = g.causal_heavy_first;
  if (g.warps_skip_masked_tiles && (g.rows_per_warp <= 0 || g.rows_per_warp * a.warps_per_block != g.config.Br))
    throw std::logic_error(g.config.name() + ": warps skip masked tiles, but " + std::to_string(g.rows_per_warp) +
                           " rows per warp x " + std::to_string(a.warps_per_block) + " warps != Br = " +
                           std::to_string(g.config.Br));

  const std::string where = g.config.name();
  for (const SmemSite& site : g.smem_sites) {
    const std::string at = where + " site '" + site.name + "'";
    if (!site.byte_address) throw std::logic_error(at + ": no address function");
    if (site.warps < 0 || site.warps > a.warps_per_block)
      throw std::logic_error(at + ": " + std::to_string(site.warps) + " warps, block has " +
                             std::to_string(a.warps_per_block));
    SiteAnalysis s;
    s.name = site.name;
    s.op = site.op;
    s.scope = site.scope;
    s.bytes_per_lane = site.bytes_per_lane;
    std::array<long long, kWarpSize> addr{};
    for (int warp = 0; warp < site.warps; ++warp) {
      for (long long i = 0; i < site.instances; ++i) {
        for (int lane = 0; lane < kWarpSize; ++lane) {
          const long long b = site.byte_address(warp, lane, i);
          if (b >= 0 && b + site.bytes_per_lane > g.smem_bytes)
            throw std::logic_error(at + ": warp " + std::to_string(warp) + " lane " + std::to_string(lane) +
                                   " instance " + std::to_string(i) + " reads byte " + std::to_string(b) +
                                   " beyond the block's " + std::to_string(g.smem_bytes) + " bytes");
          addr[static_cast<std::size_t>(lane)] = b;
        }
        WarpAccessCost c;
        try {
          c = simulate_warp_access(addr, site.bytes_per_lane);
        } catch (const std::invalid_argument& e) {
          throw std::logic_error(at + ": " + e.what());
        }
        if (c.active_lanes == 0) continue;
        s.requests += 1;
        s.wavefronts += c.wavefronts;
        s.ideal += c.ideal;
        if (site.op == SmemOp::AsyncCopy && site.global_byte_address) {
          std::set<long long> sectors;
          std::set<std::pair<long long, long long>> fetched;
          for (int lane = 0; lane < kWarpSize; ++lane) {
            const long long smem = addr[static_cast<std::size_t>(lane)];
            if (smem < 0) continue;
            const long long global = site.global_byte_address(warp, lane, i);
            if (global < 0)
              throw std::logic_error(at + ": lane " + std::to_string(lane) + " copies to shared memory from no global address");
            for (long long b = 0; b < site.bytes_per_lane; b += kSectorBytes) {
              sectors.insert((global + b) / kSectorBytes);
              fetched.insert({(global + b) / kSectorBytes, (smem + b) / kSectorBytes});
            }
          }
          s.copy_ideal_sectors += double(sectors.size());
          s.copy_sectors += double(fetched.size());
        }
      }
    }
    if (s.scope == SiteScope::PerKvTile) {
      a.requests_per_kv_tile += s.requests;
      a.wavefronts_per_kv_tile += s.wavefronts;
      a.ideal_per_kv_tile += s.ideal;
      a.split_copy_sectors_per_kv_tile += s.copy_sectors - s.copy_ideal_sectors;
    } else {
      a.requests_per_block += s.requests;
      a.wavefronts_per_block += s.wavefronts;
      a.ideal_per_block += s.ideal;
      a.split_copy_sectors_per_block += s.copy_sectors - s.copy_ideal_sectors;
    }
    a.sites.push_back(std::move(s));
  }
  return a;
}

}  // namespace flashtune::model
