// The time prediction: one roof per pipe, the latency terms, summed over waves.
//
// Per block (mean over the grid; T = mean K/V tiles per block), the SM-local work at full SM rate:
//   fp32  = T (ffma + other)            / (lanes x clock x fp32_efficiency)
//   tensor = T mma x 2048 FLOPs         / (TF32 FLOPs per clock x clock x tensor_efficiency)
//   sfu   = T exp                       / (sfu x clock x sfu_efficiency)
//   smem  = (T wf_tile + wf_block)      / (wavefronts per clock x clock x smem_efficiency)
//   issue = (1 + issue_overhead) x warp instructions / (schedulers x clock x issue_efficiency)
// A pipe runs at full rate only with enough resident warps W:
//   h(W)        = min(1, W / latency_warps)                      FP32, SFU, issue
//   h_tensor(W) = min(1, W / schedulers)                          tensor
//   (no latency stretch: each warp issues Bc/8 or d/8 independent mma per k-step, so one warp
//    per scheduler keeps its tensor core fed; tensor_efficiency holds what mma.sync loses. But a
//    warp lives on one of the SM's sub-partitions, each with its own tensor core: with fewer
//    resident warps than schedulers the others idle. mma_3xtf32 d128 32x64, two warps on the
//    SM, measured 2.42x the 64x64 config's time on the H200, n1k_d128; predicted 1.5x without it)
//   h_shared(W) = min(1, W x (wavefronts / requests) / shared_latency_warps)
//                 (a request holds the shared pipe one clock per wavefront, so conflicted or
//                  16-byte accesses saturate it with fewer warps)
// A wave puts k blocks on its busiest SM (k = blocks per SM, or ceil(tail / SMs) in the tail) and
// n blocks on the GPU:
//   pipe p     = k x p / h_p(k x warps_per_block)                        (throughput)
//   chain      = max_p (p / h_p(warps_per_block)) + T x iteration_latency_cycles / clock
//                (overlapped_iteration_cycles instead when the K/V loads overlap compute)
//                (one block's serial path: its work at the rate its own warps sustain plus the
//                 exposed load/barrier latency of every K/V iteration; binds at low occupancy)
//   l2         = n x L2 bytes per block   / (L2 bandwidth x l2_efficiency)
//   dram       = n x DRAM bytes per block / (DRAM bandwidth x dram_efficiency)
//   wave time  = smax_m(max(smax(fp32, tensor, sfu, shared, issue) [+ e(w) x stall], chain), l2, dram)
//                ([...]: tensor-core kernels, the per-tile stall the resident blocks leave exposed:
//                 e = stall_exposure, or where one warp saturates its sub-partition (mma16)
//                 e(w) = min(1, stall_exposure x (latency_warps / S) / w) at w warps per scheduler)
//                + max(0, block_latency_cycles / clock - (k - 1) / k x the wave's smax)
//                (a block's start and drain, hidden behind the k - 1 blocks beside it)
//                smax(x) = (sum x_i^p)^(1/p), p = overlap_exponent: pipes overlap in part; the
//                chain's work part is smax of the one-block pipe terms, and since it holds the
//                same work it bounds the pipes from below rather than adding to them;
//                smax_m the same with p = memory_overlap_exponent: how far the SM's work hides
//                its L2 and DRAM traffic is another matter than how far its pipes hide each other
// The bound is the term that won the most time over the waves (for the chain: its larger part,
// a pipe or "latency").
// time = full waves x full-wave time + tail-wave time (causal: the shared-SM schedule of
// block_schedule.h instead) + launch_overhead_us; a heavy-first causal grid's time scaled by the
// join of its first blocks' work with the compulsory K/V they read, apart from the rest's
// (memory_traffic.h, first_touch_shares).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>

#include "kernels/traits/tile_config.h"
#include "model/baselines.h"
#include "model/coefficients.h"
#include "model/counts.h"
#include "model/decode_model.h"
#include "model/geometry_analysis.h"
#include "model/gpu_spec.h"
#include "model/memory_traffic.h"
#include "model/occupancy.h"

