// The option groups several subcommands take, each added to a CLI11 command by one function with
// one help text, and read into a plain struct: the workload (--B, --N, --d, --causal, --heads,
// --kv-heads, --kv-len, and where the command takes them --scale, --qkv-layout), the config filter (--variant, --Br, --Bc,
// --layout, --precision) and sampling (--time-cap, --rel-stdev, --min-samples, --max-samples,
// --warmup-ms). An option not given stays an empty optional. Checks throw UsageError (one line
// naming the value) and touch no file or GPU.
#pragma once

#include <optional>
#include <string>

#include "kernels/traits/tensor_strides.h"
#include "kernels/traits/tile_config.h"
#include "model/number_text.h"
#include "tuner/config_select.h"

namespace CLI {
class App;
}  // namespace CLI

namespace flashtune {
struct HarnessOptions;
}  // namespace flashtune

namespace flashtune::app {

// ---- workload -------------------------------------------------------------------------------

struct WorkloadCliOptions {
  std::optional<long long> B, N;
  std::optional<int> d;
  bool causal = false;
  std::optional<float> scale;      // --scale: softmax scale; empty: 1/sqrt(d)
  std::string qkv_layout = "bnd";  // --qkv-layout: the operands' memory layout (bnd, bhnd, bnhd)
  // --heads: query heads per batch entry; the workload has B x heads entries (default 1: --B
  // counts the entries, as before the option existed).
  long long heads = 1;
  std::optional<long long> kv_heads;  // --kv-heads: K/V heads per batch entry (default: heads)
  std::optional<long long> kv_len;    // --kv-len: keys per entry (default: N)
  std::string dtype = "fp32";      // --dtype: element type of Q, K, V and O
};

// Which of the workload options a command takes beyond --B, --N, --d and --causal.
struct WorkloadOptionSet {
  bool dims_required = false;  // --B, --N and --d must be given (CLI11 refuses the command line otherwise)
  bool scale = false;          // --scale
  bool memory_layout = false;  // --qkv-layout
};

void add_workload_options(CLI::App* cmd, WorkloadCliOptions& o, WorkloadOptionSet which);
// --dtype parsed. Throws UsageError("unknown dtype 'x' (known: fp32, bf16, fp16)").
DType dtype_of(const WorkloadCliOptions& o);
// The same for a filter option whose empty value means every dtype (list, export).
std::optional<DType> dtype_filter_of(const std::string& dtype);
// --dtype's help, one text for every command.
std::string dtype_help(const std::string& what);
// --scale positive and finite; empty when not given. Throws UsageError.
std::optional<float> scale_of(const WorkloadCliOptions& o);
// --qkv-layout known. Throws UsageError.
TensorLayout memory_layout_of(const WorkloadCliOptions& o);
// Applies --heads, --kv-heads and --kv-len to w, whose B (the batch) and N are set: B becomes batch
// x heads entries, kv_group heads / kv-heads, kv_len the keys. Throws UsageError naming the value:
// heads or kv-heads below 1, heads not a multiple of kv-heads, kv-len below 1, B x heads overflowing.
// Causal with N above kv-len is workload_limit_error's to refuse (one message for every command).
void apply_heads_and_keys(const WorkloadCliOptions& o, Workload& w);

// ---- config filter --------------------------------------------------------------------------

struct ConfigFilterCliOptions {
  std::string config;              // --config NAME: every field of one config at once
  std::string variant, layout;     // empty: any
  std::optional<int> Br, Bc;
  std::string precision = "fp32";  // fp32 admits the fp32-accurate configs only, tf32 all
};

// `what_all_means` ends the --precision help: which of the command's choices it filters.
void add_config_filter_options(CLI::App* cmd, ConfigFilterCliOptions& o, const std::string& what_all_means);
// --precision alone, for commands that filter by nothing else (tune, merge). Same help.
void add_precision_option(CLI::App* cmd, std::string& precision, const std::string& what_it_filters);
// The fields given, parsed; a variant the precision does not admit is refused. Throws UsageError
// (variant, then layout, then precision, then the variant's precision).
ConfigRequest config_request_of(const ConfigFilterCliOptions& o);

// ---- sampling -------------------------------------------------------------------------------

struct SamplingCliOptions {
  double time_cap_s = 2.0, rel_stdev = 0.01, warmup_ms = 50;
  int min_samples = 10, max_samples = 2000;
  std::string l2_flush = "write";  // run's --l2-flush; tune keeps the write flush its profiles record
};

// The help texts name `o`'s values as the defaults (run and tune sample for different times).
void add_sampling_options(CLI::App* cmd, SamplingCliOptions& o);
// --l2-flush write|read (tuner/timing_harness.h, L2Flush): run only.
void add_l2_flush_option(CLI::App* cmd, SamplingCliOptions& o);
// Every value in range. Throws UsageError.
void validate_sampling(const SamplingCliOptions& o);
HarnessOptions harness_options_of(const SamplingCliOptions& o);

}  // namespace flashtune::app
