#include "dispatch/attention_forward.h"

#include "kernels/registry.h"

namespace flashtune {

cudaError_t attention_forward(const AttentionTensors& t, const Workload& w, cudaStream_t stream,
                              const Dispatcher& dispatcher, Precision precision) {
  if (const Support s = check_tensors(t, w); !s) throw DispatchError(DispatchError::Kind::BadInput, s.reason);
  const Choice choice = dispatcher.choose(w, precision);
  // choose() only returns configs found in the registry.
  return find_kernel(choice.config)->launch(t, w, stream);
}

cudaError_t attention_forward(const float* q, const float* k, const float* v, float* o, const Workload& w,
                              cudaStream_t stream, const Dispatcher& dispatcher, Precision precision) {
  const Choice choice = dispatcher.choose(w, precision);
  return find_kernel(choice.config)->launch(q, k, v, o, w, stream);
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