namespace flashtune::model {

enum class Pipe { Fp32, Tensor, Sfu, Shared, Issue, L2, Dram, Latency };
inline constexpr Pipe kAllPipes[] = {Pipe::Fp32, Pipe::Tensor, Pipe::Sfu, Pipe::Shared, Pipe::Issue,
                                     Pipe::L2, Pipe::Dram, Pipe::Latency};
const char* pipe_name(Pipe p);

// Seconds each term contributes, summed over the waves (each as if it alone bound every wave).
struct PipeTimes {
  double fp32 = 0, tensor = 0, sfu = 0, shared = 0, issue = 0, l2 = 0, dram = 0, latency = 0;
  double& operator[](Pipe p);
  double operator[](Pipe p) const;
};

struct Prediction {
  std::string refusal;  // non-empty: the config cannot run on this GPU (nothing else is set)
  double time_s = 0;
  Pipe bound = Pipe::Fp32;
  PipeTimes pipes;
  double overhead_s = 0;  // block latencies + launch
  // The decode family: the split count the model picks (pick_decode_splits), the one its time is
  // for and the one the dispatcher launches; 0 for the other families.
  int decode_splits = 0;
  // Whether those splits merge inside their thread-block cluster (traits::Decode::cluster_combine)
  // rather than through the combine kernel.
  bool decode_cluster_combine = false;
  // The decode family's own prediction at that split (bytes by kind, R_block's tile, the split
  // kernel, the combine): what `predict` prints for it in place of the tiled families' counts.
  std::optional<DecodePrediction> decode;
  double imbalance = 1;   // causal: scheduled time / the waves of mean blocks (block_schedule.h)
  // A heavy-first causal grid: the first blocks' shares of the work and of the DRAM bytes
  // (memory_traffic.h, first_touch_shares), and the factor their separate join put on the time
  // (1 where the shares are 1).
  FirstTouch first_touch;
  double first_touch_factor = 1;
  int registers_per_thread = 0;
  bool registers_from_profile = false;
  Occupancy occupancy;
  Waves waves;
  Counts counts;
  DramEstimate dram;
  // FLOPs (useful) per byte at each level; shared bytes = wavefronts x 128.
  double intensity_dram = 0, intensity_l2 = 0, intensity_shared = 0;
  double achieved_flops() const { return time_s > 0 ? counts.nominal_flops / time_s : 0; }
};

// Why `c` cannot run on `gpu` at all, whatever the occupancy: a tensor-core variant
// (uses_tensor_cores) on a GPU below compute capability 8.0 or whose spec gives no TF32
// tensor-core rate. One line without the config's name, e.g. "needs TF32 tensor cores (compute
// capability >= 8.0); NVIDIA GeForce GTX 1080 is 6.1". rank_configs refuses such configs with it.
std::optional<std::string> instruction_set_refusal(const TileConfig& c, const GpuSpec& gpu);

// How far a wave overlaps its SM work with its L2 and DRAM traffic, given k blocks resident per
// SM: the exponent of soft_max between them, for every tiled family (mma.sync and SIMT in
// predict(), wgmma16 in model/async_pipeline.h). A block waits for each K/V tile as one: its
// warps meet at a barrier every tile (wgmma16: its consumers wait on the same stage), so what
// computes meanwhile is the SM's other blocks, in other phases of their own loops, and the
// overlap grows with the blocks resident: 1 + (p - 1) sqrt(k / 3), p the fitted
// memory_overlap_exponent (its value at three blocks). The square root is measured, not derived:
// it fitted both GPUs' profiles best of k^0.35, k^0.5, k^0.7 and k^1; the resident warps in place
// of the blocks (k x warps per block) left the six 2-warp blocks below as slow as the three 4-warp
// blocks' 12 warps had them (docs/model.md). With one exponent for every k, the DRAM-bound six
// 2-warp blocks of mma_3xtf32 Br 32 on the H200's 134-row causal grids were predicted 17-20% slow
// beside the three 4-warp blocks of Br 64, within 4%.
inline constexpr double kMemoryOverlapReferenceBlocks = 3.0;
double resident_memory_overlap(double exponent, double blocks_per_sm);

// The share of a block's per-tile stall a tensor-core wave of warps that saturate their
// sub-partition alone (mma16) leaves exposed, with w warps per scheduler resident: stall_exposure where they are the latency_warps that hide an instruction
// pipe's latency (latency_warps / S per scheduler), less where more warps give each scheduler
// something else to issue meanwhile, more where fewer do; at most all of it. (A fixed share had
// mma16 Br 64 x Bc 64, two warps per scheduler, ahead of Br 128 x Bc 32, three, on the H100's u08,
// where it ran 7% slower; docs/fit.md.)
double exposed_stall_share(const Coefficients& c, double warps_per_scheduler, double schedulers);

// (sum x_i^p)^(1/p), scaled by the largest for range: the soft maximum of overlapping terms
// (coefficients.h, overlap_exponent). Every family's time joins its terms with it.
double soft_max(std::initializer_list<double> terms, double p);

// What every family's prediction starts from: the registers (the profile's, else the traits'
// estimate), the occupancy, and where it fits the counts, waves and DRAM estimate; `refusal` set
// when the block does not fit on an SM.
Prediction prediction_prologue(const Workload& w, const GeometryAnalysis& g, const GpuSpec& gpu, const Coefficients& c,
                               int registers_per_thread);

// registers_per_thread <= 0: use the traits' estimate. Throws std::invalid_argument with one line,
// "<config> <instruction_set_refusal>", for a config the GPU cannot run (callers that rank or
// filter configs check instruction_set_refusal first).
Prediction predict(const Workload& w, const GeometryAnalysis& g, const GpuSpec& gpu, const Coefficients& k,
                   int registers_per_thread = 0);

}  // namespace flashtune::model
