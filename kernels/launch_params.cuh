// The kernel parameters of one launch, from the operands, the workload and its launch shape: one
// construction for every family that takes AttentionParams (kernel_instance.cuh and the sm_90a
// wgmma16_instance.cuh), so a new field is filled in one place.
#pragma once

#include "kernels/attention_params.cuh"
#include "kernels/registry.h"
#include "kernels/support_checks.h"
#include "kernels/traits/traits_common.h"

namespace flashtune::kernels {

// check_tensors() has bounded the row stride by INT_MAX.
inline DeviceStrides device_strides(const OperandStrides& s) {
  return {s.batch, s.head, static_cast<int>(s.row)};
}

// The params carry float pointers; a 16-bit kernel reinterprets them as its element type.
inline AttentionParams attention_params(const AttentionTensors& t, const Workload& w, const LaunchShape& shape) {
  const AttentionStrides& st = t.strides;
  const traits::FastDivisor group = traits::fast_divisor(static_cast<unsigned>(w.kv_group));
  const traits::FastDivisor heads = traits::fast_divisor(static_cast<unsigned>(st.heads));
  const traits::FastDivisor q_tiles = traits::fast_divisor(static_cast<unsigned>(shape.q_tiles));
  return AttentionParams{static_cast<const float*>(t.q),
                         static_cast<const float*>(t.k),
                         static_cast<const float*>(t.v),
                         static_cast<float*>(t.o),
                         device_strides(st.q),
                         device_strides(st.k),
                         device_strides(st.v),
                         device_strides(st.o),
                         static_cast<int>(st.heads),
                         heads.magic,
                         heads.shift,
                         w.B,
                         static_cast<int>(w.N),
                         static_cast<int>(w.keys()),
                         static_cast<int>(w.causal_offset()),
                         w.kv_group,
                         group.magic,
                         group.shift,
                         shape.q_tiles,
                         q_tiles.magic,
                         q_tiles.shift,
                         static_cast<int>(shape.order),
                         w.causal ? 1 : 0,
                         w.effective_scale() * 1.4426950408889634f};
}

}  // namespace flashtune::kernels
