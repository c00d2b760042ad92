// A GPU's sourced spec sheet (configs/gpus/*.json) as the model reads it. Every figure in the file
// is {"value": ..., "source": "..."}; the loader insists on both so no number enters the model
// without saying where it came from.
#pragma once

#include <nlohmann/json.hpp>

#include "kernels/traits/tile_config.h"

#include <optional>
#include <string>
#include <vector>

namespace flashtune::model {

struct GpuSpec {
  std::string name;
  std::vector<std::string> aliases;
  std::string file;  // where it was loaded from (for messages)

  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  double sm_clock_base_mhz = 0, sm_clock_boost_mhz = 0;
  int fp32_lanes_per_sm = 0;
  int sfu_ops_per_clock_per_sm = 0;
  int warp_schedulers_per_sm = 0;  // each issues one warp instruction per clock
  // Dense TF32 tensor-core FLOPs per clock per SM at the datasheet rate (Hopper: the wgmma rate;
  // mma.sync reaches a fraction of it, Coefficients::tensor_efficiency). 0: no TF32 tensor cores.
  double tf32_tensor_flops_per_clock_per_sm = 0;
  // Dense bf16 and fp16 tensor-core FLOPs per clock per SM with fp32 accumulation (what mma16's
  // m16n8k16 .f32 instructions run at), at the datasheet rate. 0 or absent: none (Pascal; Turing
  // has fp16 but no bf16). The same tensor_efficiency scales every element type.
  double bf16_tensor_flops_per_clock_per_sm = 0;
  double fp16_tensor_flops_per_clock_per_sm = 0;

  int smem_per_sm_bytes = 0;
  int smem_per_block_optin_bytes = 0;
  int smem_reserved_per_block_bytes = 0;
  int smem_allocation_granularity_bytes = 0;
  int smem_banks = 0;
  int smem_bytes_per_clock_per_sm = 0;
  double smem_wavefronts_per_clock_per_sm = 0;

  int registers_per_sm = 0;
  int registers_per_block_max = 0;
  int max_registers_per_thread = 0;
  int register_allocation_granularity = 0;
  int register_file_partitions = 0;

  int max_threads_per_sm = 0;
  int max_threads_per_block = 0;
  int max_blocks_per_sm = 0;
  int max_warps_per_sm = 0;

  long long l2_bytes = 0;
  double dram_bandwidth_gbs = 0;  // datasheet
  double l2_bandwidth_gbs = 0;    // estimate (see the file's source string)
  std::optional<double> dram_bandwidth_measured_gbs;
  std::optional<double> fp32_measured_tflops;
  std::optional<double> tf32_measured_tflops;  // a TF32 tensor-core matrix product (cuBLAS)
  // Thread-block clusters of n blocks (n = 2..16) the GPU runs at once when one block fills an SM
  // (cudaOccupancyMaxActiveClusters: a cluster's blocks share a GPC, so its SM count sets them);
  // measured, optional. Empty: the model assumes no cluster fits (no decode cluster combine).
  std::vector<int> clusters_at_once;  // index n; 0 below 2
  int max_active_clusters(int n) const { return n >= 0 && n < int(clusters_at_once.size()) ? clusters_at_once[n] : 0; }

  double clock_hz() const { return sm_clock_boost_mhz * 1e6; }
  // 2 FLOPs per FFMA lane per clock at the boost clock.
  double fp32_peak_flops() const { return 2.0 * fp32_lanes_per_sm * sm_count * clock_hz(); }
  // Dense TF32 tensor-core FLOP/s at the boost clock (0: none).
  double tf32_tensor_peak_flops() const { return tf32_tensor_flops_per_clock_per_sm * sm_count * clock_hz(); }
  // The tensor-core rate per clock per SM for an element type (fp32: the TF32 rate).
  double tensor_flops_per_clock_per_sm(DType t) const {
    return t == DType::Bf16   ? bf16_tensor_flops_per_clock_per_sm
           : t == DType::Fp16 ? fp16_tensor_flops_per_clock_per_sm
                              : tf32_tensor_flops_per_clock_per_sm;
  }
  int compute_capability() const { return cc_major * 10 + cc_minor; }  // 90 for "9.0"
  double dram_bytes_per_s() const { return dram_bandwidth_gbs * 1e9; }
  double l2_bytes_per_s() const { return l2_bandwidth_gbs * 1e9; }
  double smem_bytes_per_s() const { return double(smem_bytes_per_clock_per_sm) * sm_count * clock_hz(); }
};

// Parses one spec file. Throws std::runtime_error with one line:
//   "<path>: missing field 'sm_count'", "<path>: field 'sm_count.value' must be an integer",
//   "<path>: malformed JSON: <nlohmann's message with byte position>", "<path>: cannot open file".
GpuSpec load_gpu_spec(const std::string& path);
// The same checks on a parsed document; `source` names it in messages (the fuzz target's entry).
GpuSpec gpu_spec_from_json(const nlohmann::json& doc, const std::string& source);

// The folder that holds the shipped specs: configs/gpus in the data folder (model/data_dir.h).
std::string default_gpu_spec_dir();

// The spec's file stem, the name profiles record in gpu.spec and profiles/ files are named by:
// "configs/gpus/nvidia-h200.json" -> "nvidia-h200".
std::string spec_stem(const GpuSpec& spec);

// Spec-file stem for a CUDA device name: "NVIDIA H200" -> "nvidia-h200", "NVIDIA H100 80GB HBM3" ->
// "nvidia-h100-sxm" (through the aliases in `spec_dir`, ignoring memory-size and HBM tokens, then
// dropping trailing words, then the leading vendor word). A GPU without a spec gets its name in
// lower case with dashes.
std::string gpu_spec_name(const std::string& device_name, const std::string& spec_dir);

// Stems of the *.json files in `dir`, sorted.
std::vector<std::string> known_gpu_names(const std::string& dir);

// Finds a spec by file stem ("nvidia-h200") or alias ("h200"), case-insensitively. Throws with the
// list of known names when nothing matches.
GpuSpec find_gpu_spec(const std::string& name, const std::string& dir);

// What a user names a GPU by: a spec file when it ends in .json, else a stem or alias looked up in
// default_gpu_spec_dir(). Throws like load_gpu_spec / find_gpu_spec.
GpuSpec gpu_spec_by_name_or_file(const std::string& gpu);

}  // namespace flashtune::model
