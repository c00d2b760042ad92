#include "tuner/laid_out_operands.h"

#include <string>

#include "kernels/cuda_check.h"

namespace flashtune {

namespace {

enum class Direction { ToLayout, ToPacked };

// One 2-D copy per entry (b, h): N rows of d floats between the packed entry and the strided one.
void copy_entries(float* strided, const OperandStrides& s, float* packed, const Workload& w, long long heads,
                  Direction dir, cudaStream_t stream) {
  const std::size_t row_bytes = static_cast<std::size_t>(w.d) * sizeof(float);
  const std::size_t pitch = static_cast<std::size_t>(s.row) * sizeof(float);
  for (long long e = 0; e < w.B; ++e) {
    float* entry = strided + (e / heads) * s.batch + (e % heads) * s.head;
    float* dense = packed + e * w.N * w.d;
    const bool to_layout = dir == Direction::ToLayout;
    float* dst = to_layout ? entry : dense;
    const float* src = to_layout ? dense : entry;
    const std::size_t dst_pitch = to_layout ? pitch : row_bytes;
    const std::size_t src_pitch = to_layout ? row_bytes : pitch;
    // One call site, so that a failure names the copy itself.
    FLASHTUNE_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, static_cast<std::size_t>(w.N),
                                           cudaMemcpyDeviceToDevice, stream));
  }
}

}  // namespace

LaidOutOperands::LaidOutOperands(const AttentionInputs& in, TensorLayout layout, long long heads,
                                 cudaStream_t stream)
    : w_(in.workload),
      strides_(AttentionStrides::dense(layout, in.workload, heads)),
      q_(in.elements()),
      k_(in.elements()),
      v_(in.elements()),
      o_(in.elements()) {
  // The packed buffers are only read; the copy API wants a non-const source pointer.
  copy_entries(q_.data(), strides_.q, const_cast<float*>(in.q.data()), w_, heads, Direction::ToLayout, stream);
  copy_entries(k_.data(), strides_.k, const_cast<float*>(in.k.data()), w_, heads, Direction::ToLayout, stream);
  copy_entries(v_.data(), strides_.v, const_cast<float*>(in.v.data()), w_, heads, Direction::ToLayout, stream);
  FLASHTUNE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

std::vector<float> LaidOutOperands::run_once(const KernelInstance& kernel, cudaStream_t stream) {
  o_.poison_nan(stream);
  FLASHTUNE_CUDA_CHECK(kernel.launch(tensors(), w_, stream));
  DeviceBuffer<float> packed(o_.size());
  copy_entries(o_.data(), strides_.o, packed.data(), w_, strides_.heads, Direction::ToPacked, stream);
  FLASHTUNE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return packed.to_host();
}

}  // namespace flashtune
