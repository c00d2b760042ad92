#include "model/counter_check.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "model/async_pipeline.h"
#include "model/config_catalog.h"
#include "model/predict.h"
#include "model/summary_stats.h"

namespace flashtune::model {
namespace {

constexpr const char* kLdWaves = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
constexpr const char* kStWaves = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum";
constexpr const char* kLdConflicts = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum";
constexpr const char* kStConflicts = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum";

// The model's value of `term` for one prediction; `a` holds the Hopper family's counts (zero for
// the other families).
double model_value(CounterTerm term, const Prediction& p, const AsyncPipelineCounts& a) {
  const Counts& c = p.counts;
  switch (term) {
    case CounterTerm::DramRead: return p.dram.bytes - c.l2_o_bytes;  // the estimate counts O's write once
    case CounterTerm::DramWrite: return c.l2_o_bytes;
    case CounterTerm::L2Bytes: return c.l2_bytes();
    case CounterTerm::SharedLdWaves: return c.smem_load_wavefronts;
    case CounterTerm::SharedStWaves: return c.smem_store_wavefronts;
    case CounterTerm::SharedLdConflicts: return c.smem_load_wavefronts - c.smem_load_ideal;
    case CounterTerm::SharedStConflicts: return c.smem_store_wavefronts - c.smem_store_ideal;
    case CounterTerm::SharedLdIdeal: return c.smem_load_ideal;
    case CounterTerm::SharedStIdeal: return c.smem_store_ideal;
    case CounterTerm::Ffma: return c.ffma;
    case CounterTerm::Xu: return c.exp;
    // The HMMA pipe's counter counts every mma.sync shape (TF32 m16n8k8, bf16/fp16 m16n8k16) and
    // HGMMA, one per warp of a wgmma's warpgroup; a wgmma16 config's mma16 are the same products'
    // FLOPs in m16n8k16 units (for the tensor time), never issued.
    case CounterTerm::Mma: return a.wgmma > 0 ? c.mma + a.wgmma_warp_instructions : c.mma + c.mma16;
    case CounterTerm::WarpInstructions: return c.warp_instructions;
    case CounterTerm::L2ToSmSectors: return (c.l2_bytes() - c.l2_o_bytes) / 32.0;
    case CounterTerm::SharedPipeWaves: return c.shared_pipe_wavefronts;
    case CounterTerm::Wgmma: return a.wgmma_warp_instructions;
    case CounterTerm::TmaLoadBytes: return a.tma_load_bytes;
    case CounterTerm::TmaStoreBytes: return a.tma_store_bytes;
    case CounterTerm::TmaLoadInstructions: return a.tma_load_instructions;
    case CounterTerm::TmaStoreInstructions: return a.tma_store_instructions;
  }
  return 0;
}

// The value of `metric` in o's counters; nullopt when absent or when `metric` is nullptr.
std::optional<double> counter(const CounterObservation& o, const char* metric) {
  if (!metric) return std::nullopt;
  const auto it = o.counters.find(metric);
  if (it == o.counters.end()) return std::nullopt;
  return it->second;
}

std::string group_of(const CounterTermInfo& t, const TileConfig& c) {
  std::string g = variant_name(c.variant);
  if (c.dtype != DType::Fp32) g += std::string("/") + dtype_name(c.dtype);
  if (t.shared) g += std::string("/") + layout_name(c.layout);
  return g;
}

}  // namespace

const std::vector<CounterTermInfo>& counter_terms() {
  static const std::vector<CounterTermInfo> terms = {
      {CounterTerm::DramRead, "dram_read", "dram__bytes_read.sum", nullptr, "DRAM estimate less O (Q + K + V + misses)",
       false, nullptr},
      {CounterTerm::DramWrite, "dram_write", "dram__bytes_write.sum", nullptr, "O bytes (4 B N d)", false, nullptr},
      {CounterTerm::L2Bytes, "l2_bytes", "lts__t_bytes.sum", nullptr, "Q + O + K/V per visited tile", false, nullptr},
      {CounterTerm::SharedLdWaves, "shared_ld_wavefronts", kLdWaves, nullptr, "load sites' wavefronts", true, nullptr},
      {CounterTerm::SharedStWaves, "shared_st_wavefronts", kStWaves, nullptr, "store sites' wavefronts (no cp.async)",
       true, nullptr},
      {CounterTerm::SharedLdConflicts, "shared_ld_conflicts", kLdConflicts, nullptr, "load wavefronts - ideal", true,
       kLdWaves},
      {CounterTerm::SharedStConflicts, "shared_st_conflicts", kStConflicts, nullptr, "store wavefronts - ideal", true,
       kStWaves},
      {CounterTerm::SharedLdIdeal, "shared_ld_ideal", kLdWaves, kLdConflicts, "load sites' conflict-free wavefronts",
       true, nullptr},
      {CounterTerm::SharedStIdeal, "shared_st_ideal", kStWaves, kStConflicts, "store sites' conflict-free wavefronts",
       true, nullptr},
      {CounterTerm::Ffma, "ffma", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", nullptr,
       "FFMA per tile x visits + epilogue", false, nullptr},
      {CounterTerm::Xu, "xu", "smsp__thread_inst_executed_pipe_xu_pred_on.sum", nullptr,
       "exp per tile x visits + epilogue 1/l", false, nullptr},
      {CounterTerm::Mma, "mma", kTensorInstructionsMetric, nullptr,
       "mma.sync (TF32 m16n8k8 + bf16/fp16 m16n8k16) per tile x computing (warp, tile) pairs / warps", false, nullptr, /*optional=*/true,
       /*tensor_core_only=*/true},
      {CounterTerm::WarpInstructions, "warp_instructions", kWarpInstructionsMetric, nullptr,
       "FP32 + exp + shuffles + integer split / 32 + shared requests + mma + compiled extra", false, nullptr,
       /*optional=*/true},
      {CounterTerm::L2ToSmSectors, "l2_to_sm_sectors", "l1tex__m_xbar2l1tex_read_sectors.sum", nullptr,
       "(Q + K/V per visited tile + split cp.async sectors) / 32", false, nullptr, /*optional=*/true},
      {CounterTerm::SharedPipeWaves, "shared_pipe_wavefronts", kSharedPipeWavefrontsMetric, nullptr,
       "ld + st wavefronts + one per warp shuffle", true, nullptr, /*optional=*/true},
      {CounterTerm::Wgmma, "wgmma", kWgmmaInstructionsMetric, nullptr,
       "(d + Bc) / 16 wgmma x 4 warps per (consumer warpgroup, computed tile)", false, nullptr, /*optional=*/true,
       /*tensor_core_only=*/false, /*async_pipeline_only=*/true},
      {CounterTerm::TmaLoadBytes, "tma_load_bytes", kTmaLoadBytesMetric, nullptr,
       "whole boxes: Br d Q per block + 2 Bc d K/V per loaded tile", false, nullptr, /*optional=*/true,
       /*tensor_core_only=*/false, /*async_pipeline_only=*/true},
      {CounterTerm::TmaStoreBytes, "tma_store_bytes", kTmaStoreBytesMetric, nullptr, "O (rows < N)", false, nullptr,
       /*optional=*/true, /*tensor_core_only=*/false, /*async_pipeline_only=*/true},
      {CounterTerm::TmaLoadInstructions, "tma_load_instructions", kTmaLoadInstructionsMetric, nullptr,
       "d / 64 x (consumers per block + 2 per loaded tile)", false, nullptr, /*optional=*/true,
       /*tensor_core_only=*/false, /*async_pipeline_only=*/true},
      {CounterTerm::TmaStoreInstructions, "tma_store_instructions", kTmaStoreInstructionsMetric, nullptr,
       "d / 64 x consumers per block", false, nullptr, /*optional=*/true, /*tensor_core_only=*/false,
       /*async_pipeline_only=*/true},
  };
  return terms;
}

bool term_applies(const CounterTermInfo& t, Variant v) {
  if (t.tensor_core_only && !uses_tensor_cores(v)) return false;
  if (t.async_pipeline_only && v != Variant::Wgmma16) return false;
  return true;
}

const CounterTermInfo& counter_term(const std::string& name) {
  std::string known;
  for (const CounterTermInfo& t : counter_terms()) {
    if (name == t.name) return t;
    known += (known.empty() ? "" : ", ") + std::string(t.name);
  }
  throw std::invalid_argument("unknown term '" + name + "' (known: " + known + ")");
}

double CounterPair::rel_error() const {
  if (reference == 0) return model == measured ? 0.0 : HUGE_VAL;
  return (model - measured) / reference;
}

std::vector<const CounterPair*> TermCheck::worst(int k) const {
  std::vector<const CounterPair*> v;
  for (const CounterPair& p : pairs) v.push_back(&p);
  std::stable_sort(v.begin(), v.end(), [](const CounterPair* a, const CounterPair* b) {
    return std::fabs(a->rel_error()) > std::fabs(b->rel_error());
  });
  if (k >= 0 && v.size() > std::size_t(k)) v.resize(std::size_t(k));
  return v;
}

ErrorSummary summarize_errors(const std::string& group, const std::vector<const CounterPair*>& pairs) {
  ErrorSummary s;
  s.group = group;
  s.n = int(pairs.size());
  if (pairs.empty()) return s;
  std::vector<double> abs_err, signed_err;
  int within = 0;
  for (const CounterPair* p : pairs) {
    const double e = p->rel_error();
    signed_err.push_back(e);
    abs_err.push_back(std::fabs(e));
    s.max_abs = std::max(s.max_abs, std::fabs(e));
    if (std::fabs(e) <= 0.05) ++within;
  }
  s.median_abs = median(abs_err);
  s.median_signed = median(signed_err);
  s.within_5pct = double(within) / double(pairs.size());
  return s;
}

CounterCheck check_counters(const std::vector<CounterObservation>& observations, const GpuSpec& gpu,
                            const Coefficients& k) {
  CounterCheck out;
  for (const CounterTermInfo& t : counter_terms()) out.terms.push_back(TermCheck{t, {}, {}, {}, 0});
  ConfigCatalog catalog;
  for (const CounterObservation& o : observations) {
    if (o.counters.empty()) continue;
    const std::string label = o.config.name() + " on " + o.workload_name;
    if (auto why = config_rejection(o.config, o.workload)) {
      out.skipped.push_back(label + ": " + *why);
      continue;
    }
    if (auto why = instruction_set_refusal(o.config, gpu)) {
      out.skipped.push_back(label + ": " + *why);
      continue;
    }
    const Prediction p = predict(o.workload, catalog.analysis(o.config), gpu, k, o.registers);
    if (!p.refusal.empty()) {
      out.skipped.push_back(label + ": " + p.refusal);
      continue;
    }
    const AsyncPipelineCounts a =
        o.config.variant == Variant::Wgmma16 ? count_async_pipeline(o.workload, o.config, p.counts) : AsyncPipelineCounts{};
    for (TermCheck& tc : out.terms) {
      if (!term_applies(tc.info, o.config.variant)) {
        ++tc.not_applicable;
        continue;
      }
      const std::optional<double> value = counter(o, tc.info.metric), minus = counter(o, tc.info.minus),
                                  reference = counter(o, tc.info.relative_to);
      if (!value || (tc.info.minus && !minus) || (tc.info.relative_to && !reference)) {
        ++tc.missing;
        if (!tc.info.optional) out.skipped.push_back(label + ": a metric of term " + tc.info.name + " is missing");
        continue;
      }
      const double measured = *value - minus.value_or(0.0);
      tc.pairs.push_back({&o, model_value(tc.info.term, p, a), measured, reference.value_or(measured)});
    }
  }
  for (TermCheck& tc : out.terms) {
    std::vector<const CounterPair*> all;
    std::map<std::string, std::vector<const CounterPair*>> by_group;
    for (const CounterPair& p : tc.pairs) {
      all.push_back(&p);
      by_group[group_of(tc.info, p.observation->config)].push_back(&p);
    }
    tc.all = summarize_errors("all", all);
    for (const auto& [group, pairs] : by_group) tc.groups.push_back(summarize_errors(group, pairs));
  }
  return out;
}

}  // namespace flashtune::model
