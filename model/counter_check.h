// The model's counts, term by term, against the CUPTI counters a profile recorded for the same
// (workload, config): DRAM bytes read and written, L2 bytes, shared-memory wavefronts and bank
// conflicts by op, FFMA and XU thread instructions, tensor-core (HMMA) warp instructions, and for the
// Hopper family its wgmma (HGMMA) instructions and TMA bytes and copies. Each term says which model quantity it
// compares with which metric; docs/counters.md ("Per-term check against the model") says which
// terms are exact and why the others are not. Host-only: the caller reads the profile.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kernels/traits/tile_config.h"
#include "model/coefficients.h"
#include "model/gpu_spec.h"

namespace flashtune::model {

// One measurement's counters and what identifies it (a profile's ok measurement).
struct CounterObservation {
  std::string workload_name;
  Workload workload;
  TileConfig config;
  int registers = 0;                       // compiled registers per thread; 0: the traits' estimate
  std::map<std::string, double> counters;  // CUPTI metric name -> value
};

enum class CounterTerm {
  DramRead,        // dram__bytes_read.sum             vs the DRAM estimate less O's write
  DramWrite,       // dram__bytes_write.sum            vs O's bytes (4 B N d)
  L2Bytes,         // lts__t_bytes.sum                 vs Q + K/V re-reads + O between SMs and L2
  SharedLdWaves,   // ..._wavefronts_mem_shared_op_ld  vs the load sites' simulated wavefronts
  SharedStWaves,   // ..._wavefronts_mem_shared_op_st  vs the store sites' (cp.async copies are op_ldgsts)
  SharedLdConflicts,  // ..._bank_conflicts_..._op_ld  vs load wavefronts - ideal
  SharedStConflicts,  // ..._bank_conflicts_..._op_st  vs store wavefronts - ideal
  SharedLdIdeal,   // ld wavefronts - ld conflicts       vs the load sites' conflict-free wavefronts
  SharedStIdeal,   // st wavefronts - st conflicts       vs the store sites' conflict-free wavefronts
  Ffma,            // sm__sass_thread_inst_executed_op_ffma_pred_on.sum  vs counts.ffma
  Xu,              // smsp__thread_inst_executed_pipe_xu_pred_on.sum     vs counts.exp
  Mma,             // sm__inst_executed_pipe_tensor_op_hmma.sum          vs counts.mma (warp-level)
  WarpInstructions,  // smsp__inst_executed.sum  vs counts.warp_instructions (the issue pipe's work)
  L2ToSmSectors,     // l1tex__m_xbar2l1tex_read_sectors.sum  vs (L2 bytes less O's write) / 32
  SharedPipeWaves,   // l1tex__data_pipe_lsu_wavefronts_mem_shared.sum  vs counts.shared_pipe_wavefronts
  // The warp-specialized Hopper family (wgmma16) only (model/async_pipeline.h, AsyncPipelineCounts):
  Wgmma,             // smsp__inst_executed_pipe_tensor_op_gmma.sum  vs 4 HGMMA per wgmma x consumer-tiles
  TmaLoadBytes,      // l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum  vs Q + K/V boxes per loaded tile
  TmaStoreBytes,     // l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum  vs O
  TmaLoadInstructions,   // smsp__inst_executed_op_tma_ld.sum  vs Q boxes per block + K/V boxes per tile
  TmaStoreInstructions,  // smsp__inst_executed_op_tma_st.sum  vs O boxes per block
};

// The CUPTI metric of the tensor-pipe term: warp-level HMMA instructions, which on sm_80 and
// sm_90 include mma.sync m16n8k8 .tf32 (SASS HMMA.1688.F32.TF32). One place to change it; the
// tuner collects it (CuptiProfiler::default_metrics).
inline constexpr const char* kTensorInstructionsMetric = "sm__inst_executed_pipe_tensor_op_hmma.sum";
// Every warp instruction executed: what the issue pipe (Pipe::Issue) spends its slots on.
inline constexpr const char* kWarpInstructionsMetric = "smsp__inst_executed.sum";
// Every wavefront of the shared-memory data pipe: loads, stores and warp shuffles, not the
// cp.async fills (Counts::shared_pipe_wavefronts; measured on the H200, docs/counters.md).
inline constexpr const char* kSharedPipeWavefrontsMetric = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum";
// Hopper's warpgroup MMA and TMA (GH100 has them, earlier chips do not: the tuner requests them
// only where the chip knows them, CuptiProfiler::hopper_metrics). Warp instructions of the tensor
// pipe's GMMA ops (HGMMA: 4 per wgmma.mma_async, one per warp of the warpgroup; the HMMA metric
// above counts them too), bytes the TMA unit reads from L2 for global -> shared tensor copies and
// writes for shared -> global ones, and the TMA copy instructions (UTMALDG, UTMASTG) themselves.
inline constexpr const char* kWgmmaInstructionsMetric = "smsp__inst_executed_pipe_tensor_op_gmma.sum";
inline constexpr const char* kTmaLoadBytesMetric = "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum";
inline constexpr const char* kTmaStoreBytesMetric = "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum";
inline constexpr const char* kTmaLoadInstructionsMetric = "smsp__inst_executed_op_tma_ld.sum";
inline constexpr const char* kTmaStoreInstructionsMetric = "smsp__inst_executed_op_tma_st.sum";

struct CounterTermInfo {
  CounterTerm term;
  const char* name;    // "dram_read", "shared_ld_conflicts", ... (the --term value)
  const char* metric;  // the CUPTI metric
  const char* minus;   // a metric subtracted from it (the ideal terms), or nullptr
  const char* model;   // the model quantity, in words
  bool shared;         // a shared-memory term: broken down by variant and layout
  // Conflict terms: the error is taken relative to the op's measured wavefronts (their share of
  // the traffic), since a conflict-free layout measures a few hundred conflicts or none at all.
  const char* relative_to;  // metric of the denominator; nullptr: the counter value itself
  // A metric the tuner collects since a later version (mma): profiles tuned before it lack it, so
  // an observation without it counts in TermCheck::missing instead of CounterCheck::skipped.
  bool optional = false;
  // Compared on tensor-core variants only (mma): in a SIMT kernel the tensor-pipe counter holds
  // just the HFMA2.MMA register moves ptxas issues on that pipe (a few per block outside the K/V
  // loop: regtile_2d, H200), which no model term counts; such observations count in
  // TermCheck::not_applicable.
  bool tensor_core_only = false;
  // Compared on the warp-specialized Hopper family only (wgmma and TMA: wgmma16): no other family
  // issues either, so their zero counters would only pad the share within 5%; such observations
  // count in TermCheck::not_applicable.
  bool async_pipeline_only = false;
};

// Whether term `t` is compared on observations of variant `v` (tensor_core_only, async_pipeline_only).
bool term_applies(const CounterTermInfo& t, Variant v);

// Every term, in table order.
const std::vector<CounterTermInfo>& counter_terms();
// The term named `name`; throws std::invalid_argument listing the names otherwise.
const CounterTermInfo& counter_term(const std::string& name);

struct CounterPair {
  const CounterObservation* observation = nullptr;
  double model = 0;
  double measured = 0;   // metric (less `minus`)
  double reference = 0;  // the denominator of the relative error (see relative_to)
  // (model - measured) / reference; 0 when both are 0.
  double rel_error() const;
};

struct ErrorSummary {
  std::string group;  // "all", a variant ("row_reg") or variant/layout ("row_smem/plain")
  int n = 0;
  double median_abs = 0, max_abs = 0;  // of |rel_error|
  double median_signed = 0;            // of rel_error: the direction of the bias
  double within_5pct = 0;              // share of pairs with |rel_error| <= 0.05
};

struct TermCheck {
  CounterTermInfo info;
  std::vector<CounterPair> pairs;   // observation order
  ErrorSummary all;
  std::vector<ErrorSummary> groups;  // per variant, or per variant/layout for shared terms
  int missing = 0;                   // observations with counters but without this term's metrics
  int not_applicable = 0;            // observations of variants the term does not cover (term_applies)
  // The k pairs with the largest |rel_error|, largest first.
  std::vector<const CounterPair*> worst(int k) const;
};

struct CounterCheck {
  std::vector<TermCheck> terms;
  std::vector<std::string> skipped;  // observations the model refused, or lacking a counter, with why
};

// Predicts every observation on `gpu` with coefficients `k` and pairs each term's model value with
// its counter. Observations without counters are skipped silently; a missing metric skips that
// term of that observation (counted in TermCheck::missing, and listed in `skipped` unless the term
// is optional). The observations must outlive the result.
CounterCheck check_counters(const std::vector<CounterObservation>& observations, const GpuSpec& gpu,
                            const Coefficients& k);

ErrorSummary summarize_errors(const std::string& group, const std::vector<const CounterPair*>& pairs);

}  // namespace flashtune::model
