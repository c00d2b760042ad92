#include "model/async_pipeline.h"

#include <algorithm>
#include <cmath>

#include "kernels/traits/wgmma16_traits.h"
#include "model/bank_sim.h"
#include "model/block_schedule.h"
#include "model/counts.h"
#include "model/memory_traffic.h"
#include "model/occupancy.h"

namespace flashtune::model {

namespace {

using traits::Wgmma16;

// One consumer warpgroup's work on one K/V tile, in seconds.
struct WarpgroupTile {
  double mma;         // its two products on the SM's tensor cores
  double qk, pv;      // the same, S = Q K^T and O += P V apart (equal FLOPs: 2 x 64 x Bc x d each)
  double simt_full;   // its softmax at the full rate of the FP32, SFU and issue pipes
  double fp32, sfu, issue;  // the same, pipe by pipe
  // With the overlap, the part of the softmax that must wait for the previous tile's P V (O's
  // rescale by alpha and P packed to the dtype: they write what that P V reads) and the rest (the
  // mask, row max, exponentials and row sum of S_j), which runs while it is on the tensor cores.
  double exposed, hidden;
  double sync;        // the wgmma wait round trips and the stage's mbarrier, exposed every tile
};

WarpgroupTile warpgroup_tile(const GeometryAnalysis& g, const GpuSpec& gpu, const Coefficients& c) {
  const TileConfig& cfg = g.config;
  const double consumers = Wgmma16::consumers(cfg), clock = gpu.clock_hz();
  const TileInstructionCounts& n = g.per_kv_tile;  // the block's, over its consumers
  WarpgroupTile t{};
  const double flops = 4.0 * Wgmma16::kRowsPerConsumer * cfg.Bc * cfg.d;
  t.mma = flops / (gpu.tensor_flops_per_clock_per_sm(cfg.dtype) * clock * c.wgmma_efficiency);
  t.fp32 = (n.ffma + n.fp32_other + n.cvt) / consumers / (gpu.fp32_lanes_per_sm * clock * c.fp32_efficiency);
  t.sfu = n.exp / consumers / (gpu.sfu_ops_per_clock_per_sm * clock * c.sfu_efficiency);
  // Warp instructions: the thread-level counts over 32, and each wgmma as one per warp of its group.
  // Plus what the compiled code runs beyond the traits' counts (addressing, predicates, barrier
  // and descriptor setup: model/compiled_instruction_table.h, fitted to smsp__inst_executed), per
  // warp and tile of the whole block, carried by the consumers' tiles.
  const double warp_instructions = (n.ffma + n.fp32_other + n.cvt + n.exp + n.shuffles) / 32.0 / consumers +
                                   4.0 * n.wgmma / consumers +
                                   g.extra_warp_instructions_per_warp_tile * g.warps_per_block / consumers;
  t.issue = (1.0 + c.issue_overhead) * warp_instructions / (gpu.warp_schedulers_per_sm * clock * c.issue_efficiency);
  t.simt_full = soft_max({t.fp32, t.sfu, t.issue}, c.overlap_exponent);
  t.qk = t.mma * Wgmma16::qk_wgmmas(cfg) * cfg.Bc / (Wgmma16::qk_wgmmas(cfg) * cfg.Bc + Wgmma16::pv_wgmmas(cfg) * cfg.d);
  t.pv = t.mma - t.qk;
  // O *= alpha (d / 2 FMUL per thread) and the P pack (Bc / 4 cvt per thread), on the FP32 and
  // issue pipes (traits: the O rescale and cvt terms of the per-tile counts).
  const double exposed_per_thread = cfg.d / 2.0 + cfg.Bc / 4.0;
  const double exposed_fp32 = exposed_per_thread * Wgmma16::kWarpgroupThreads / (gpu.fp32_lanes_per_sm * clock * c.fp32_efficiency);
  const double exposed_issue = (1.0 + c.issue_overhead) * exposed_per_thread * Wgmma16::kWarpgroupThreads / 32.0 /
                               (gpu.warp_schedulers_per_sm * clock * c.issue_efficiency);
  t.exposed = std::min(t.simt_full, soft_max({exposed_fp32, exposed_issue}, c.overlap_exponent));
  t.hidden = t.simt_full - t.exposed;
  t.sync = c.overlapped_iteration_cycles / clock;
  return t;
}

struct BlockTerms {
  double tensor, simt, chain, copy, work, stall;  // seconds of k resident blocks' mean work
  double fp32, sfu, issue;
};

}  // namespace

double consumer_tile_visits(const Workload& w, const TileConfig& c) {
  const TileVisits tiles = count_tile_visits(w, c.Br, c.Bc);
  return w.causal ? double(count_warp_tile_visits(w, c.Br, c.Bc, Wgmma16::kRowsPerConsumer))
                  : double(Wgmma16::consumers(c)) * double(tiles.visits);
}

AsyncPipelineCounts count_async_pipeline(const Workload& w, const TileConfig& c, const Counts& n) {
  AsyncPipelineCounts a;
  a.consumer_tiles = consumer_tile_visits(w, c);
  // Per (consumer, computed tile): S = Q K^T in d / 16 wgmma, O += P V in Bc / 16; each of the
  // warpgroup's warps executes each one as an HGMMA warp instruction.
  a.wgmma = a.consumer_tiles * (Wgmma16::qk_wgmmas(c) + Wgmma16::pv_wgmmas(c));
  a.wgmma_warp_instructions = Wgmma16::kWarpgroupThreads / 32 * a.wgmma;
  const double blocks = double(n.tiles.blocks), loads = double(n.tiles.visits);
  // Loads: the whole boxes, as the kernel's mbarriers expect them (Q's per block, K's and V's per
  // tile the producer loads): the TMA counter counts a box's rows past N or kv_len, zero-filled,
  // as read (H100: the tail tiles of N = 777 counted in full, 13% above the rows that exist),
  // while the crossbar carries only the rows that exist (l2_to_sm_sectors).
  a.tma_load_bytes = double(Wgmma16::q_tx_bytes(c)) * blocks + double(Wgmma16::stage_tx_bytes(c)) * loads;
  // Stores: O's rows that exist (a box's rows past N are not written), the block traffic the
  // counts hold (traits: set_block_traffic).
  a.tma_store_bytes = n.l2_o_bytes;
  // One instruction per box, a box 64 columns (one swizzled column block) wide: per block, Q's and
  // O's column blocks for each consumer's 64 rows; per tile the producer loads, K's and V's.
  const double boxes = Wgmma16::column_blocks(c.d), consumers = Wgmma16::consumers(c);
  a.tma_load_instructions = boxes * (consumers * blocks + 2.0 * loads);
  a.tma_store_instructions = boxes * consumers * blocks;
  return a;
}

Prediction predict_async_pipeline(const Workload& w, const GeometryAnalysis& g, const GpuSpec& gpu,
                                  const Coefficients& c, int registers_per_thread) {
  Prediction p = prediction_prologue(w, g, gpu, c, registers_per_thread);
  if (!p.refusal.empty()) return p;
  const Counts& n = p.counts;

  const TileConfig& cfg = g.config;
  const double clock = gpu.clock_hz(), blocks = double(n.tiles.blocks);
  const int consumers = Wgmma16::consumers(cfg);
  // K/V tiles a block loads (the producer visits every tile up to the block's last row's diagonal)
  // and warpgroup-tiles it computes (a causal warpgroup skips the tiles past its own diagonal).
  const double loads = n.tiles.mean_tiles_per_block;
  const double wg_tiles = consumer_tile_visits(w, cfg) / blocks;
  const WarpgroupTile t = warpgroup_tile(g, gpu, c);
  // The softmax's pipes at the rate W resident warps sustain (the SIMT rule, latency_warps): one
  // warpgroup alone (4 warps, one per scheduler) runs it at about half rate. Measured: with the
  // rule of mma16's two-row-tile warps (one warp per scheduler saturates it) the held-out wgmma16
  // pairs were 12.5% off, with this one 10.6% (H100, before the compiled instructions were counted).
  const auto h = [&](double warps) { return std::min(1.0, warps / c.latency_warps); };
  // A tile's load: its L2 latency, to be hidden by the stages in flight; its bytes stream at the
  // SM's share of the L2 bandwidth beside the math (a throughput term of the SM's work below).
  const double tile_bytes = double(Wgmma16::stage_tx_bytes(cfg));
  const double load_latency = c.iteration_latency_cycles / clock;
  const double tile_transfer = tile_bytes / (gpu.l2_bytes_per_s() * c.l2_efficiency / gpu.sm_count);
  const double l2_per_block = n.l2_bytes() / blocks / (gpu.l2_bytes_per_s() * c.l2_efficiency);
  const double dram_per_block = p.dram.bytes / blocks / (gpu.dram_bytes_per_s() * c.dram_efficiency);

  // The mask's instructions on the warpgroup-tiles that cross a diagonal or kv_len (about one per
  // warpgroup and block under causal: each busiest warpgroup's chain takes its own).
  const double masked_wg_tiles =
      g.mask_instructions_per_score > 0
          ? double(count_masked_warp_tiles(w, cfg.Br, cfg.Bc, Wgmma16::kRowsPerConsumer)) / blocks
          : 0.0;
  const double mask_issue = (1.0 + c.issue_overhead) * g.mask_instructions_per_score * Wgmma16::kRowsPerConsumer *
                            cfg.Bc / 32.0 / (gpu.warp_schedulers_per_sm * clock * c.issue_efficiency);
  const double block_issue = (1.0 + c.issue_overhead) * g.extra_warp_instructions_per_warp_block * g.warps_per_block /
                             (gpu.warp_schedulers_per_sm * clock * c.issue_efficiency);
  // One warpgroup's chain per K/V tile. In order (the serial loop): both products, then the
  // softmax. With the intra-warpgroup overlap (traits: TileConfig::overlap), tile j's softmax runs
  // while tile j - 1's P V holds the tensor cores: S_j, then the longer of that P V and the hidden
  // part of the softmax, then its exposed part; the first tile's softmax has no P V beside it and
  // the last P V no softmax (chain_once). Never longer than the serial chain.
  const double h4 = h(4.0);
  // The compiled /ov loop hides it only where the kernel can split the block after the softmax
  // (Wgmma16::overlap_hides_softmax); elsewhere it runs the serial chain.
  const bool hides = Wgmma16::overlap_hides_softmax(cfg);
  const double chain_per_tile = hides ? t.qk + std::max(t.pv, t.hidden / h4) + t.exposed / h4 + t.sync
                                      : t.mma + t.simt_full / h4 + t.sync;
  const double chain_once = hides && loads > 0 ? std::min(t.pv, t.hidden / h4) : 0.0;
  // How the SM's products and softmax join. A block's consumers start each tile together (one
  // full barrier), so without the ping-pong their phases align and the two terms join as the
  // mma.sync families' phases do (phase_overlap_exponent). With it (Wgmma16::staggers_phases) the
  // consumers issue in a fixed ring, one round per tile, and the round is a schedule whose two
  // sides join as two pipes side by side (overlap_exponent), each with what the ring exposes:
  //   tensor side: a consumer's P V (serial loop; its next turn with /ov) waits for its own
  //     softmax, which the other C - 1 consumers' products issued in between may not cover:
  //     gap = max(0, s - (C - 1) x others), s one warpgroup's softmax at its own rate (the chain's);
  //   SIMT side, serial loop (two turns per tile): the round's first consumer issues its S only
  //     after the last consumer's softmax of the previous round (its S turn comes after that
  //     consumer's P V turn), and waits for it before its softmax: one consumer's S per round, on
  //     no other pipe's time. The overlapped loop (one turn per tile, S_j with P_{j-1} V_{j-1})
  //     passes its turn right after the issue, before its softmax, so the next consumer's turn
  //     never waits for a softmax: no such wait (with it, the model had /ov/pp 2-4% slower than the
  //     serial s2 at d = 128, where the H100 ran it 3-4% faster: docs/fit.md).
  // Same coefficients; the waits and the interleaved products come from the traits' turns.
  const bool ring = Wgmma16::staggers_phases(cfg);
  const double phase_join = ring ? c.overlap_exponent : c.phase_overlap_exponent;
  const double interleaved = (consumers - 1) * (Wgmma16::turns_per_tile(cfg) == 1 ? t.mma : t.qk);
  const double ring_gap = ring ? std::max(0.0, t.simt_full / h(4.0) - interleaved) : 0.0;
  const double ring_wait = ring && Wgmma16::turns_per_tile(cfg) == 2 ? t.qk : 0.0;
  const double rounds = wg_tiles / consumers;  // per block: tiles its consumers compute, in turn
  // Tiles in flight that hide a tile's load latency: stages - 1, or stages - 2 with the overlap
  // (a stage is freed one tile later: its V is read in the next tile's iteration).
  const double hiding_tiles = double(Wgmma16::overlap_hiding_tiles(cfg));
  // k mean blocks resident on one SM.
  const auto block_terms = [&](double k) {
    BlockTerms b{};
    const double warps = 4.0 * consumers * k;
    b.tensor = k * wg_tiles * t.mma;
    b.fp32 = k * wg_tiles * t.fp32 / h(warps);
    b.sfu = k * wg_tiles * t.sfu / h(warps);
    b.issue = k * wg_tiles * t.issue / h(warps);
    b.simt = k * wg_tiles * t.simt_full / h(warps);
    // The block's own prologue and epilogue instructions (per warp and block) on its chain.
    // The block lasts as long as its busiest warpgroup: under causal the last one computes every
    // tile the block loads (the block's loads stop at its last row's diagonal), the others fewer.
    b.chain = loads * chain_per_tile + chain_once + block_issue / h(4.0);
    b.chain += masked_wg_tiles / consumers * mask_issue / h(4.0);
    b.issue += k * (block_issue + masked_wg_tiles * mask_issue);
    b.simt += k * (block_issue + masked_wg_tiles * mask_issue) / h(warps);
    b.copy = k * loads * tile_transfer;
    // The SM's products and softmax by phase_join, with what the ping-pong's ring exposes
    // (above; async_pipeline.h).
    const double tensor_side = b.tensor + k * rounds * ring_gap, simt_side = b.simt + k * rounds * ring_wait;
    b.work = std::max({soft_max({tensor_side, simt_side}, phase_join), b.chain, b.copy});
    b.stall = loads > 0 ? loads * std::max(0.0, load_latency - hiding_tiles * b.work / loads) : 0.0;
    return b;
  };
  const auto wave_time = [&](double k, double nblocks, BlockTerms* terms) {
    const BlockTerms b = block_terms(k);
    if (terms) *terms = b;
    return soft_max({b.work + b.stall, nblocks * l2_per_block, nblocks * dram_per_block}, resident_memory_overlap(c.memory_overlap_exponent, k));
  };

  PipeTimes bounded;
  double waves_s = 0;
  const auto add_wave = [&](double count, double k, double nblocks) {
    if (count <= 0) return;
    BlockTerms b{};
    const double wave = wave_time(k, nblocks, &b);
    const double l2 = nblocks * l2_per_block, dram = nblocks * dram_per_block;
    p.pipes.tensor += count * b.tensor;
    p.pipes.fp32 += count * b.fp32;
    p.pipes.sfu += count * b.sfu;
    p.pipes.issue += count * b.issue;
    p.pipes.latency += count * (b.chain + b.stall);
    p.pipes.l2 += count * l2;
    p.pipes.dram += count * dram;
    const std::pair<double, Pipe> terms[] = {{b.tensor, Pipe::Tensor}, {b.fp32, Pipe::Fp32}, {b.sfu, Pipe::Sfu},
                                             {b.issue, Pipe::Issue},   {b.chain + b.stall, Pipe::Latency},
                                             {l2, Pipe::L2},           {dram, Pipe::Dram}};
    const auto* win = &terms[0];
    for (const auto& term : terms)
      if (term.first > win->first) win = &term;
    bounded[win->second] += count * wave;
    waves_s += count * wave;
  };
  const double per_wave = double(p.waves.per_wave), k_resident = p.occupancy.blocks_per_sm;
  add_wave(double(p.waves.waves - 1), k_resident, per_wave);
  const double tail = double(p.waves.tail_blocks);
  add_wave(1.0, std::ceil(tail / gpu.sm_count), tail);

  // Causal: unequal blocks share the SMs (block_schedule.h), as for every family.
  const double full_wave = wave_time(k_resident, per_wave, nullptr);
  p.time_s = waves_s;
  if (w.causal) {
    const double unit = full_wave / k_resident;
    const double solo = wave_time(1.0, gpu.sm_count, nullptr) / unit;
    const SharedSmGrid grid{cfg.Br, cfg.Bc, g.causal_heavy_first, gpu.sm_count, p.occupancy.blocks_per_sm};
    p.time_s = shared_sm_makespan(w, grid, solo) * unit;
    p.imbalance = waves_s > 0 ? p.time_s / waves_s : 1.0;
    if (p.imbalance < 1.0)
      for (Pipe q : kAllPipes) p.pipes[q] *= p.imbalance;
  }
  // Fill and drain (launch, Q and the first stages in flight, O's TMA store): one block's, hidden
  // behind the k - 1 blocks beside it; once per wave. Persistent (TileConfig::persistent: about
  // one block per SM walks the tiles, a wave becoming a round of tiles per block) once in all: a
  // tile's Q and first stages load while the previous tile's last stages and epilogue run, and
  // its epilogue runs under the next tile's loads. With one Q buffer (Wgmma16::q_buffers: two do
  // not fit beside the ring) a later tile's Q is loaded only after the previous tile's epilogue
  // has stored O out of it: one load latency per later round (the ring's first stages still land
  // early).
  const double others_work = (k_resident - 1.0) / k_resident * full_wave;
  const double exposed_latency = std::max(0.0, c.block_latency_cycles / clock - others_work);
  const double fills = cfg.persistent ? 1.0 : double(p.waves.waves);
  const double q_waits =
      cfg.persistent && Wgmma16::q_buffers(cfg) == 1 ? double(std::max(0LL, p.waves.waves - 1)) * load_latency : 0.0;
  p.overhead_s = fills * exposed_latency + q_waits + c.launch_overhead_us * 1e-6;
  p.time_s += p.overhead_s;
  p.bound = Pipe::Tensor;
  for (Pipe q : kAllPipes)
    if (bounded[q] > bounded[p.bound]) p.bound = q;
  p.intensity_dram = p.dram.bytes > 0 ? n.useful_flops / p.dram.bytes : 0;
  p.intensity_l2 = n.l2_bytes() > 0 ? n.useful_flops / n.l2_bytes() : 0;
  p.intensity_shared = n.smem_wavefronts > 0 ? n.useful_flops / (n.smem_wavefronts * kWavefrontBytes) : 0;
  return p;
}

}  // namespace flashtune::model
