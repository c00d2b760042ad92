// The time of the warp-specialized Hopper family (wgmma16: a TMA producer warpgroup, an mbarrier
// ring of S stages, C consumer warpgroups of 64 query rows), from its traits: a pipeline's steady
// state plus its fill, not a sum of pipe times with a fitted exponent (DESIGN.md, "Asynchronous
// kernels in the model").
//
// Per K/V tile a consumer warpgroup runs, one after the other (the kernel waits for each product):
//   m = 4 x 64 x Bc x d FLOPs      / (tensor FLOPs per clock x clock x wgmma_efficiency)
//                                    S = Q K^T and O += P V on the SM's four tensor cores
//   s = softmax of its 64 x Bc scores on the FP32, SFU and issue pipes (the traits' per-tile counts
//       over C, plus the compiled code's extra instructions), at the rate its own 4 warps sustain
//       (h(W) = min(1, W / latency_warps), the SIMT rule)
//   + overlapped_iteration_cycles   the wgmma commit/wait round trips and the stage's mbarrier
// With k blocks resident, N = k C warpgroups share the SM. One's softmax may run while another's
// products hold the tensor cores, but without the ping-pong knob a block's consumers start every
// tile together (one full barrier) and so tend to reach their products and their softmax
// together: the SM's tensor and softmax work join by phase_overlap_exponent, as the mma.sync
// families' phases do. With it ("/pp", Wgmma16::staggers_phases: the consumers pass a turn round
// named barriers and issue their products one after the other, FlashAttention-3's ping-pong) the
// round of turns is a schedule whose two sides join by overlap_exponent, as any two pipes side
// by side, each with what the ring exposes per round (R rounds: the tiles the consumers compute):
//   tensor side += R max(0, s - (C - 1) x the products another consumer issues per turn)
//                  (a consumer's next products wait for its softmax; the others' cover part of it)
//   simt side   += R x S in the serial loop (the round's first S is issued only after the last
//                  consumer's softmax of the previous round, whose P V turn comes before it); none
//                  in the overlapped loop, whose one turn per tile is passed before the softmax
// Measured (H100, docs/results/h100-wgmma-pingpong-*.md) /pp is slower where the softmax is as
// long as the products (d = 64: 1.04x with two consumers, 1.10-1.17x with three) and even at
// d = 128; the model's ratios 1.02-1.09 and 0.98-1.04. So per block:
//   tensor = k V m                   every warpgroup-tile's products, one tensor pipe
//   simt   = k V s_full / h(4 N)     every softmax, at the rate 4 N warps sustain
//   chain  = V / C x (m + s + sync)  one warpgroup's own tiles, in order (V: warpgroup-tiles per
//                                    block; causal warpgroups skip tiles past their diagonal);
//            with the overlap knob (traits: S_j issued before P_{j-1} V_{j-1}, the softmax of S_j
//            under that P V) each tile takes qk + max(pv, s_hidden) + s_exposed + sync instead,
//            s_exposed the O rescale and P pack that must wait for the P V (same coefficients),
//            where the compiled loop does run the softmax under the P V
//            (Wgmma16::overlap_hides_softmax: the tiles whose S, P and O fit the registers at
//            once; elsewhere the serial chain, with the stage held longer)
//   copy   = k T 2 Bc d bytes / the SM's share of the L2 bandwidth (the producer's TMA copies of K
//            and V stream beside the math; T: K/V tiles a block loads)
//   work   = max(smax_phase(tensor, simt), chain, copy)   (smax_phase: p = phase_overlap_exponent,
//            overlap_exponent with the ping-pong;
//            with overlap_exponent, near a maximum, three consumers (Br = 192) were predicted at 0.84
//            of their time on the never-fitted H200 rows, now 0.96, and the model's pick there
//            within 0.6% of the best on every case instead of 11.9%: scripts/model_vs_compare_rows.py)
// A tile's load latency (iteration_latency_cycles) is hidden by the S - 1 tiles in flight, and what
// they cannot cover stalls every tile:
//   stall  = T x max(0, latency - H x work / T)    (T: K/V tiles a block loads; H = S - 1 tiles
//            in flight, S - 2 with the overlap, which holds each stage one tile longer)
// The wave then joins the SM's time with the GPU's L2 and DRAM traffic (memory_overlap_exponent at
// the blocks resident, predict.h: resident_memory_overlap),
// adds each block's fill and drain where the blocks beside it do not cover them, and is summed over
// the waves (causal grids: the shared-SM schedule of block_schedule.h), as for every family.
// The persistent grid ("/pe", TileConfig::persistent: about one block per SM walking the tiles of
// the one-block-per-tile grid in its order) runs the same rounds of tiles, but pays the fill and
// drain once, not per wave (each later tile's Q and first stages load under the previous tile's
// work), plus one load latency per later round where only one Q buffer fits (q_buffers), and its
// loop's instructions beyond the twin's per K/V tile (its compiled-instruction row,
// config_catalog.cpp). It serves non-causal workloads only (traits::Wgmma16::persistent_refusal;
// predict refuses the rest).
#pragma once

#include "model/coefficients.h"
#include "model/counts.h"
#include "model/geometry_analysis.h"
#include "model/gpu_spec.h"
#include "model/predict.h"

namespace flashtune::model {

// (consumer warpgroup, K/V tile) pairs that run the tile's products and softmax, whole grid: every
// consumer computes every tile its block loads, except that under causal a consumer skips the tiles
// past its own 64 rows' diagonal (kernels/wgmma16.cuh), which its block's later consumers still need.
double consumer_tile_visits(const Workload& w, const TileConfig& c);

// What the family issues that the hardware counts apart from the mma.sync families' work, whole
// grid, from its traits (Wgmma16) and the block traffic the counts already hold (Counts::l2_*:
// one count of each byte). Compared with CUPTI's counters by `flashtune check-counters`.
struct AsyncPipelineCounts {
  double consumer_tiles = 0;  // consumer_tile_visits
  double wgmma = 0;           // wgmma.mma_async instructions, warpgroup-level
  // The same as the SM executes them: one HGMMA warp instruction per warp of the warpgroup
  // (smsp__inst_executed_pipe_tensor_op_gmma, and sm__inst_executed_pipe_tensor_op_hmma too).
  double wgmma_warp_instructions = 0;
  // TMA: Q once per block and K, V once per tile the producer loads (global -> shared), whole boxes
  // (the mbarriers' expected bytes: rows past N or kv_len count, zero-filled); O once per block
  // (shared -> global), the rows that exist.
  double tma_load_bytes = 0, tma_store_bytes = 0;
  double tma_load_instructions = 0, tma_store_instructions = 0;  // one per box copied
};
AsyncPipelineCounts count_async_pipeline(const Workload& w, const TileConfig& c, const Counts& n);

// The Prediction of a wgmma16 config (predict() hands that family here).
Prediction predict_async_pipeline(const Workload& w, const GeometryAnalysis& g, const GpuSpec& gpu,
                                  const Coefficients& c, int registers_per_thread);

}  // namespace flashtune::model
