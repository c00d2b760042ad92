#include "model/counts.h"

#include <algorithm>

namespace flashtune::model {
namespace {

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// sum_{i=0}^{n-1} floor((a*i + b) / m) for n, m > 0 and a, b >= 0 (the classic Euclid-like
// reduction; O(log) steps).
long long floor_sum(long long n, long long m, long long a, long long b) {
  long long ans = 0;
  while (true) {
    if (a >= m) {
      ans += (n - 1) * n / 2 * (a / m);
      a %= m;
    }
    if (b >= m) {
      ans += n * (b / m);
      b %= m;
    }
    const long long y_max = a * n + b;
    if (y_max < m) break;
    n = y_max / m;
    b = y_max % m;
    std::swap(m, a);
  }
  return ans;
}

// sum_{k=0}^{Tr-1} min(Tc, floor((Br k + last) / Bc) + 1): the K/V tiles that rows up to
// Br k + last see under causal masking, capped at Tc (last >= 0).
long long causal_tile_sum(long long Tr, long long Tc, long long Br, long long Bc, long long last) {
  // The first `uncapped` query tiles stay below Tc: Br k + last < (Tc - 1) Bc.
  const long long num = (Tc - 1) * Bc - last;
  const long long uncapped = num <= 0 ? 0 : std::min(Tr, ceil_div(num, Br));
  return uncapped + floor_sum(uncapped, Bc, Br, last) + (Tr - uncapped) * Tc;
}

}  // namespace

TileVisits count_tile_visits(const Workload& w, int Br, int Bc) {
  TileVisits t;
  t.q_tiles = ceil_div(w.N, Br);
  t.kv_tiles = ceil_div(w.keys(), Bc);
  // Bottom-right causal: query row i sees keys up to i + off (off = keys - N >= 0).
  const long long off = w.causal ? std::max(0LL, w.causal_offset()) : 0;
  t.blocks = t.q_tiles * w.B;
  long long per_batch = 0, last = 0;
  if (!w.causal) {
    per_batch = t.q_tiles * t.kv_tiles;
    last = t.q_tiles;
    t.max_tiles_per_block = t.kv_tiles;
  } else {
    // Query tile k (0-based) visits f(k) = floor((Br k + Br - 1 + off) / Bc) + 1 tiles, capped
    // at Tc; the capped ones (f(k) = Tc) visit the last tile.
    per_batch = causal_tile_sum(t.q_tiles, t.kv_tiles, Br, Bc, Br - 1 + off);
    const long long num = (t.kv_tiles - 1) * Bc - (Br - 1 + off);
    const long long uncapped = num <= 0 ? 0 : std::min(t.q_tiles, ceil_div(num, Br));
    last = t.q_tiles - uncapped;
    t.max_tiles_per_block = causal_kv_tiles(t.q_tiles - 1, Br, Bc, t.kv_tiles, off);
  }
  t.visits = per_batch * w.B;
  t.last_tile_visits = last * w.B;
  t.mean_tiles_per_block = double(t.visits) / double(t.blocks);
  return t;
}

long long count_warp_tile_visits(const Workload& w, int Br, int Bc, int rows_per_warp) {
  const long long Tr = ceil_div(w.N, Br), Tc = ceil_div(w.keys(), Bc);
  const int warps = Br / rows_per_warp;
  if (!w.causal) return warps * Tr * Tc * w.B;
  const long long off = std::max(0LL, w.causal_offset());
  // Warp v of query tile k: rows up to Br k + rows_per_warp (v + 1) - 1, which is at most the
  // block's last row, so its own bound also respects the block's loop bound (kv_tile_count).
  long long per_batch = 0;
  for (int v = 0; v < warps; ++v)
    per_batch += causal_tile_sum(Tr, Tc, Br, Bc, (long long)rows_per_warp * (v + 1) - 1 + off);
  return per_batch * w.B;
}

long long count_masked_warp_tiles(const Workload& w, int Br, int Bc, int rows_per_warp) {
  const long long Tr = ceil_div(w.N, Br), full = w.keys() / Bc;  // tiles with no key past the end
  const int warps = Br / rows_per_warp;
  long long unmasked = 0;
  if (!w.causal) {
    unmasked = warps * Tr * full;
  } else {
    const long long off = std::max(0LL, w.causal_offset());
    // Warp v of query tile k: min(full, floor((Br k + rows_per_warp v + off + 1) / Bc)) unmasked
    // tiles = causal_tile_sum(.., full + 1, .., a) - Tr, a = rows_per_warp v + off + 1 (min(T + 1,
    // f + 1) = min(T, f) + 1).
    for (int v = 0; v < warps; ++v)
      unmasked += causal_tile_sum(Tr, full + 1, Br, Bc, (long long)rows_per_warp * v + off + 1) - Tr;
  }
  return count_warp_tile_visits(w, Br, Bc, rows_per_warp) - unmasked * w.B;
}

Counts count_work(const Workload& w, const GeometryAnalysis& g) {
  Counts c;
  const int Br = g.config.Br, Bc = g.config.Bc;
  c.tiles = count_tile_visits(w, Br, Bc);
  const double B = double(w.B), N = double(w.N), d = double(w.d), keys = double(w.keys());
  const double visits = double(c.tiles.visits), blocks = double(c.tiles.blocks);

  c.nominal_flops = w.nominal_flops();
  // Causal: row i sees i + 1 + off keys, sum_i = N (N + 1) / 2 + N off.
  const double off = double(std::max(0LL, w.causal_offset()));
  c.useful_flops = w.causal ? 2.0 * B * N * (N + 1.0 + 2.0 * off) * d : 4.0 * B * N * keys * d;
  // Every visited tile runs the full tile's instructions: masked scores and tail rows are
  // computed and then discarded (warps execute in lockstep), so per-tile counts apply as is.
  // A kernel whose warps skip fully masked tiles (causal) runs them per (warp, tile) instead:
  // `compute` is the visits' worth of full-block tiles its warps compute.
  const bool skip = g.warps_skip_masked_tiles && g.rows_per_warp > 0;
  const int warps = skip ? Br / g.rows_per_warp : g.warps_per_block;
  c.warp_tile_visits = skip ? double(count_warp_tile_visits(w, Br, Bc, g.rows_per_warp)) : double(warps) * visits;
  const double compute = skip ? c.warp_tile_visits / warps : visits;
  c.executed_flops = 4.0 * double(Br) * double(Bc) * d * compute;

  const TileInstructionCounts& t = g.per_kv_tile;
  const double rows = B * N;  // the epilogue normalises each row that exists
  c.ffma = t.ffma * compute + g.epilogue_ffma_per_row * rows;
  c.fp32_other = t.fp32_other * compute;
  c.exp = t.exp * compute + g.epilogue_mufu_per_row * rows;
  c.shuffles = t.shuffles * compute;
  c.int_logic = t.int_logic * compute;
  c.mma = t.mma * compute;
  c.mma16 = t.mma16 * compute;
  c.wgmma = t.wgmma * compute;
  c.cvt = t.cvt * compute;
  c.barriers = t.barriers * visits;  // the whole block waits, skipping warps too
  if (skip && g.mask_instructions_per_score > 0) {
    c.masked_warp_tiles = double(count_masked_warp_tiles(w, Br, Bc, g.rows_per_warp));
    c.mask_instructions = g.mask_instructions_per_score * c.masked_warp_tiles * double(g.rows_per_warp) * double(Bc);
  }
  for (const SiteAnalysis& s : g.sites) {
    // cp.async tile copies are the block's, issued before a warp's skip; its fragment reads
    // (loads) and any stores belong to the compute.
    const double per_tile = skip && s.op != SmemOp::AsyncCopy ? compute : visits;
    const double units = s.scope == SiteScope::PerKvTile ? per_tile : blocks;
    double* requests = s.op == SmemOp::Load    ? &c.smem_load_requests
                       : s.op == SmemOp::Store ? &c.smem_store_requests
                                               : &c.smem_async_copy_requests;
    double* wavefronts = s.op == SmemOp::Load    ? &c.smem_load_wavefronts
                         : s.op == SmemOp::Store ? &c.smem_store_wavefronts
                                                 : &c.smem_async_copy_wavefronts;
    double* ideal = s.op == SmemOp::Load    ? &c.smem_load_ideal
                    : s.op == SmemOp::Store ? &c.smem_store_ideal
                                            : &c.smem_async_copy_ideal;
    *requests += s.requests * units;
    *wavefronts += s.wavefronts * units;
    *ideal += s.ideal * units;
  }
  c.smem_requests = c.smem_load_requests + c.smem_store_requests + c.smem_async_copy_requests;
  c.smem_wavefronts = c.smem_load_wavefronts + c.smem_store_wavefronts + c.smem_async_copy_wavefronts;
  c.smem_ideal_wavefronts = c.smem_load_ideal + c.smem_store_ideal + c.smem_async_copy_ideal;
  const double shuffle_instructions = c.shuffles / 32.0;
  c.shared_pipe_requests = c.smem_load_requests + c.smem_store_requests + shuffle_instructions;
  c.shared_pipe_wavefronts = c.smem_load_wavefronts + c.smem_store_wavefronts + shuffle_instructions;
  // mma.sync is one warp instruction each; the integer split one thread instruction per value.
  c.extra_warp_instructions = g.extra_warp_instructions_per_warp_tile * c.warp_tile_visits +
                              g.extra_warp_instructions_per_warp_block * double(g.warps_per_block) * blocks;
  // A wgmma is issued by each of its warpgroup's 4 warps; its m16n8k16 equivalents are not issued.
  const double tensor_issue = c.wgmma > 0 ? 4.0 * c.wgmma : c.mma16;
  c.warp_instructions = (c.ffma + c.fp32_other + c.cvt + c.exp + c.shuffles + c.int_logic + c.mask_instructions) / 32.0 +
                        c.smem_requests +
                        c.mma + tensor_issue +
                        c.extra_warp_instructions;

  // Tails are masked in global memory: only the rows that exist move. Q and O: each of the
  // N rows once per batch entry. K/V: full tiles, plus the partial last tile's rows (of keys).
  const double q_per_row = double(g.q_bytes_per_block) / Br;
  const double o_per_row = double(g.o_bytes_per_block) / Br;
  const double kv_per_row = double(g.kv_bytes_per_kv_tile) / Bc;
  const double last_rows = keys - double(c.tiles.kv_tiles - 1) * Bc;
  c.l2_q_bytes = q_per_row * N * B;
  c.l2_o_bytes = o_per_row * N * B;
  c.l2_kv_bytes = kv_per_row * (double(c.tiles.visits - c.tiles.last_tile_visits) * Bc +
                                double(c.tiles.last_tile_visits) * last_rows);
  // Whole tiles' worth: a partial tail tile's rows split like the full tile's first rows.
  c.l2_split_copy_bytes = 32.0 * (g.split_copy_sectors_per_kv_tile * visits + g.split_copy_sectors_per_block * blocks);
  // Q and O once per entry; K and V once per K/V head: the kv_group query heads of a group read
  // the same K/V (memory_traffic.h: when they run apart, their re-reads are far re-reads).
  c.dram_compulsory_bytes = (2.0 * B * N + 2.0 * (B / double(std::max(1, w.kv_group))) * keys) * d * w.element_bytes();
  return c;
}

}  // namespace flashtune::model
