// The model's coefficients: one set per GPU, shared by every variant and workload. The defaults
// are physical guesses good enough for a GPU that has only a spec file; a profile's fitted
// "coefficients" object overrides them by name (see coefficient_table()).
#pragma once

#include <array>
#include <initializer_list>
#include <string_view>

namespace flashtune::model {

struct Coefficients {
  // Fraction of the FP32 lanes' peak a tuned kernel sustains. The H200's fp32 SIMT SGEMM reaches
  // 51.0 of 66.9 TFLOP/s (anchors/README.md: 0.76); clocks sag under a full FFMA load.
  double fp32_efficiency = 0.80;
  // Fraction of the spec's dense TF32 tensor-core rate (tf32_tensor_flops_per_clock_per_sm) that
  // a kernel's mma.sync m16n8k8 instructions sustain. On Hopper the datasheet rate is wgmma's;
  // mma.sync issues well below it: on the H200 our mma_3xtf32 kernel ran 67.5 TFLOP/s on t22
  // (B=500, N=2048, d=64), i.e. 3 x 67.5 = 203 TFLOP/s of mma, 0.38 of 132 x 2048 x 1.98 GHz =
  // 535 with the softmax and the operand split beside it (mma_1xtf32: 128 TFLOP/s, not
  // tensor-bound). One value for every tensor-core variant; `flashtune fit` moves it when a
  // profile holds tensor-core measurements.
  double tensor_efficiency = 0.45;
  // MUFU.EX2 issues at the table rate but shares the dispatch port with other MIO work.
  double sfu_efficiency = 0.90;
  // Shared-memory wavefronts: one per clock per SM at best; back-to-back LDS keep ~95% of it
  // (the H200 and H100 fits, with the shuffles counted on this pipe: 0.954 and 0.954).
  double smem_efficiency = 0.95;
  // Warp schedulers issue one instruction per clock; dependency stalls at full occupancy
  // still lose some slots.
  double issue_efficiency = 0.90;
  // Warp instructions the counts do not list, per counted instruction. The shipped kernels' extra
  // instructions (address arithmetic, loop control, prologue, epilogue) are counted from the
  // measured table (model/compiled_instruction_table.h), so none by default; the fit finds a
  // little more issue time than that (H200 0.09: dual-issue and dependency slots, not instructions).
  double issue_overhead = 0.0;
  // Fraction of the (estimated) L2 bandwidth reached by tile loads interleaved with compute (the
  // H200 and H100 fits: 1.0 and 0.96).
  double l2_efficiency = 0.90;
  // Fraction of the datasheet DRAM bandwidth a streaming kernel sees: the H200 copy reaches
  // 4233 of 4800 GB/s (anchors/README.md: 0.88).
  double dram_efficiency = 0.88;
  // Resident warps per SM at which the FP32, SFU and issue pipes run at full rate. The dot
  // products accumulate into one register per key (a 4-cycle FFMA dependency chain), so each of
  // the 4 schedulers needs ~3 warps to issue every cycle. Below it the roofs stretch by
  // latency_warps / resident warps. (ncu, H200, row_reg at 8 warps/SM: issue 58% busy.) With the
  // compiled code's extra instructions counted (model/compiled_instruction_table.h) the H200 and
  // H100 fits put it at 8.1 and 8.0.
  double latency_warps = 8.0;
  // The same for the shared-memory pipe, per wavefront of a request: unrolled loops issue
  // independent LDS back to back, so fewer warps keep the ~30-cycle pipe full. (ncu, H200,
  // row_smem padded at 6 warps/SM: shared pipe 87% busy; the H200 and H100 fits: 3.5 and 3.3.)
  double shared_latency_warps = 4.0;
  // Exposed cycles per K/V iteration of one block: an L2-hit load latency (~300 cycles on
  // Hopper) the kernel does not overlap, two __syncthreads (~50 each) and the dependent softmax
  // between them. The H200 and H100 fits: 480 and 430 (1200 before the shuffles were counted
  // on the shared pipe, when this term stood in for warp_groups' missing shared time).
  double iteration_latency_cycles = 500.0;
  // The same for a kernel whose K/V loads overlap its compute (KernelGeometry::
  // kv_loads_overlap_compute, cp.async a half-iteration ahead): the two barriers and the
  // cp.async wait, whose latency the compute between them hides only in part. The fits: 670 and 640.
  double overlapped_iteration_cycles = 650.0;
  // Exposed cycles per wave: Q tile from DRAM (~800 cycles), O store and block launch. The fits:
  // 2560 and 2670. With these three at the fitted values the spec sheet alone ranks mma_1xtf32's
  // 64 x 64 over 128 x 64 where more blocks fill the GPU (before: worst top-1 regret 61% H200, 81% H100).
  double block_latency_cycles = 3000.0;
  // Kernel launch to first block, as CUDA events see it.
  double launch_overhead_us = 3.0;
  // Fraction of one L2 partition the K/V working set may use before re-reads start to miss
  // (other lines, set conflicts, imperfect LRU).
  double l2_capacity_fraction = 0.90;
  // How far the pipes overlap: a wave takes (sum of term^p)^(1/p) over its pipe, chain, L2 and
  // DRAM terms. p -> infinity is a perfect overlap (the plain max of a roofline); p = 1 is no
  // overlap at all. Real kernels sit between: a warp waiting on shared memory is not issuing
  // FFMAs, and the two pipes' stalls only partly hide each other. The soft maximum also gives
  // the fit a gradient where two terms cross. 3.5 (the H200 and H100 fits: 3.4 and 3.4) puts two
  // equal terms at 1.22x either.
  double overlap_exponent = 3.5;
  // The same between the SM's work (the soft maximum above, or one block's chain) and its L2 and
  // DRAM traffic. Apart from overlap_exponent because the two overlaps differ: with one exponent
  // for both, the fit had to pick between the pipes of the tensor-core kernels (which hide each
  // other poorly) and the tile loads, and paid for it with an L2 efficiency of 0.52, and
  // mma_1xtf32 Br = 128 picked over 64 on 9 of 37 grid workloads (H200, leave-one-workload-out).
  // The H200 and H100 fits put it at 1.7-2.0; 2 by default, since near-perfect overlap (6) ranks
  // that same pair wrong from the spec sheet alone (worst top-1 regret 61%, H200 grid).
  double memory_overlap_exponent = 2.0;
  // The same between a tensor-core kernel's mma phases (S = Q K^T, O += P V) and its softmax
  // phase (FP32, SFU, shared, issue; model/predict.cpp, sm_work): every warp runs them one after
  // the other (P needs S, P V needs P), so they overlap only where warps of different blocks are
  // in different phases. Fitted 2.07 on the H200 (fp32 profile: the TF32 kernels) and 1.46 on the
  // H100 (fp32 and bf16 profiles together: nearly a sum, the poor overlap that FlashAttention-3's
  // ping-pong scheduling was built to remove), with tensor_efficiency 0.44 and 0.52 beside it
  // (0.41 when the tensor pipe overlapped like the others; the measured mma.sync peak is 0.59 of
  // the spec's rate). No effect on SIMT kernels (no tensor term).
  double phase_overlap_exponent = 2.0;
  // The share of a tensor-core block's per-tile stall (overlapped_iteration_cycles or
  // iteration_latency_cycles: its barrier, its wait for the tile's copy and its warps' dependent
  // chain from S to P V) that the blocks resident beside it do not cover, once per wave
  // (model/predict.cpp: `max(pipes + e x stall, chain)`). The resident blocks reach their per-tile
  // barriers about in step (they start together and share the pipes fairly), so their stalls
  // overlap each other rather than the pipes. Read off mma_3xtf32's Bc 32 / Bc 64 pair: with two or
  // three blocks resident, Bc 32 ran 4-8% slower than Bc 64 where the stall hidden behind the pipes
  // had it level (docs/fit.md, "The per-tile stall exposed once per wave"). With 0 a wave is the
  // maximum of pipes and chain again.
  double stall_exposure = 0.5;
  // Fraction of the spec's dense tensor rate (its wgmma rate) that wgmma.mma_async sustains in a
  // warp-specialized kernel (wgmma16, model/async_pipeline.h): cuBLAS's bf16 8192^3 product, all
  // wgmma, runs 780 of the H100's 132 x 4096 x 1.83 GHz = 989 TFLOP/s (../shared/anchors: 0.79).
  // Apart from tensor_efficiency, which holds what mma.sync loses on Hopper (0.45-0.6). Not fitted
  // by default (docs/fit.md): a fit without wgmma measurements cannot see it.
  double wgmma_efficiency = 0.79;

