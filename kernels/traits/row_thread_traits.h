// What the two one-row-per-thread SIMT kernels (row_smem, row_reg) share in their geometry: the K
// and V float4 reads every live thread makes in a K/V tile (the same address across the warp, a
// broadcast), and the per-tile instruction counts of a thread owning one query row. Host-only use
// (the model's geometry); plain C++17 like the rest of the traits.
#pragma once

#include <string>

#include "traits_common.h"

namespace flashtune::traits {

// Float `col` of row `row` in a [rows, stride] shared tile at float `offset`.
constexpr int row_major_at(int offset, int stride, int row, int col) { return offset + row * stride + col; }

// Every live thread (of `threads`) reads tile[j][k .. k + 3] as one float4, for each key j of the
// Bc and each 4-float step k of d: K in Q K^T, V in P V.
inline SmemSite row_thread_kv_read_site(std::string name, int threads, int bc, int d, int offset, int stride) {
  const int warps = ceil_div(threads, 32);
  return make_site(std::move(name), SmemOp::Load, 16, SiteScope::PerKvTile, warps, 1LL * bc * d / 4,
                   [=](int warp, int lane, long long i) -> long long {
                     if (warp * 32 + lane >= threads) return -1;
                     const int j = int(i / (d / 4)), k = int(i % (d / 4)) * 4;
                     return 4LL * row_major_at(offset, stride, j, k);
                   });
}

// Per K/V tile, a thread per query row: 2 Br Bc d FFMA (Q K^T and P V); per row 3 Bc + d + 6 other
// fp32 instructions (max, exponent argument, row sum; O's rescale) and Bc + 1 exponentials (p for
// every key, alpha once); no shuffles; two block barriers.
inline void set_row_thread_tile_counts(KernelGeometry& g, const TileConfig& c) {
  const double rows = c.Br, keys = c.Bc;
  g.per_kv_tile.ffma = 2.0 * rows * keys * c.d;
  g.per_kv_tile.fp32_other = rows * (3.0 * keys + c.d + 6.0);
  g.per_kv_tile.exp = rows * (keys + 1.0);
  g.per_kv_tile.shuffles = 0;
  g.per_kv_tile.barriers = 2;
}

}  // namespace flashtune::traits
