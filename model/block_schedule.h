// Load imbalance of a causal grid. Query tile i of a causal kernel visits about (i + 1) Br / Bc
// K/V tiles, so its blocks are unequal, and the hardware hands them to free SM slots in launch
// order: blockIdx.x (the query tile, light to heavy) fastest, then the batch. The heaviest blocks
// come last in every batch and the last wave waits for them; with few blocks per SM slot the
// longest block alone sets the time. The wave model (model/predict.h) assumes blocks of the mean
// size; this factor is how much longer the real schedule takes.
#pragma once

namespace flashtune {
struct Workload;
}

namespace flashtune::model {

// makespan(greedy list schedule of the real blocks) / makespan(the same number of mean-sized
// blocks), with each block's duration proportional to the K/V tiles it visits and `slots` blocks
// resident at once (SMs x blocks per SM). Exactly 1 for a non-causal grid. Simulated once per
// (B, N, Br, Bc, slots) and cached (thread-safe): O(blocks log slots) the first time.
double causal_imbalance(const Workload& w, int Br, int Bc, long long slots);

}  // namespace flashtune::model
