#include "model/predict.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "kernels/traits/variants.h"
#include "model/async_pipeline.h"
#include "model/bank_sim.h"
#include "model/block_schedule.h"
#include "model/decode_model.h"

namespace flashtune::model {

const char* pipe_name(Pipe p) {
  switch (p) {
    case Pipe::Fp32: return "fp32";
    case Pipe::Tensor: return "tensor";
    case Pipe::Sfu: return "sfu";
    case Pipe::Shared: return "shared";
    case Pipe::Issue: return "issue";
    case Pipe::L2: return "l2";
    case Pipe::Dram: return "dram";
    case Pipe::Latency: return "latency";
  }
  return "?";
}

double& PipeTimes::operator[](Pipe p) {
  switch (p) {
    case Pipe::Fp32: return fp32;
    case Pipe::Tensor: return tensor;
    case Pipe::Sfu: return sfu;
    case Pipe::Shared: return shared;
    case Pipe::Issue: return issue;
    case Pipe::L2: return l2;
    case Pipe::Dram: return dram;
    case Pipe::Latency: break;
  }
  return latency;
}

double PipeTimes::operator[](Pipe p) const { return const_cast<PipeTimes&>(*this)[p]; }

namespace {

struct BlockWork {  // seconds of one mean block at the full SM rate, per SM-local pipe
  double fp32, tensor, sfu, shared, issue;
};

// Resident warps needed to keep a pipe busy: latency_warps for instruction pipes; a shared-memory
// request holds the pipe for `wavefronts per request` clocks, so conflicted (or 16-byte) accesses
// saturate it with proportionally fewer warps. A tensor-core warp that owns two or more
// independent m16 row tiles saturates its sub-partition alone (predict()).
struct Saturation {
  double latency_warps, shared_warps, schedulers;
  double instr(double warps) const { return std::min(1.0, warps / latency_warps); }
  // A warp issues on one sub-partition's tensor core: fewer warps than schedulers leave some idle.
  double tensor(double warps) const { return std::min(1.0, warps / schedulers); }
  double shared(double warps) const { return std::min(1.0, warps / shared_warps); }
  // The SM's warps counted as the busiest sub-partition sees them: S x ceil(W / S) (warps are
  // spread over the S sub-partitions, at most one apart), so W / S of them per sub-partition on a
  // multiple of S and the SM-wide terms unchanged there.
  // Only where one warp saturates its sub-partition (a tensor-core warp of independent row tiles,
  // predict()): latency-bound warps (latency_warps, ~2 per scheduler) are not held up by a second
  // warp on their scheduler, and the TF32 kernels' profile shows no such step (mma_3xtf32 Br = 32,
  // three 2-warp blocks per SM: the busiest-scheduler rule put them 16-20% slow) where blocks
  // come and go over several waves and their warps land on every scheduler in turn.
  // And where the whole grid is one partial wave (static_placement): every block is placed once,
  // so an SM's warps stay on the schedulers they got for the whole run and the busiest one sets
  // the pace. H100, u12_n10972_b1_d32: three 2-warp mma_3xtf32 blocks on the busiest SMs (2, 2,
  // 1, 1 warps per scheduler) ran as long as two 4-warp blocks (0.395 against 0.394 ms), where
  // the mean over the schedulers had them 25% faster (docs/model.md).
  bool per_subpartition = false;
  bool static_placement = false;
  double busiest(double warps) const {
    return (per_subpartition || static_placement) ? schedulers * std::ceil(warps / schedulers - 1e-9) : warps;
  }
};

struct WaveTerms {
  double fp32, tensor, sfu, shared, issue, chain, l2, dram;
  double sm;  // the SM's side of the wave as wave_time joins it with l2 and dram (set there)
  Pipe chain_bound;  // the part of the chain that dominates (a pipe, or Latency for the stalls)
};


// The SM work of one wave (or one block) from its pipe terms. The softmax phase's pipes (FP32,
// SFU, shared, issue) interleave instruction by instruction and overlap by overlap_exponent; a
// tensor-core kernel's mma phases (S = Q K^T, O += P V) are separate phases of every warp's
// iteration, joined to the softmax through S and P, so they overlap it only where warps of
// different blocks are in different phases: by phase_overlap_exponent (fitted 1.5 on the H100,
// nearly a sum). A SIMT kernel has no tensor term and gets the softmax phase's soft maximum.
// A warp that saturates its sub-partition alone (mma16: Saturation::per_subpartition) runs its
// softmax's exponentials as a phase of their own as well: the row maxima must be complete before
// any exp2, and the row sums and the P fragments of P V need all of them, so the MUFU stream of a
// tile (one XU instruction per score and lane, 8 clocks each on a sub-partition's 4 lanes) sits
// between two dependent steps of the same warp; with one warp per scheduler nothing else issues
// from it meanwhile but the exp's own FFMAs. So the SFU term joins the phases, not the pipes.
double sm_work(double fp32, double tensor, double sfu, double shared, double issue, double overlap,
               double phase_overlap, bool exp_phase = false) {
  if (exp_phase) return soft_max({tensor, sfu, soft_max({fp32, shared, issue}, overlap)}, phase_overlap);
  return soft_max({tensor, soft_max({fp32, sfu, shared, issue}, overlap)}, phase_overlap);
}

WaveTerms wave_terms(const BlockWork& b, double k, double n, double warps_per_block, double stall_s,
                     double l2_per_block_s, double dram_per_block_s, const Saturation& sat, double overlap,
                     double phase_overlap, double lockstep) {
  WaveTerms t{};
  const double many = k * warps_per_block;
  // The FP32, tensor, SFU and issue pipes are the sub-partitions' own: a warp stays on the one it
  // was placed on, and the SM's time on them is its busiest sub-partition's. k blocks of w warps
  // put ceil(k w / S) warps on it (sat.busiest): k w / S on average, more where k w is not a
  // multiple of S (three 2-warp blocks: 2, 2, 1, 1 warps), so that pipe's time is the busiest
  // sub-partition's warps' work at its rate. The shared-memory pipe is the SM's (MIO), shared by all.
  const double sp = sat.busiest(many);
  t.fp32 = k * b.fp32 * (sp / many) / sat.instr(sp);
  t.tensor = k * b.tensor * (sp / many) / sat.tensor(sp);  // no latency stretch beyond that: see predict.h
  t.sfu = k * b.sfu * (sp / many) / sat.instr(sp);
  t.shared = k * b.shared / sat.shared(many);
  t.issue = k * b.issue * (sp / many) / sat.instr(sp);
  // One block alone: its own warps set the rate of each pipe, at the block's causal lockstep
  // (predict()); then its exposed stalls.
  const double sp1 = sat.busiest(warps_per_block), r1 = lockstep * sp1 / warps_per_block;
  const double one[] = {b.fp32 * r1 / sat.instr(sp1), b.tensor * r1 / sat.tensor(sp1), b.sfu * r1 / sat.instr(sp1),
                        b.shared / sat.shared(warps_per_block), b.issue * r1 / sat.instr(sp1)};
  const Pipe names[] = {Pipe::Fp32, Pipe::Tensor, Pipe::Sfu, Pipe::Shared, Pipe::Issue};
  double top = 0;
  t.chain_bound = Pipe::Fp32;
  for (int i = 0; i < 5; ++i)
    if (one[i] > top) {
      top = one[i];
      t.chain_bound = names[i];
    }
  const double work = sm_work(one[0], one[1], one[2], one[3], one[4], overlap, phase_overlap, sat.per_subpartition);
  if (stall_s > work) t.chain_bound = Pipe::Latency;
  t.chain = work + stall_s;
  t.l2 = n * l2_per_block_s;
  t.dram = n * dram_per_block_s;
  return t;
}

}  // namespace

double resident_memory_overlap(double exponent, double blocks_per_sm) {
  return 1.0 + (exponent - 1.0) * std::sqrt(std::max(1.0, blocks_per_sm) / kMemoryOverlapReferenceBlocks);
}

double exposed_stall_share(const Coefficients& c, double warps_per_scheduler, double schedulers) {
  return std::min(1.0, c.stall_exposure * (c.latency_warps / schedulers) / std::max(1.0, warps_per_scheduler));
}

std::optional<std::string> instruction_set_refusal(const TileConfig& c, const GpuSpec& gpu) {
  // The decode family multiplies 16-bit data on the tensor cores and fp32 on the FP32 pipe.
  const bool tensor = uses_tensor_cores(c.variant) || (c.variant == Variant::Decode && c.dtype != DType::Fp32);
  if (!tensor) return std::nullopt;
  // wgmma, TMA and setmaxnreg: Hopper's sm_90a only (the mma.sync families: the checks below).
  const int min_cc = variant_min_compute_capability(c.variant);
  if (min_cc > kTensorCoreMinComputeCapability && gpu.compute_capability() < min_cc)
    return std::string("needs sm_90a (wgmma, TMA: compute capability >= 9.0); ") + gpu.name + " is " +
           std::to_string(gpu.cc_major) + "." + std::to_string(gpu.cc_minor);
  // TF32 for the fp32 tensor-core variants, the element type's own for mma16, wgmma16 and decode.
  const std::string kind = c.dtype == DType::Bf16 ? "BF16" : c.dtype == DType::Fp16 ? "FP16" : "TF32";
  if (gpu.compute_capability() < kTensorCoreMinComputeCapability)
    return "needs " + kind + " tensor cores (compute capability >= " + std::to_string(kTensorCoreMinComputeCapability / 10) +
           "." + std::to_string(kTensorCoreMinComputeCapability % 10) + "); " + gpu.name + " is " +
           std::to_string(gpu.cc_major) + "." + std::to_string(gpu.cc_minor);
  const std::string type = c.dtype == DType::Fp32 ? "tf32" : dtype_name(c.dtype);
  if (!(gpu.tensor_flops_per_clock_per_sm(c.dtype) > 0))
    return "needs " + type + " tensor cores; the spec of " + gpu.name + " (" + gpu.file + ") gives no " + type +
           "_tensor_flops_per_clock_per_sm";
  return std::nullopt;
}

namespace {
// The decode family is modelled on its own (model/decode_model.h: bytes, waves of split blocks,
// the combine) at the split count the model picks (pick_decode_splits: the one the dispatcher
// launches); its figures in the Prediction every caller reads.
Prediction predict_decode_family(const Workload& w, const GeometryAnalysis& g, const GpuSpec& gpu, const Coefficients& c,
                                 int registers_per_thread) {
  Prediction p;
  p.registers_from_profile = registers_per_thread > 0;
  p.registers_per_thread = registers_per_thread > 0 ? registers_per_thread : g.registers_estimate;
  p.occupancy = compute_occupancy(gpu, g.threads_per_block, p.registers_per_thread, g.smem_bytes);
  const DecodePrediction d = pick_decode_splits(w, g.config, gpu, c);
  if (!d.refusal.empty() || !p.occupancy.refusal.empty()) {
    p.refusal = d.refusal.empty() ? p.occupancy.refusal : d.refusal;
    return p;
  }
  p.time_s = d.time_s;
  p.decode_splits = d.splits;
  p.decode_cluster_combine = d.cluster_combine;
  p.decode = d;
  p.overhead_s = d.combine_s + d.launch_s;
  p.pipes.dram = d.bound == "dram" ? d.split_kernel_s : 0;
  p.pipes.latency = d.bound == "stream" ? d.split_kernel_s : 0;
  p.pipes.l2 = d.bound == "l2" ? d.split_kernel_s : 0;
  const Pipe math = g.config.dtype != DType::Fp32 ? Pipe::Tensor : Pipe::Fp32;
  p.pipes[math] = d.bound == "compute" ? d.split_kernel_s : 0;
  p.bound = d.bound == "dram" ? Pipe::Dram : d.bound == "stream" ? Pipe::Latency : d.bound == "l2" ? Pipe::L2 : math;
  p.waves = compute_waves(d.blocks, gpu.sm_count, p.occupancy.blocks_per_sm);
  p.counts.nominal_flops = w.nominal_flops();
  p.dram.bytes = d.dram_bytes;
  p.intensity_dram = d.dram_bytes > 0 ? p.counts.nominal_flops / d.dram_bytes : 0;
  return p;
}
}  // namespace

double soft_max(std::initializer_list<double> terms, double p) {
  double top = 0;
  for (double t : terms) top = std::max(top, t);
  if (top <= 0) return 0;
  double sum = 0;
  for (double t : terms) sum += std::pow(t / top, p);
  return top * std::pow(sum, 1.0 / p);
}

Prediction prediction_prologue(const Workload& w, const GeometryAnalysis& g, const GpuSpec& gpu, const Coefficients& c,
                               int registers_per_thread) {
  Prediction p;
  p.registers_from_profile = registers_per_thread > 0;
  p.registers_per_thread = registers_per_thread > 0 ? registers_per_thread : g.registers_estimate;
  p.occupancy = compute_occupancy(gpu, g.threads_per_block, p.registers_per_thread, g.smem_bytes);
  if (!p.occupancy.refusal.empty()) {
    p.refusal = p.occupancy.refusal;
    return p;
  }
  p.counts = count_work(w, g);
  p.waves = compute_waves(p.counts.tiles.blocks, gpu.sm_count, p.occupancy.blocks_per_sm);
  p.dram = estimate_dram(w, g.config, p.counts, p.waves.per_wave, g.causal_heavy_first, gpu, c);
  return p;
}

Prediction predict(const Workload& w, const GeometryAnalysis& g, const GpuSpec& gpu, const Coefficients& c,
                   int registers_per_thread) {
  if (auto why = instruction_set_refusal(g.config, gpu)) throw std::invalid_argument(g.config.name() + " " + *why);
  // A workload the config's traits refuse (the persistent grid under causal): refused, as the kernel
  // and config_rejection refuse it, whichever caller asks.
  if (const char* why = workload_refusal(g.config, w)) {
    Prediction refused;
    refused.refusal = why;
    return refused;
  }
  if (g.config.variant == Variant::Decode) return predict_decode_family(w, g, gpu, c, registers_per_thread);
  if (g.config.variant == Variant::Wgmma16) return predict_async_pipeline(w, g, gpu, c, registers_per_thread);
  Prediction p = prediction_prologue(w, g, gpu, c, registers_per_thread);
  if (!p.refusal.empty()) return p;
  const Counts& n = p.counts;

  const double clock = gpu.clock_hz();
  const double blocks = double(n.tiles.blocks);
  const double T = n.tiles.mean_tiles_per_block;
  BlockWork b{};
  b.fp32 = n.fp32_instructions() / blocks / (gpu.fp32_lanes_per_sm * clock * c.fp32_efficiency);
  // mma.sync at the spec's rate for its element type times the one fitted efficiency (0 for SIMT
  // kernels): TF32 m16n8k8 at the TF32 rate, bf16/fp16 m16n8k16 at the workload dtype's rate. The
  // tf32 wgmma pair (wgmma_3xtf32 / wgmma_1xtf32) issues wgmma, not mma.sync: the spec's rate is
  // that instruction's, at wgmma16's efficiency (wgmma_efficiency), not mma.sync's fraction of it
  // (with tensor_efficiency the H100's measured 3xTF32 rows were predicted 1.48-1.62x their time).
  const double tf32_efficiency = is_wgmma_variant(g.config.variant) ? c.wgmma_efficiency : c.tensor_efficiency;
  b.tensor = 0.0;
  if (n.mma > 0)
    b.tensor += n.mma_flops() / blocks / (gpu.tf32_tensor_flops_per_clock_per_sm * clock * tf32_efficiency);
  if (n.mma16 > 0)
    b.tensor += n.mma16_flops() / blocks /
                (gpu.tensor_flops_per_clock_per_sm(g.config.dtype) * clock * c.tensor_efficiency);
  b.sfu = n.exp / blocks / (gpu.sfu_ops_per_clock_per_sm * clock * c.sfu_efficiency);
  b.shared = n.shared_pipe_wavefronts / blocks / (gpu.smem_wavefronts_per_clock_per_sm * clock * c.smem_efficiency);
  b.issue = (1.0 + c.issue_overhead) * n.warp_instructions / blocks /
            (gpu.warp_schedulers_per_sm * clock * c.issue_efficiency);
  // The per-tile stall of one block: its barrier and copy wait, shared by all its warps' row tiles,
  // and its warps' dependent chain from S to P V, which a warp owning r independent m16 row tiles
  // (mma16: r = 2) interleaves over them. Taken as half and half: the share 1/2 + 1/(2 r).
  const bool tensor_core = n.mma > 0 || n.mma16 > 0;
  const double row_tiles = tensor_core ? std::max(1.0, g.rows_per_warp / 16.0) : 1.0;
  const double stall = (0.5 + 0.5 / row_tiles) * T *
                       (g.kv_loads_overlap_compute ? c.overlapped_iteration_cycles : c.iteration_latency_cycles) / clock;
  const double l2_per_block = n.l2_bytes() / blocks / (gpu.l2_bytes_per_s() * c.l2_efficiency);
  const double dram_per_block = p.dram.bytes / blocks / (gpu.dram_bytes_per_s() * c.dram_efficiency);
  const double wpb = p.occupancy.warps_per_block;
  const double block_latency = c.block_latency_cycles / clock;

  // latency_warps is the resident warps whose independent instruction streams hide the pipes'
  // latency (the SIMT kernels' FFMA chains: ~2 warps per scheduler). A tensor-core warp that owns
  // two or more independent m16 row tiles (rows_per_warp >= 32: mma16) runs that many streams,
  // each with its own mma accumulators and softmax rows, and keeps its sub-partition busy alone,
  // as it keeps its tensor core busy: on the H100 one warp per scheduler with four independent
  // mma chains issued 2090 of the 2412 FLOP/clk/SM that 16 warps reach
  // (docs/results/h100-mma-sync-peak-bf16.txt). Before: a lone 4-warp mma16 block was predicted
  // 12-37% slow, and its second resident block ~2x faster where it ran 1.26x faster. The TF32
  // kernels' warps own one m16 tile (16 rows) and keep the SIMT rule: saturating them at one warp
  // per scheduler too ranked lone mma_3xtf32 blocks first on one-entry grids where regtile_2d won
  // by 20-40% (H100, g_n1024_b1_d128, g_n128_b1_d64).
  const bool independent_row_tiles = row_tiles >= 2;  // tensor-core warps only (row_tiles is 1 otherwise)
  const double schedulers = double(gpu.warp_schedulers_per_sm);
  Saturation sat{independent_row_tiles ? schedulers : c.latency_warps, c.shared_latency_warps, schedulers,
                 independent_row_tiles};
  // Causal masking lets a warp skip a tile whose keys all follow its rows (counts.h,
  // warp_tile_visits), but the block's barrier holds it until its other warps finish that tile.
  // A latency-bound warp's scheduler serves the other warps meanwhile; a warp that saturates its
  // sub-partition alone leaves it idle while it waits, so the block's own pace (its chain) is
  // every warp on every visited tile: the pipes of one block (FP32, tensor, SFU, issue) stretched
  // by `lockstep`. Not the wave's: the other blocks resident on the SM have a warp on that
  // scheduler too, and issue in the idle slots. Where no warp skips, the ratio is 1. (Until
  // 2026-11-28 the wave's pipes took it as well: mma16 Br 128 x Bc 32 on the H100's u08, 594
  // entries of 336 rows, d = 32, three 4-warp blocks resident, had its pipes stretched by 1.19;
  // docs/fit.md, "The causal lockstep, the first touch and the stall by warps per scheduler".)
  const double lockstep = independent_row_tiles && n.warp_tile_visits > 0
                              ? double(g.warps_per_block) * double(n.tiles.visits) / n.warp_tile_visits
                              : 1.0;
  if (n.shared_pipe_wavefronts > 0)
    sat.shared_warps = std::max(1.0, c.shared_latency_warps * n.shared_pipe_requests / n.shared_pipe_wavefronts);

  // One wave with k mean blocks resident per SM and nblocks in all: its terms and its time. The SM
  // pipes overlap in part (soft maximum); a wave cannot beat one block's serial path (the chain,
  // which already holds that block's share of the same pipes, so it is not added to them); L2
  // and DRAM traffic overlaps the SM's work in part again, by its own exponent.
  auto wave_time = [&](double k, double nblocks, WaveTerms* terms, bool static_placement = false) {
    Saturation placed = sat;
    placed.static_placement = static_placement;
    const WaveTerms t = wave_terms(b, k, nblocks, wpb, stall, l2_per_block, dram_per_block, placed, c.overlap_exponent,
                                   c.phase_overlap_exponent, lockstep);
    const double sm_pipes =
        sm_work(t.fp32, t.tensor, t.sfu, t.shared, t.issue, c.overlap_exponent, c.phase_overlap_exponent,
                sat.per_subpartition);
    // A tensor-core wave: the pipes plus the stall share its resident blocks leave exposed
    // (stall_exposure: they reach their per-tile barriers in step), never less than one block's chain.
    // Where one warp saturates its sub-partition (mma16) nothing else in the model sees how many
    // warps share a scheduler, and the share follows them (exposed_stall_share); the TF32 kernels'
    // pipes already stretch below latency_warps, and their share stays the fitted one (scaled as
    // well, the H200 fp32 profile's unseen fp32-accurate worst pick went from 3.3% to 8.6%, u16).
    const double share = sat.per_subpartition ? exposed_stall_share(c, k * wpb / schedulers, schedulers) : c.stall_exposure;
    const double exposed = tensor_core ? share * stall : 0.0;
    const double sm = std::max(sm_pipes + exposed, t.chain);
    if (terms) {
      *terms = t;
      terms->sm = sm;
    }
    return soft_max({sm, t.l2, t.dram}, resident_memory_overlap(c.memory_overlap_exponent, k));
  };
  // Time each pipe bounded (the winner of each wave), to name the bound.
  PipeTimes bounded;
  double waves_s = 0;
  auto add_wave = [&](double count, double k, double nblocks, bool static_placement = false) {
    if (count <= 0) return;
    WaveTerms t{};
    const double wave = wave_time(k, nblocks, &t, static_placement);
    p.pipes.fp32 += count * t.fp32;
    p.pipes.tensor += count * t.tensor;
    p.pipes.sfu += count * t.sfu;
    p.pipes.shared += count * t.shared;
    p.pipes.issue += count * t.issue;
    p.pipes.latency += count * t.chain;
    p.pipes.l2 += count * t.l2;
    p.pipes.dram += count * t.dram;
    const std::pair<double, Pipe> terms[] = {{t.fp32, Pipe::Fp32},     {t.tensor, Pipe::Tensor}, {t.sfu, Pipe::Sfu},
                                             {t.shared, Pipe::Shared}, {t.issue, Pipe::Issue},   {t.chain, t.chain_bound},
                                             {t.l2, Pipe::L2},         {t.dram, Pipe::Dram}};
    const auto* win = &terms[0];
    for (const auto& term : terms)
      if (term.first > win->first) win = &term;
    bounded[win->second] += count * wave;
    waves_s += count * wave;
  };
  const double per_wave = double(p.waves.per_wave);
  add_wave(double(p.waves.waves - 1), p.occupancy.blocks_per_sm, per_wave);
  const double tail = double(p.waves.tail_blocks);
  add_wave(1.0, std::ceil(tail / gpu.sm_count), tail, /*static_placement=*/p.waves.waves == 1);

  // Causal grids: unequal blocks share the SMs (block_schedule.h). The time unit is a full SM's
  // time per mean block; a block alone runs `solo` of them (its serial path, or its own share of
  // the pipes when one block saturates them).
  const double k_resident = p.occupancy.blocks_per_sm;
  WaveTerms full{};
  const double full_wave = wave_time(k_resident, per_wave, &full);
  p.time_s = waves_s;
  if (w.causal) {
    const double unit = full_wave / k_resident;
    const double solo = wave_time(1.0, gpu.sm_count, nullptr) / unit;
    const SharedSmGrid grid{g.config.Br, g.config.Bc, g.causal_heavy_first, gpu.sm_count, p.occupancy.blocks_per_sm};
    p.time_s = shared_sm_makespan(w, grid, solo) * unit;
    p.imbalance = waves_s > 0 ? p.time_s / waves_s : 1.0;
    // The per-pipe times follow the schedule (a pipe's share of the time stays as the waves had it).
    if (p.imbalance < 1.0)
      for (Pipe q : kAllPipes) p.pipes[q] *= p.imbalance;
  }
  // A heavy-first causal grid reads the compulsory K/V in its first blocks (memory_traffic.h,
  // first_touch_shares): the SM's work and the DRAM bytes of those blocks and of the rest are
  // joined apart, at the full wave's terms, and the time scales by what that adds (a norm's
  // triangle inequality: never less than the joint join).
  p.first_touch = first_touch_shares(w, g.config, n, p.dram, p.waves.per_wave, g.causal_heavy_first);
  if (p.first_touch.work_share < 1.0) {
    const double pm = resident_memory_overlap(c.memory_overlap_exponent, k_resident);
    const double f = p.first_touch.work_share, d = p.first_touch.dram_share;
    const double joint = soft_max({full.sm, full.l2, full.dram}, pm);
    const double apart = soft_max({f * full.sm, f * full.l2, d * full.dram}, pm) +
                         soft_max({(1 - f) * full.sm, (1 - f) * full.l2, (1 - d) * full.dram}, pm);
    if (joint > 0) p.first_touch_factor = apart / joint;
    p.time_s *= p.first_touch_factor;
  }
  // A block's start and drain (launch, Q and the first K/V tile in flight, O's store) stall that
  // block alone: the k - 1 blocks resident beside it keep the SM's pipes busy meanwhile, so per
  // wave only what their work does not cover is exposed (all of it at one block per SM).
  const double others_work = (k_resident - 1.0) / k_resident * full_wave;
  const double exposed_latency = std::max(0.0, block_latency - others_work);
  p.time_s += double(p.waves.waves) * exposed_latency;
  p.overhead_s = double(p.waves.waves) * exposed_latency + c.launch_overhead_us * 1e-6;
  p.time_s += c.launch_overhead_us * 1e-6;
  p.bound = Pipe::Fp32;
  for (Pipe q : kAllPipes)
    if (bounded[q] > bounded[p.bound]) p.bound = q;

  p.intensity_dram = n.useful_flops / p.dram.bytes;
  p.intensity_l2 = n.useful_flops / n.l2_bytes();
  p.intensity_shared = n.smem_wavefronts > 0 ? n.useful_flops / (n.smem_wavefronts * kWavefrontBytes) : 0;
  return p;
}

}  // namespace flashtune::model
