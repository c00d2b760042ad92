#include "tuner/verify.h"

#include <string>

#include "kernels/cuda_check.h"

namespace flashtune {

std::size_t attention_elements(const Workload& w) { return std::size_t(w.B) * std::size_t(w.N) * std::size_t(w.d); }

std::size_t kv_elements(const Workload& w) {
  const long long g = w.kv_group > 0 ? w.kv_group : 1;
  return std::size_t(w.B / g) * std::size_t(w.keys()) * std::size_t(w.d);
}

AttentionInputs random_inputs(const Workload& w, float lo, float hi, std::uint64_t seed, cudaStream_t stream) {
  const std::size_t n = attention_elements(w), nk = kv_elements(w);
  AttentionInputs in{w, DeviceBuffer<float>(n), DeviceBuffer<float>(nk), DeviceBuffer<float>(nk), {}, {}, {}};
  fill_uniform(in.q.data(), n, lo, hi, 3 * seed + 0, stream);
  fill_uniform(in.k.data(), nk, lo, hi, 3 * seed + 1, stream);
  fill_uniform(in.v.data(), nk, lo, hi, 3 * seed + 2, stream);
  narrow_inputs(in, stream);
  FLASHTUNE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return in;
}

void narrow_inputs(AttentionInputs& in, cudaStream_t stream) {
  if (!in.narrow()) return;
  const std::size_t n = in.elements(), nk = in.k.size();
  in.q16 = DeviceBuffer<std::uint16_t>(n);
  in.k16 = DeviceBuffer<std::uint16_t>(nk);
  in.v16 = DeviceBuffer<std::uint16_t>(nk);
  round_to_dtype(in.q.data(), in.q16.data(), n, in.workload.dtype, stream);
  round_to_dtype(in.k.data(), in.k16.data(), nk, in.workload.dtype, stream);
  round_to_dtype(in.v.data(), in.v16.data(), nk, in.workload.dtype, stream);
}

const float* output_as_float(DeviceBuffer<float>& raw, DeviceBuffer<float>& scratch, const Workload& w,
                             cudaStream_t stream) {
  if (w.dtype == DType::Fp32) return raw.data();
  widen_to_float(reinterpret_cast<const std::uint16_t*>(raw.data()), scratch.data(), scratch.size(), w.dtype, stream);
  return scratch.data();
}

AttentionInputs upload_inputs(const Workload& w, const std::vector<float>& q, const std::vector<float>& k,
                              const std::vector<float>& v) {
  const std::size_t n = attention_elements(w), nk = kv_elements(w);
  AttentionInputs in{w, DeviceBuffer<float>(n), DeviceBuffer<float>(nk), DeviceBuffer<float>(nk), {}, {}, {}};
  in.q.copy_from_host(q);
  in.k.copy_from_host(k);
  in.v.copy_from_host(v);
  // A pageable cudaMemcpy may return before its DMA lands; later work runs on non-blocking streams.
  FLASHTUNE_CUDA_CHECK(cudaDeviceSynchronize());
  narrow_inputs(in, nullptr);
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
  o.poison_nan(stream);  // all bytes 0xFF: NaN in fp32, bf16 and fp16 alike
  FLASHTUNE_CUDA_CHECK(kernel.launch(in.q_operand(), in.k_operand(), in.v_operand(), o.data(), in.workload, stream));
  if (!in.narrow()) {
    FLASHTUNE_CUDA_CHECK(cudaStreamSynchronize(stream));
    return o.to_host();
  }
  DeviceBuffer<float> wide(o.size());
  output_as_float(o, wide, in.workload, stream);
  FLASHTUNE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return wide.to_host();
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
