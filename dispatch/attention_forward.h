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

// q, k, v, o: device pointers of B*N*d floats, [B, N, d] row-major (B = batch x heads); softmax
// scale w.scale (<= 0: 1/sqrt(d)). Launches on `stream` without synchronising and returns the
// launch's error. The dispatcher's device must be the stream's. Throws DispatchError when no
// config can be chosen (d not compiled, nothing the device can run). `precision`: Fp32 (the
// default) runs an fp32-accurate config only; Tf32 lets the dispatcher pick mma_1xtf32 (rel L2 up
// to 1e-2) where it is faster.
cudaError_t attention_forward(const float* q, const float* k, const float* v, float* o, const Workload& w,
                              cudaStream_t stream, const Dispatcher& dispatcher,
                              Precision precision = Precision::Fp32);

// The same over operands of any strides (kernels/traits/tensor_strides.h: [batch, heads, N, d],
// [batch, N, heads, d], slices of a fused QKV tensor; the last dimension contiguous), without a
// copy. Throws DispatchError(BadInput) naming the operand and stride when no kernel can address
// them (check_tensors: 16-byte alignment of pointers and strides, heads dividing B). Where the
// chosen config cannot address them but check_tensors can (a TMA kernel, wgmma16, and a stride of
// 2^40 bytes or more), the heuristic default config (default_config) runs instead.
cudaError_t attention_forward(const AttentionTensors& t, const Workload& w, cudaStream_t stream,
                              const Dispatcher& dispatcher, Precision precision = Precision::Fp32);

// The same with scale 1/sqrt(d).
cudaError_t attention_forward(const float* q, const float* k, const float* v, float* o, long long B, long long N,
                              int d, bool causal, cudaStream_t stream, const Dispatcher& dispatcher,
                              Precision precision = Precision::Fp32);

}  // namespace flashtune
