// The decode family's own launch: the split count chosen by the caller (the model, a sweep) rather
// than by the traits' default, on operands described as an inference call. Host header;
// implemented by the decode instances (kernels/decode_instance.cuh).
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/registry.h"
#include "kernels/traits/tensor_strides.h"
#include "kernels/traits/tile_config.h"

namespace flashtune {

// One decode call: Q and O [batch, q_heads, nq, d], K and V [batch, q_heads / kv_group, keys, d],
// any strides (elements of dtype; heads = q_heads). Query head hq reads K/V head hq / kv_group.
// Causal is bottom-right aligned: query row i sees keys j <= i + keys - nq.
struct DecodeProblem {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  AttentionStrides strides;
  long long batch = 1;
  int q_heads = 1;
  int kv_group = 1;
  long long nq = 1;
  long long keys = 1;
  int d = 128;
  bool causal = false;
  float scale = 0.0f;  // <= 0 means 1/sqrt(d)
  DType dtype = DType::Bf16;

  float effective_scale() const { return scale > 0.0f ? scale : 1.0f / std::sqrt(float(d)); }
  // Dense [batch, heads, rows, d] operands.
  static AttentionStrides dense_strides(int q_heads, int kv_group, long long nq, long long keys, int d) {
    AttentionStrides s;
    s.heads = q_heads;
    s.q = s.o = {q_heads * nq * d, nq * d, d};
    const long long kv_heads = q_heads / kv_group;
    s.k = s.v = {kv_heads * keys * d, keys * d, d};
    return s;
  }
};

// A decode call from the registry's (tensors, workload): B = batch x query heads entries, the
// heads from the strides, keys and the group from the workload.
inline DecodeProblem decode_problem(const AttentionTensors& t, const Workload& w) {
  DecodeProblem p;
  p.q = t.q;
  p.k = t.k;
  p.v = t.v;
  p.o = t.o;
  p.strides = t.strides;
  p.q_heads = static_cast<int>(t.strides.heads);
  p.batch = t.strides.heads > 0 ? w.B / t.strides.heads : 0;
  p.kv_group = w.kv_group;
  p.nq = w.N;
  p.keys = w.keys();
  p.d = w.d;
  p.causal = w.causal;
  p.scale = w.scale;
  p.dtype = w.dtype;
  return p;
}

class DecodeKernel {
 public:
  virtual ~DecodeKernel() = default;
  // One line why not, as KernelInstance::can_implement (d, dtype, nq <= 64, heads, causal with
  // nq <= keys, grid, shared memory, device memory).
  virtual Support can_run(const DecodeProblem& p, const DeviceLimits& dev) const = 0;
  // Launches with `splits` chunks of keys (clamped to [1, key tiles / warps]; 0: the traits'
  // default for this device). The workspace of the partials comes from a stream-ordered pool of
  // this library, so launches on any streams may overlap.
  virtual cudaError_t launch_decode(const DecodeProblem& p, int splits, cudaStream_t stream) const = 0;
  // The split count launch_decode(p, 0) uses on this device.
  virtual int default_splits(const DecodeProblem& p, const DeviceLimits& dev) const = 0;
  // Whether launch_decode(p, splits) on the current device merges the splits inside a thread-block
  // cluster (traits::Decode::cluster_combine) rather than with the combine kernel: what a timing
  // records, so that the model predicts the combine that ran.
  virtual bool combines_in_cluster(const DecodeProblem& p, int splits) const = 0;
  // Clusters of `cluster_blocks` (2..16) blocks of this kernel the current device runs at once
  // (cudaOccupancyMaxActiveClusters); 0 where it runs none or the binary has no cluster path. At
  // one block per SM, what a GPU spec's clusters_at_once_one_block_per_sm records.
  virtual int clusters_at_once(int cluster_blocks) const = 0;
};

namespace kernels {
// DecodeFlags forced on every launch of this process by FLASHTUNE_DECODE_FLAGS (experiments: 1
// evict-first, 2 with the 256-byte prefetch, 4 the combine in the split kernel, 8 the cluster
// combine where it fits, 16 no combine kernel at all: O wrong, to time the call without it); -1
// where unset: the launch picks (traits::Decode::evict_first, and the cluster combine where it fits).
int decode_flags();
// Whether a launch of `p` on a GPU of `l2_bytes` streams K/V with the evict-first policy (the
// forced flags, else the traits' rule): what a timing records, so that the model predicts the
// stream that ran (model::predict_decode).
bool decode_streams_evict_first(const DecodeProblem& p, long long l2_bytes);
}  // namespace kernels

// The decode interface of a registry instance; nullptr for the other families.
const DecodeKernel* as_decode(const KernelInstance* k);

}  // namespace flashtune
