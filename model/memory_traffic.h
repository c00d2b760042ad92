// DRAM bytes from the L2 capacity rule. K/V tiles are re-read by every query tile of their batch
// entry. The blocks of one entry that are resident together start together and sweep K/V in step,
// so they share each tile within a short window: only the first of them can miss. An entry whose
// Tr query tiles do not all fit on the GPU at once is swept S times, one after another, and
// only those later sweeps re-read K/V from far back:
//   sweeps per entry   S = ceil(Tr / T)                   (R resident blocks, T of one entry
//                                                         at a time: min(Tr, R); batch-fastest
//                                                         grids, traits::grid_order: R / B in
//                                                         [1, Tr])
//   entries in flight  E = min(B, ceil(R / Tr) + 1)      (x = query tile fastest; +1: a wave
//                                                         straddles two entries; batch-fastest:
//                                                         B, every other entry's same ranks run
//                                                         between two sweeps of one)
//   working set        W = E x (K + V of one entry) + X x (Q + O tile)
//                          (between two sweeps of a tile: the entries' K/V and the Q and O
//                           tiles streamed through L2 meanwhile; X = R, batch-fastest B x T)
//   usable L2          C = l2_bytes x l2_capacity_fraction
//                          (the whole L2, though Hopper's is two partitions: on the H200 a
//                           33.5 MB K/V set swept batch-fastest, g_n1024_b128_d32_causal, read
//                           1.34x Q+K+V from DRAM, as if it fit; half the L2 predicted 1.96x)
//   DRAM bytes         = compulsory + (1 - min(1, C / W)) x min(L2 re-reads, (S - 1) x compulsory K/V)
// (L2 re-reads: the L2 K/V bytes less the compulsory K/V.)
// Inference operands: K/V of one entry is keys rows; with grouped heads (g = kv_group query heads
// per K/V head) the compulsory K/V is one copy per K/V head, the working set counts the distinct
// K/V sets of the entries in flight (ceil((E - 1) / g) + 1 at most: consecutive entries are
// consecutive query heads), and S counts the sweeps of a K/V set by all g x Tr blocks of its
// heads: g heads resident together share each tile from L2, a head run long after its neighbours
// re-reads it from far back. A first mechanistic version, not yet checked against counters.
// Until 2026-11 the miss share applied
// to every re-read (Tr - 1 sweeps, not S - 1): up to 300x the DRAM reads the H200 counted
// (docs/counters.md, "Per-term check against the model").
#pragma once

#include "kernels/traits/tile_config.h"
#include "model/coefficients.h"
#include "model/counts.h"
#include "model/gpu_spec.h"

namespace flashtune::model {

struct DramEstimate {
  double bytes = 0;
  double working_set_bytes = 0;
  double usable_l2_bytes = 0;
  double reread_hit_fraction = 1;  // min(1, C / W)
  long long entries_in_flight = 0;
  long long kv_sets_in_flight = 0;  // distinct K/V heads among them (grouped heads share one)
  long long sweeps_per_entry = 1;  // S = ceil(g Tr / T_g), per K/V set (g = kv_group)
};

// The first blocks a batch-fastest (heavy-first causal) grid dispatches, and the share of the
// grid's work and of its DRAM bytes they carry. That grid launches every entry's heaviest query
// tile first, then every entry's second heaviest, and so on; the first block of an entry is the
// first to read its K/V, so the compulsory K/V reads of the whole grid fall in its first
// max(B, one wave) blocks, which hold only their own share of the work: on the H100's u08 (594
// entries of 336 rows, d = 32, bf16) mma16 Br 64 reads all 25.5 MB of K/V in 29% of its tiles.
// A uniform DRAM stream over the run hid that bunching under the SM's work (predict() joins the
// two parts apart). Where the first blocks are the whole grid, or the grid is not batch-fastest
// (an entry's K/V is first read as its tiles come, spread over the run), both shares are 1.
struct FirstTouch {
  double work_share = 1.0;  // of the grid's K/V tile visits
  double dram_share = 1.0;  // of DramEstimate::bytes: the compulsory K/V and the blocks' Q and O
};
FirstTouch first_touch_shares(const Workload& w, const TileConfig& c, const Counts& counts, const DramEstimate& dram,
                              long long blocks_per_wave, bool heavy_first);

// heavy_first: the kernel's KernelGeometry::causal_heavy_first (with w.causal, the grid's order).
DramEstimate estimate_dram(const Workload& w, const TileConfig& c, const Counts& counts, long long resident_blocks,
                           bool heavy_first, const GpuSpec& gpu, const Coefficients& k);

}  // namespace flashtune::model
