// The manifest of compiled kernel instantiations: each with a run-time description filled from
// its template constants, can_implement() and launch(). Host header; implemented in CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "kernels/traits/tensor_strides.h"
#include "kernels/traits/tile_config.h"

namespace flashtune {

// What the kernels need to know about the GPU to decide whether a config can run on it.
struct DeviceLimits {
  std::string name;
  int device = 0;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int smem_per_block_optin = 0;  // bytes a block may use after cudaFuncSetAttribute
  int smem_per_sm = 0;
  int regs_per_sm = 0;
  long long global_mem_bytes = 0;
  long long l2_bytes = 0;
  // Throws CudaError (kernels/cuda_check.h) naming the CUDA error when there is no usable device.
  static DeviceLimits query(int device);
};

// Result of can_implement(): ok, or the reason why not, in one line.
struct Support {
  bool ok = true;
  std::string reason;
  explicit operator bool() const { return ok; }
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

// Compiled resources of the kernel, from cudaFuncGetAttributes.
struct KernelResources {
  int registers = 0;
  int static_smem_bytes = 0;
  int dynamic_smem_bytes = 0;
  int local_bytes = 0;  // stack/spill bytes per thread
  int max_threads_per_block = 0;
  int threads_per_block = 0;
};

// The operands of one call: device pointers and their strides (kernels/traits/tensor_strides.h),
// in elements of the workload's dtype (Workload::dtype: 4-byte floats, or 2-byte bf16 / fp16).
struct AttentionTensors {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  AttentionStrides strides;
  // [B, N, d] packed, the layout of the pointer-only launch().
  static AttentionTensors packed(const void* q, const void* k, const void* v, void* o, const Workload& w) {
    return {q, k, v, o, AttentionStrides::packed(w)};
  }
};

// Whether every kernel can address these operands: each base pointer and stride aligned to the
// 16-byte vectors (float4 loads, cp.async) all variants use (4 floats, 8 bf16 / fp16 elements), K and V with the same batch and head
// strides (one offset addresses both), heads dividing B, row strides
// below 2^31 floats, and O's rows within an entry not overlapping (that
// different entries of O do not overlap is the caller's to keep). The reason names the operand and the value.
Support check_tensors(const AttentionTensors& t, const Workload& w);

class KernelInstance {
 public:
  virtual ~KernelInstance() = default;
  virtual const TileConfig& config() const = 0;
  std::string name() const { return config().name(); }
  // d must equal the instantiation's d, the shared memory must fit, B and N must be >= 1 and the
  // grid must fit the device's limits.
  virtual Support can_implement(const Workload& w, const DeviceLimits& dev) const = 0;
  // Whether this kernel can address these operands: check_tensors() for every family; the TMA
  // kernels (wgmma16) add what a tensor map can encode. The reason names the operand and value.
  virtual Support can_address(const AttentionTensors& t, const Workload& w) const { return check_tensors(t, w); }
  // Launches on `stream` over operands of any strides that check_tensors() accepts (it returns
  // cudaErrorInvalidValue otherwise). Returns the launch error (does not synchronize).
  virtual cudaError_t launch(const AttentionTensors& t, const Workload& w, cudaStream_t stream) const = 0;
  // q, k, v, o: device pointers of B*N*d elements of w.dtype, [B, N, d] packed.
  cudaError_t launch(const void* q, const void* k, const void* v, void* o, const Workload& w,
                     cudaStream_t stream) const {
    return launch(AttentionTensors::packed(q, k, v, o, w), w, stream);
  }
  virtual KernelResources resources() const = 0;
};

// Every compiled instantiation, in a stable order (variant, d, Br, Bc, layout).
const std::vector<const KernelInstance*>& kernel_registry();
// nullptr when the config is not compiled in.
const KernelInstance* find_kernel(const TileConfig& c);
// A reasonable config for a workload before any tuning (heuristic; the measured reason in a comment).
TileConfig default_config(const Workload& w);

}  // namespace flashtune