  // ---- the decode family's memory-bound regime (model/decode_model.h, docs/model.md "Decode") ----
  // Fitted on the two H100 split sweeps of today's kernels, L2 flushed with writes
  // (docs/results/h100-decode-sweep-bf16-write-{44aaa6b,43f12ce}.jsonl, 618 timings) by
  // `flashtune fit --decode ... --free decode` (least absolute log error); no tiled measurement
  // reads them. Fitted on either sweep alone they score the other at 4.2% and 5.0% MAPE
  // (docs/model.md, "Decode"). The earlier values came from sweeps of the combine kernel that walked
  // the splits one after another (docs/results/h100-decode-bench-*.jsonl).
  // Fraction of the datasheet DRAM bandwidth a read-only stream reaches: decode reads K and V once
  // and writes almost nothing, so the bus never turns around as in the copy that sets
  // dram_efficiency (H100: 8 x 32 heads x 65536 keys read 3.11 TB/s, 3.13 with the write-back, where
  // the copy moves 3.02 TB/s of reads and writes).
  double stream_dram_efficiency = 0.927;
  // DRAM streams (blocks reading distinct K/V chunks, one per SM) at which a wave gets half of that
  // bandwidth: a wave of n streams gets n / (n + stream_knee_blocks) of it (Little's law with a
  // latency that grows as the bytes in flight approach the bandwidth).
  double stream_knee_blocks = 12.79;
  // Fraction of the L2 still dirty when a cold-L2 call starts (the timing harness flushes it with
  // writes): written back to DRAM beside the call's first wave of reads. Effective, not the dirty
  // share itself: a write flush leaves nearly every line dirty, but its write-back shares the bus
  // with the first wave's reads better than as bytes added to them (fitted 0.17; 0.58 before).
  double cold_l2_dirty_fraction = 0.144;
  // Cycles a decode block costs beyond its streaming: start, Q rows, the warps' merge and its
  // partial's write (a few KB, against the tiled families' block_latency_cycles for a whole tile).
  double decode_block_cycles = 708.0;
  // The combine pass (splits > 1): a fixed part (its launch behind the split kernel, its blocks'
  // start and the output's write) and a part per split that each warp walks. These two are fitted
  // (--free combine_cycles,combine_split_cycles) on the H100 sweep of today's combine, one warp per
  // 32 columns (docs/results/h100-decode-sweep-bf16-write-combine32.jsonl); the others above on the
  // split kernel's sweeps. One warp per row took 527 cycles per split, this one 136.
  double combine_cycles = 14673.0;
  double combine_split_cycles = 136.3;
  // The combine inside a thread-block cluster (traits::Decode::cluster_combine, 2..16 splits on
  // sm_90): the cluster barrier, one round of distributed-shared-memory loads and O's store after
  // the slowest split of the row tile; no workspace, no second kernel. Fitted (--free
  // cluster_combine_cycles) on the H100's bf16 and fp32 sweeps of the cluster combine
  // (docs/results/h100-decode-sweep-{bf16,fp32}-write-cluster.jsonl): ~6 us, 1-3 us less than the
  // combine kernel's fixed part at the same splits, not the cluster barrier's ~1 us alone.
  double cluster_combine_cycles = 11562.0;
  // Cycles a warp's tile costs per 16-byte copy (cp.async) of its K and V per lane, counted from the
  // 32 of the bf16 d = 128 tile that the per-tile fixed part (model/decode_model.cpp) was measured
  // on: a d = 64 tile copies 16 and streams faster per byte than that fixed part alone allowed (its
  // timings were predicted 17-30% slow on both GPUs).
  double decode_copy_cycles = 53.6;
};

struct CoefficientInfo {
  const char* name;
  double Coefficients::*member;
  double min, max;  // physically sensible range, checked when a profile is read
};

// Name <-> member table for profile I/O and, later, fitting (stable order).
inline constexpr std::array<CoefficientInfo, 28> coefficient_table() {
  return {{
      {"fp32_efficiency", &Coefficients::fp32_efficiency, 0.01, 1.0},
      {"sfu_efficiency", &Coefficients::sfu_efficiency, 0.01, 1.0},
      {"smem_efficiency", &Coefficients::smem_efficiency, 0.01, 1.0},
      {"issue_efficiency", &Coefficients::issue_efficiency, 0.01, 1.0},
      {"issue_overhead", &Coefficients::issue_overhead, 0.0, 10.0},
      {"l2_efficiency", &Coefficients::l2_efficiency, 0.01, 1.0},
      {"dram_efficiency", &Coefficients::dram_efficiency, 0.01, 1.0},
      {"latency_warps", &Coefficients::latency_warps, 1.0, 64.0},
      {"shared_latency_warps", &Coefficients::shared_latency_warps, 0.5, 64.0},
      {"iteration_latency_cycles", &Coefficients::iteration_latency_cycles, 0.0, 1e5},
      {"overlapped_iteration_cycles", &Coefficients::overlapped_iteration_cycles, 0.0, 1e5},
      {"block_latency_cycles", &Coefficients::block_latency_cycles, 0.0, 1e6},
      {"launch_overhead_us", &Coefficients::launch_overhead_us, 0.0, 1e3},
      {"l2_capacity_fraction", &Coefficients::l2_capacity_fraction, 0.01, 1.0},
      {"overlap_exponent", &Coefficients::overlap_exponent, 1.0, 64.0},
      {"tensor_efficiency", &Coefficients::tensor_efficiency, 0.01, 1.0},
      {"memory_overlap_exponent", &Coefficients::memory_overlap_exponent, 1.0, 64.0},
      {"phase_overlap_exponent", &Coefficients::phase_overlap_exponent, 1.0, 64.0},
      {"stall_exposure", &Coefficients::stall_exposure, 0.0, 1.0},
      {"wgmma_efficiency", &Coefficients::wgmma_efficiency, 0.01, 1.0},
      {"stream_dram_efficiency", &Coefficients::stream_dram_efficiency, 0.01, 1.0},
      {"stream_knee_blocks", &Coefficients::stream_knee_blocks, 0.0, 1e3},
      {"cold_l2_dirty_fraction", &Coefficients::cold_l2_dirty_fraction, 0.0, 1.0},
      {"decode_block_cycles", &Coefficients::decode_block_cycles, 0.0, 1e5},
      {"combine_cycles", &Coefficients::combine_cycles, 0.0, 1e6},
      {"combine_split_cycles", &Coefficients::combine_split_cycles, 0.0, 1e5},
      {"decode_copy_cycles", &Coefficients::decode_copy_cycles, 0.0, 1e4},
      {"cluster_combine_cycles", &Coefficients::cluster_combine_cycles, 0.0, 1e5},
  }};
}

// The decode family's own coefficients (read by model/decode_model.cpp only).
inline bool decode_only_coefficient(const char* name) {
  for (const char* d : {"stream_dram_efficiency", "stream_knee_blocks", "cold_l2_dirty_fraction", "decode_block_cycles",
                        "combine_cycles", "combine_split_cycles", "decode_copy_cycles", "cluster_combine_cycles"})
    if (std::string_view(name) == d) return true;
  return false;
}

}  // namespace flashtune::model
