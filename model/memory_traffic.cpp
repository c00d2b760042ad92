#include "model/memory_traffic.h"

#include <algorithm>

#include "kernels/traits/traits_common.h"

namespace flashtune::model {
namespace {

// K and V read once per K/V head: the DRAM rule's compulsory K/V and the first touch's.
double compulsory_kv_bytes(const Workload& w) {
  const long long kv_sets = std::max<long long>(1, w.B / std::max(1, w.kv_group));
  return 2.0 * double(kv_sets) * double(w.keys()) * w.d * w.element_bytes();
}

}  // namespace

DramEstimate estimate_dram(const Workload& w, const TileConfig& c, const Counts& counts, long long resident_blocks,
                           bool heavy_first, const GpuSpec& gpu, const Coefficients& k) {
  DramEstimate e;
  const long long Tr = counts.tiles.q_tiles;
  const long long R = std::min(resident_blocks, counts.tiles.blocks);
  const bool batch_fastest = traits::grid_order(w.B, Tr, w.causal, heavy_first) == traits::GridOrder::BatchFastest;
  // Blocks of one entry resident together.
  const long long together = batch_fastest ? std::clamp<long long>(R / std::max<long long>(1, w.B), 1, Tr) : std::min(Tr, R);
  // Between two sweeps of an entry: tile-fastest, the resident blocks (about R / Tr entries);
  // batch-fastest, the same ranks of every other entry, B x together blocks.
  e.entries_in_flight = batch_fastest ? w.B : std::min<long long>(w.B, (R + Tr - 1) / Tr + 1);
  const double blocks_between = batch_fastest ? double(w.B) * double(together) : double(R);
  // Grouped heads: consecutive entries are consecutive query heads, kv_group of them per K/V set,
  // so E entries in flight hold at most ceil((E - 1) / g) + 1 distinct K/V sets.
  const long long g = std::max(1, w.kv_group), kv_sets_total = std::max<long long>(1, w.B / g);
  e.kv_sets_in_flight = std::min({e.entries_in_flight, kv_sets_total, (e.entries_in_flight - 1 + g - 1) / g + 1});
  const double kv_per_entry = 2.0 * double(w.keys()) * w.d * w.element_bytes();
  const double qo_per_block = 2.0 * double(c.Br) * w.d * w.element_bytes();
  e.working_set_bytes = double(e.kv_sets_in_flight) * kv_per_entry + blocks_between * qo_per_block;
  e.usable_l2_bytes = double(gpu.l2_bytes) * k.l2_capacity_fraction;
  e.reread_hit_fraction = e.working_set_bytes <= e.usable_l2_bytes ? 1.0 : e.usable_l2_bytes / e.working_set_bytes;
  const double compulsory_kv = compulsory_kv_bytes(w);
  const double rereads = std::max(0.0, counts.l2_kv_bytes - compulsory_kv);
  // A K/V set is swept by the g x Tr blocks of its query heads; those resident together (in
  // launch order: tile-fastest, min(g Tr, R); batch-fastest, g x `together`) read it in step.
  const long long set_blocks = g * Tr;
  const long long set_together =
      std::clamp<long long>(batch_fastest ? g * together : std::min(set_blocks, R), 1, set_blocks);
  e.sweeps_per_entry = (set_blocks + set_together - 1) / set_together;
  const double far_rereads = std::min(rereads, double(e.sweeps_per_entry - 1) * compulsory_kv);
  e.bytes = counts.dram_compulsory_bytes + (1.0 - e.reread_hit_fraction) * far_rereads;
  return e;
}

FirstTouch first_touch_shares(const Workload& w, const TileConfig& c, const Counts& counts, const DramEstimate& dram,
                              long long blocks_per_wave, bool heavy_first) {
  FirstTouch s;
  const long long B = w.B, Tr = counts.tiles.q_tiles, Tc = counts.tiles.kv_tiles;
  if (traits::grid_order(B, Tr, w.causal, heavy_first) != traits::GridOrder::BatchFastest) return s;
  const long long first = std::max(B, blocks_per_wave);
  if (first >= counts.tiles.blocks || counts.tiles.visits <= 0 || dram.bytes <= 0) return s;
  // Rank r is query tile Tr - 1 - r of every entry; it visits the K/V tiles count_tile_visits
  // gives it (bottom-right causal) and holds min(Br, N - i Br) valid query rows.
  const long long off = std::max(0LL, w.causal_offset());
  double tiles = 0, rows = 0;
  for (long long r = 0; r < Tr && r * B < first; ++r) {
    const long long i = Tr - 1 - r, blocks = std::min(B, first - r * B);
    tiles += double(blocks) * double(causal_kv_tiles(i, c.Br, c.Bc, Tc, off));
    rows += double(blocks) * double(std::min<long long>(c.Br, w.N - i * c.Br));
  }
  const double first_qo = 2.0 * rows * w.d * w.element_bytes();
  s.work_share = std::min(1.0, tiles / double(counts.tiles.visits));
  s.dram_share = std::min(1.0, (compulsory_kv_bytes(w) + first_qo) / dram.bytes);
  return s;
}

}  // namespace flashtune::model
