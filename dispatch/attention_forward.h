// The library call: FlashAttention forward with the kernel config the dispatcher picks for the
// workload (dispatch/dispatcher.h, docs/dispatch.md).
//
//   flashtune::Dispatcher dispatcher = flashtune::Dispatcher::for_device(0);  // profiles/<gpu>.json
//   cudaError_t e = flashtune::attention_forward(q, k, v, o, B, N, d, causal, stream, dispatcher);
#pragma once

#include <cuda_runtime_api.h>

#include "dispatch/dispatcher.h"
#include "kernels/traits/tile_config.h"

namespace flashtune {

// q, o: device pointers of B*N*d elements of w.dtype, [B, N, d] row-major (B = batch x query
// heads); k, v: (B / w.kv_group) * w.keys() * d elements, [B / kv_group, keys, d]. That is also
// dense q [batch, Hq, Nq, d] beside k, v [batch, Hkv, Nkv, d] with w.N = Nq, w.kv_len = Nkv,
// w.kv_group = Hq / Hkv (query entry e reads K/V entry e / kv_group: no copy of K or V); causal
// is bottom-right aligned (row i sees keys j <= i + Nkv - Nq). Softmax scale w.scale (<= 0:
// 1/sqrt(d)). Launches on `stream` without synchronising and returns the
// launch's error. The dispatcher's device must be the stream's. Throws DispatchError when no
// config can be chosen (d not compiled, nothing the device can run) or the workload is refused
// (BadInput, one line: causal with N above kv_len, B not a multiple of kv_group, kv_group < 1). `precision`: Fp32 (the
// default) runs an fp32-accurate config only; Tf32 lets the dispatcher pick mma_1xtf32 (rel L2 up
// to 1e-2) where it is faster.
cudaError_t attention_forward(const float* q, const float* k, const float* v, float* o, const Workload& w,
                              cudaStream_t stream, const Dispatcher& dispatcher,
                              Precision precision = Precision::Fp32);

// The same over operands of any strides (kernels/traits/tensor_strides.h: [batch, heads, N, d],
// [batch, N, heads, d], slices of a fused QKV tensor; the last dimension contiguous), without a
// copy. Throws DispatchError(BadInput) naming the operand and stride when no kernel can address
// them (check_tensors: 16-byte alignment of pointers and strides, heads dividing B, query heads a
// multiple of w.kv_group: K and V of t.strides.heads / kv_group heads).
cudaError_t attention_forward(const AttentionTensors& t, const Workload& w, cudaStream_t stream,
                              const Dispatcher& dispatcher, Precision precision = Precision::Fp32);

// The same with scale 1/sqrt(d).
cudaError_t attention_forward(const float* q, const float* k, const float* v, float* o, long long B, long long N,
                              int d, bool causal, cudaStream_t stream, const Dispatcher& dispatcher,
                              Precision precision = Precision::Fp32);

}  // namespace flashtune
