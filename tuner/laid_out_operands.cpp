#include "tuner/laid_out_operands.h"

#include <string>

#include "kernels/cuda_check.h"

namespace flashtune {

namespace {

enum class Direction { ToLayout, ToPacked };

// One 2-D copy per entry (b, h) of `entries`: `rows` rows of d floats between the packed entry and
// the strided one (Q and O: B entries of N rows, `heads` query heads; K and V: B / kv_group
// entries of keys rows, heads / kv_group K/V heads).
void copy_entries(float* strided, const OperandStrides& s, float* packed, const Workload& w, long long entries,
                  long long rows, long long heads, Direction dir, cudaStream_t stream) {
  const std::size_t row_bytes = static_cast<std::size_t>(w.d) * sizeof(float);
  const std::size_t pitch = static_cast<std::size_t>(s.row) * sizeof(float);
  for (long long e = 0; e < entries; ++e) {
    float* entry = strided + (e / heads) * s.batch + (e % heads) * s.head;
    float* dense = packed + e * rows * w.d;
    const bool to_layout = dir == Direction::ToLayout;
    float* dst = to_layout ? entry : dense;
    const float* src = to_layout ? dense : entry;
    const std::size_t dst_pitch = to_layout ? pitch : row_bytes;
    const std::size_t src_pitch = to_layout ? row_bytes : pitch;
    // One call site, so that a failure names the copy itself.
    FLASHTUNE_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, static_cast<std::size_t>(rows),
                                           cudaMemcpyDeviceToDevice, stream));
  }
}

}  // namespace

LaidOutOperands::LaidOutOperands(const AttentionInputs& in, TensorLayout layout, long long heads,
                                 cudaStream_t stream)
    : w_(in.workload),
      strides_(AttentionStrides::dense(layout, in.workload, heads)),
      q_(in.elements()),
      k_(in.k.size()),
      v_(in.v.size()),
      o_(in.elements()) {
  // The packed buffers are only read; the copy API wants a non-const source pointer.
  const long long q_heads = strides_.heads, g = w_.kv_group, kv_entries = w_.B / g;
  copy_entries(q_.data(), strides_.q, const_cast<float*>(in.q.data()), w_, w_.B, w_.N, q_heads, Direction::ToLayout,
               stream);
  copy_entries(k_.data(), strides_.k, const_cast<float*>(in.k.data()), w_, kv_entries, w_.keys(), q_heads / g,
               Direction::ToLayout, stream);
  copy_entries(v_.data(), strides_.v, const_cast<float*>(in.v.data()), w_, kv_entries, w_.keys(), q_heads / g,
               Direction::ToLayout, stream);
  if (w_.dtype != DType::Fp32) {
    // The packed floats are already rounded: encoding them again is exact.
    q16_ = DeviceBuffer<std::uint16_t>(q_.size());
    k16_ = DeviceBuffer<std::uint16_t>(k_.size());
    v16_ = DeviceBuffer<std::uint16_t>(v_.size());
    round_to_dtype(q_.data(), q16_.data(), q_.size(), w_.dtype, stream);
    round_to_dtype(k_.data(), k16_.data(), k_.size(), w_.dtype, stream);
    round_to_dtype(v_.data(), v16_.data(), v_.size(), w_.dtype, stream);
  }
  FLASHTUNE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

AttentionTensors LaidOutOperands::tensors() {
  if (w_.dtype == DType::Fp32) return {q_.data(), k_.data(), v_.data(), o_.data(), strides_};
  return {q16_.data(), k16_.data(), v16_.data(), o_.data(), strides_};
}

std::vector<float> LaidOutOperands::run_once(const KernelInstance& kernel, cudaStream_t stream) {
  o_.poison_nan(stream);
  FLASHTUNE_CUDA_CHECK(kernel.launch(tensors(), w_, stream));
  DeviceBuffer<float> wide(w_.dtype == DType::Fp32 ? 0 : o_.size());
  float* o = const_cast<float*>(output_as_float(o_, wide, w_, stream));
  DeviceBuffer<float> packed(o_.size());
  copy_entries(o, strides_.o, packed.data(), w_, w_.B, w_.N, strides_.heads, Direction::ToPacked, stream);
  FLASHTUNE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return packed.to_host();
}

}  // namespace flashtune
