#include "dispatch/attention_forward.h"

#include "kernels/decode_api.h"
#include "kernels/registry.h"

namespace flashtune {
namespace {

// The chosen kernel's launch; a decode config with the split count the dispatcher chose (the
// model's), through the decode family's own launch.
cudaError_t launch_choice(const KernelInstance* kernel, const Choice& choice, const AttentionTensors& t,
                          const Workload& w, cudaStream_t stream) {
  if (const DecodeKernel* decode = as_decode(kernel); decode && choice.splits > 0) {
    if (!check_tensors(t, w)) return cudaErrorInvalidValue;
    return decode->launch_decode(decode_problem(t, w), choice.splits, stream);
  }
  return kernel->launch(t, w, stream);
}

}  // namespace

cudaError_t attention_forward(const AttentionTensors& t, const Workload& w, cudaStream_t stream,
                              const Dispatcher& dispatcher, Precision precision) {
  if (const Support s = check_tensors(t, w); !s) throw DispatchError(DispatchError::Kind::BadInput, s.reason);
  const Choice choice = dispatcher.choose(w, precision);
  // choose() only returns configs found in the registry.
  const KernelInstance* kernel = find_kernel(choice.config);
  if (const Support s = kernel->can_address(t, w); !s) {
    // The TMA family (wgmma16) cannot address every stride check_tensors accepts (a tensor map's
    // stride stays below 2^40 bytes); the heuristic default (mma16 for 16-bit data, SIMT for fp32)
    // addresses all of them.
    const KernelInstance* fallback = find_kernel(default_config(w));
    if (!fallback || !fallback->can_address(t, w))
      throw DispatchError(DispatchError::Kind::BadInput, choice.config.name() + ": " + s.reason);
    kernel = fallback;
  }
  return launch_choice(kernel, choice, t, w, stream);
}

cudaError_t attention_forward(const float* q, const float* k, const float* v, float* o, const Workload& w,
                              cudaStream_t stream, const Dispatcher& dispatcher, Precision precision) {
  const Choice choice = dispatcher.choose(w, precision);
  return launch_choice(find_kernel(choice.config), choice, AttentionTensors::packed(q, k, v, o, w), w, stream);
}

cudaError_t attention_forward(const float* q, const float* k, const float* v, float* o, long long B, long long N,
                              int d, bool causal, cudaStream_t stream, const Dispatcher& dispatcher,
                              Precision precision) {
  Workload w;
  w.B = B;
  w.N = N;
  w.d = d;
  w.causal = causal;
  return attention_forward(q, k, v, o, w, stream, dispatcher, precision);
}

}  // namespace flashtune
