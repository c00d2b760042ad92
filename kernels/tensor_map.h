// Host-side TMA tensor maps (cuTensorMapEncodeTiled, reached through the runtime's driver entry
// point, so that nothing links libcuda directly) of one attention operand, for the sm_90a kernels.
#pragma once

#include <cuda.h>

#include "kernels/registry.h"

namespace flashtune::kernels {

// Encodes operand `name` (base `ptr`, strides `s` in elements, `batches` batches of `heads` heads
// of `rows` rows: query heads and N for Q and O, K/V heads and keys() for K and V) of workload w,
// as the 4-D tensor {d, rows, heads, batches} (innermost first), read and written in boxes of one
// swizzled row (128 bytes: 64 16-bit or 32 fp32 columns; 64 bytes in the 64-byte swizzle where a
// row of d is that short, 16-bit d = 32) x `box_rows` rows (the layouts of
// kernels/traits/wgmma16_traits.h and wgmma_tf32_traits.h). Rows past `rows` read as zeros and are never written. Refuses, in
// one line naming the operand and the value, what TMA cannot address: a base or stride that is no
// multiple of 16 bytes, a stride of 2^40 bytes or more, or an encoding the driver refuses.
Support encode_operand_map(CUtensorMap& map, const char* name, const void* ptr, const OperandStrides& s, long long batches,
                           long long heads, long long rows, const Workload& w, int box_rows);

// The four maps of one attention launch: Q and O in boxes of `q_box_rows` rows over
// [batch, Hq, N, d]; K and V in boxes of `kv_box_rows` rows over [batch, Hkv, keys, d] (grouped
// heads read in place: the kernels map query head h to h / kv_group). The first refusal wins.
Support encode_attention_maps(CUtensorMap& q, CUtensorMap& k, CUtensorMap& v, CUtensorMap& o, const AttentionTensors& t,
                              const Workload& w, int q_box_rows, int kv_box_rows);

}  // namespace flashtune::kernels
