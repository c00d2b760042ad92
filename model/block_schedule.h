// How long a causal grid takes when its blocks share the SMs. Query tile i of a causal kernel
// visits about (i + 1) Br / Bc K/V tiles, so its blocks are unequal; the hardware hands them to
// free SM slots in launch order (kernel traits: light to heavy one entry after another, or heavy
// to light over the whole grid, traits::grid_order), and the blocks
// resident on one SM share its throughput: when the short ones finish, the long ones speed up,
// up to the speed of a block alone (its serial path). A wave model with blocks of the mean size
// misses both the tail and the speed-up; this simulates them.
#pragma once

#include <vector>

namespace flashtune {
struct Workload;
}

namespace flashtune::model {

struct SharedSmGrid {
  int Br = 0, Bc = 0;
  bool heavy_first = false;  // causal query tiles launched heavy to light
  int sm_count = 0;
  int blocks_per_sm = 0;  // k: resident blocks per SM when the SM is full
};

// Makespan of the causal grid in units of u = W(k) / k, the time a full SM takes per mean
// block's work (W(k): a wave of k mean blocks per SM). `solo` = W(1) / u, the time one mean
// block takes alone on an SM, in the same units, clamped to [1, k]: 1 when the SM's throughput
// is shared perfectly among its blocks, k when each block runs at its solo speed regardless (the
// old fixed-duration schedule). A non-causal grid is not simulated (its blocks are equal: the
// wave model is exact there); this returns waves x k for it.
// Blocks are placed in launch order into the first free slot (the first wave round-robin over the
// SMs); each SM runs its m resident blocks at min(1 / solo, 1 / m) mean blocks per unit each.
// Computed at 9 values of solo per (workload, grid) and cached (thread-safe); in between, linear.
double shared_sm_makespan(const Workload& w, const SharedSmGrid& g, double solo);

// The schedule itself, uncached, at each of `solos` (clamped to [1, k]); w.causal is not read
// (the grid is taken as causal). Not per block: while blocks remain to be placed every SM holds
// k of them at 1 / k of its throughput each, so that phase is a list schedule of the blocks on
// SMs x k independent slots, placed in rounds of SMs x k with whole runs of equal blocks (and
// whole periods of an entry-major grid) skipped at once; only the SMs' run-down after the last
// placement depends on solo, O(SMs x k) per value. Time O(SMs x k x log + blocks that cannot be
// skipped), memory O(SMs x k).
std::vector<double> shared_sm_schedule(const Workload& w, const SharedSmGrid& g, const std::vector<double>& solos);

}  // namespace flashtune::model
