// Turning command-line choices into a compiled kernel config, before any CUDA call, so bad input
// is reported the same way on machines with and without GPU. Host-only.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/traits/tile_config.h"
#include "kernels/traits/variants.h"  // compiled_configs(), compiled_head_dims()

namespace flashtune {

// Bad user input (exit code 2); the message is one line naming the bad value.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the user pinned down; unset fields come from the default config or any compiled one.
// `precision` is the accuracy asked for (--precision, default fp32): only configs it admits match.
struct ConfigRequest {
  std::optional<Variant> variant;
  std::optional<int> Br, Bc;
  std::optional<Layout> layout;
  std::optional<int> stages;   // pipeline depth, where the variant makes it a knob
  std::optional<bool> q_smem;  // Q re-read from shared memory, where the variant makes it a knob
  std::optional<bool> overlap;  // intra-warpgroup overlap of softmax and products (wgmma16's /ov)
  std::optional<bool> ping_pong;  // consumer warpgroups taking turns at the tensor cores (wgmma16's /pp)
  std::optional<bool> persistent;  // about one block per SM walking the tiles (wgmma16's /pe)
  std::optional<TileConfig> named;  // --config NAME: the whole config, its d and dtype included
  Precision precision = Precision::Fp32;
  DType dtype = DType::Fp32;  // the workload's element type: only configs of it match
  bool any() const { return variant || Br || Bc || layout || stages || q_smem || overlap || ping_pong || persistent; }
};

// "32, 64, 128"
std::string join_ints(const std::vector<int>& values);

// Throws UsageError("unknown variant 'x' (known: row_smem, ..., mma_1xtf32)"), every variant listed.
Variant parse_variant_or_throw(const std::string& name);
// "row_smem, row_reg, warp_groups, regtile_2d, mma_3xtf32, mma_1xtf32" (kAllVariants), for help
// strings and messages.
std::string known_variants();
// Throws UsageError("unknown layout 'x' (known: plain, padded, swizzled)").
Layout parse_layout_or_throw(const std::string& name);
// Throws UsageError("unknown precision 'x' (known: fp32, tf32)").
Precision parse_precision_or_throw(const std::string& name);
// "fp32, tf32"
std::string known_precisions();

// Throws UsageError("mma_1xtf32 is TF32-accurate only (rel L2 up to 1e-02): pass --precision tf32
// to use it") when `requested` does not admit v.
void require_precision(Variant v, Precision requested);

// Throws UsageError("unsupported d=48 (compiled: 32, 64, 128)") unless d has a compiled config.
// The same for a 16-bit dtype: "unsupported d=48 in bf16 (compiled: 64, 128)".
void require_compiled_head_dim(int d, DType t = DType::Fp32);

// The config `run` uses for workload dimension d: the default with the request's fields applied
// when that is compiled, else the first compiled config (registry order) matching the request.
// Throws UsageError naming the config and why it cannot run (tile_rejection's reason, or the
// compiled configs of that d the precision admits), or require_precision's line for a variant the
// request's precision does not admit.
TileConfig select_config(int d, const ConfigRequest& request, const TileConfig& default_config);

// Every compiled config of head dimension d matching the request's set fields and admitted by its
// precision, registry order.
std::vector<TileConfig> matching_configs(int d, const ConfigRequest& request);

}  // namespace flashtune
