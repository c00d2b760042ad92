#include "tuner/verify.h"

#include <string>

#include "kernels/cuda_check.h"

namespace flashtune {

std::size_t attention_elements(const Workload& w) { return std::size_t(w.B) * std::size_t(w.N) * std::size_t(w.d); }

AttentionInputs random_inputs(const Workload& w, float lo, float hi, std::uint64_t seed, cudaStream_t stream) {
  const std::size_t n = attention_elements(w);
  AttentionInputs in{w, DeviceBuffer<float>(n), DeviceBuffer<float>(n), DeviceBuffer<float>(n)};
  fill_uniform(in.q.data(), n, lo, hi, 3 * seed + 0, stream);
  fill_uniform(in.k.data(), n, lo, hi, 3 * seed + 1, stream);
  fill_uniform(in.v.data(), n, lo, hi, 3 * seed + 2, stream);
  FLASHTUNE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return in;
}

AttentionInputs upload_inputs(const Workload& w, const std::vector<float>& q, const std::vector<float>& k,
                              const std::vector<float>& v) {
  const std::size_t n = attention_elements(w);
  AttentionInputs in{w, DeviceBuffer<float>(n), DeviceBuffer<float>(n), DeviceBuffer<float>(n)};
  in.q.copy_from_host(q);
  in.k.copy_from_host(k);
  in.v.copy_from_host(v);
  // A pageable cudaMemcpy may return before its DMA lands; later work runs on non-blocking streams.
  FLASHTUNE_CUDA_CHECK(cudaDeviceSynchronize());
  return in;
}

std::vector<double> reference_on_host(const AttentionInputs& in, cudaStream_t stream) {
  DeviceBuffer<double> ref(in.elements());
  ref.poison_nan(stream);
  FLASHTUNE_CUDA_CHECK(attention_reference_gpu(in.q.data(), in.k.data(), in.v.data(), ref.data(), in.workload, stream));
  FLASHTUNE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return ref.to_host();
}

std::vector<float> run_once(const KernelInstance& kernel, const AttentionInputs& in, DeviceBuffer<float>& o,
                            cudaStream_t stream) {
  o.poison_nan(stream);
  FLASHTUNE_CUDA_CHECK(kernel.launch(in.q.data(), in.k.data(), in.v.data(), o.data(), in.workload, stream));
  FLASHTUNE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return o.to_host();
}

ErrorStats verify_on_random_inputs(const KernelInstance& kernel, const Workload& w, float lo, float hi,
                                   std::uint64_t seed) {
  cudaStream_t stream = nullptr;
  FLASHTUNE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() { cudaStreamDestroy(s); }
  } guard{stream};
  AttentionInputs in = random_inputs(w, lo, hi, seed, stream);
  const std::vector<double> ref = reference_on_host(in, stream);
  DeviceBuffer<float> o(in.elements());
  const std::vector<float> out = run_once(kernel, in, o, stream);
  return compare_to_reference(out.data(), ref.data(), out.size());
}

}  // namespace flashtune
