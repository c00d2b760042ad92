// Issue 26's decode plot: time against the K/V length with the bandwidth line. One series per swept
// decode shape family (heads, K/V heads, query rows, d, dtype) of split sweeps (benchmarks/decode_bench
// --sweep; fit/decode_sweeps.h reads them): at each K/V length the measured time at the model's split
// (what the dispatcher launches), the best over the swept splits, the model's time at its split, and
// the floor Q + K + V + O bytes over the copy bandwidth.
#pragma once

#include <string>
#include <vector>

#include "plots/drawer.h"
#include "plots/plot_set.h"

namespace flashtune::plots {

struct DecodeKeysPoint {
  std::string panel;   // the element type: one panel each ("bf16")
  std::string series;  // "1 x 32/8 heads, Nq 1, d 128"
  long long keys = 0;
  double at_ms = 0, best_ms = 0, model_ms = 0;
  double bytes = 0;  // Q, K, V and O once
};

// copy_gbps: the bandwidth the floor divides by (bytes read + written per second, / 1e9).
// Draws decode_vs_keys.{dat,svg,png}, one panel per element type; skipped (the note says why) where no
// series has two lengths.
PlotOutcome plot_decode_vs_keys(const Drawer& dr, const std::vector<DecodeKeysPoint>& pts, double copy_gbps);

}  // namespace flashtune::plots
