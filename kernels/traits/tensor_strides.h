// Where Q, K, V and O live in memory: a base pointer and batch, head and row strides per operand,
// the last dimension contiguous. One workload entry is (batch b, head h) with B = batch x heads;
// element (b, h, row, col) of an operand lies at base + b * batch + h * head + row * row + col
// (strides in floats). Plain C++17: the model, the dispatcher and the Python module read it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kernels/traits/tile_config.h"

namespace flashtune {

struct OperandStrides {
  long long batch = 0;
  long long head = 0;
  long long row = 0;
};

// The named memory layouts a user can ask for from the command line; any other strides come
// through the C++ or Python call.
enum class TensorLayout : int {
  Bnd = 0,   // [B, N, d] with B = batch x heads: the packed layout every kernel started with
  Bhnd = 1,  // [batch, heads, N, d]: the same addresses as Bnd, split into batch and head
  Bnhd = 2,  // [batch, N, heads, d]: the view a fused QKV projection gives before any transpose
};
inline constexpr TensorLayout kAllTensorLayouts[] = {TensorLayout::Bnd, TensorLayout::Bhnd, TensorLayout::Bnhd};

constexpr const char* tensor_layout_name(TensorLayout l) {
  switch (l) {
    case TensorLayout::Bnd: return "bnd";
    case TensorLayout::Bhnd: return "bhnd";
    case TensorLayout::Bnhd: return "bnhd";
  }
  return "?";
}

inline std::optional<TensorLayout> parse_tensor_layout(std::string_view s) {
  for (TensorLayout l : kAllTensorLayouts)
    if (s == tensor_layout_name(l)) return l;
  return std::nullopt;
}

struct AttentionStrides {
  long long heads = 1;  // the workload's B is batch x heads; B % heads == 0
  OperandStrides q, k, v, o;

  // Every operand with the same strides.
  static AttentionStrides uniform(long long heads, OperandStrides s) { return {heads, s, s, s, s}; }
  // Dense tensors of `layout` holding w.B = batch x heads entries of [N, d].
  static AttentionStrides dense(TensorLayout layout, const Workload& w, long long heads = 1) {
    const long long n = w.N, d = w.d;
    switch (layout) {
      case TensorLayout::Bhnd: return uniform(heads, {heads * n * d, n * d, d});
      case TensorLayout::Bnhd: return uniform(heads, {n * heads * d, d, heads * d});
      case TensorLayout::Bnd: break;
    }
    return uniform(1, {n * d, 0, d});
  }
  static AttentionStrides packed(const Workload& w) { return dense(TensorLayout::Bnd, w); }
};

}  // namespace flashtune
