#include "model/memory_traffic.h"

#include <algorithm>

#include "kernels/traits/traits_common.h"

namespace flashtune::model {

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
  const double kv_per_entry = 2.0 * double(w.N) * w.d * w.element_bytes();
  const double qo_per_block = 2.0 * double(c.Br) * w.d * w.element_bytes();
  e.working_set_bytes = double(e.entries_in_flight) * kv_per_entry + blocks_between * qo_per_block;
  e.usable_l2_bytes = double(gpu.l2_bytes) * k.l2_capacity_fraction;
  e.reread_hit_fraction = e.working_set_bytes <= e.usable_l2_bytes ? 1.0 : e.usable_l2_bytes / e.working_set_bytes;
  const double compulsory_kv = 2.0 * double(w.B) * double(w.N) * w.d * w.element_bytes();
  const double rereads = std::max(0.0, counts.l2_kv_bytes - compulsory_kv);
  e.sweeps_per_entry = together > 0 ? (Tr + together - 1) / together : 1;
  const double far_rereads = std::min(rereads, double(e.sweeps_per_entry - 1) * compulsory_kv);
  e.bytes = counts.dram_compulsory_bytes + (1.0 - e.reread_hit_fraction) * far_rereads;
  return e;
}

}  // namespace flashtune::model
