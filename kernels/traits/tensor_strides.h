// Where Q, K, V and O live in memory: a base pointer and batch, head and row strides per operand,
// the last dimension contiguous. One workload entry is (batch b, query head h) with B = batch x
// heads; element (b, h, row, col) of Q or O lies at base + b * batch + h * head + row * row + col
// (strides in elements), of K or V at the same with h / kv_group for h. Plain C++17: the model, the dispatcher and the Python module read it.
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
  // Query heads; the workload's B is batch x heads, B % heads == 0. Entry e = (b, hq) with
  // b = e / heads, hq = e % heads reads Q and writes O at b * batch + hq * head, and reads K and V
  // of K/V head hq / w.kv_group of batch b: b * k.batch + (hq / kv_group) * k.head (no copy of K
  // or V for grouped heads). heads % kv_group == 0 (check_tensors).
  long long heads = 1;
  OperandStrides q, k, v, o;

  // Every operand with the same strides.
  static AttentionStrides uniform(long long heads, OperandStrides s) { return {heads, s, s, s, s}; }
  // Dense tensors of `layout`: Q and O holding w.B = batch x heads entries of [N, d], K and V
  // batch x (heads / kv_group) entries of [keys, d]. Bnd has one head per entry, so with grouped
  // heads it is Bhnd with kv_group query heads (the fewest that share one K/V head): K/V entry
  // e / kv_group serves query entry e, the packed layout of grouped K and V.
  static AttentionStrides dense(TensorLayout layout, const Workload& w, long long heads = 1) {
    const long long n = w.N, kn = w.keys(), d = w.d, g = w.kv_group > 0 ? w.kv_group : 1;
    if (layout == TensorLayout::Bnd) {
      if (g == 1) {
        AttentionStrides s = uniform(1, {n * d, 0, d});
        s.k = s.v = {kn * d, 0, d};
        return s;
      }
      layout = TensorLayout::Bhnd;
      heads = g;
    }
    const long long kv_heads = heads / g > 0 ? heads / g : 1;
    AttentionStrides s;
    if (layout == TensorLayout::Bhnd) {
      s = uniform(heads, {heads * n * d, n * d, d});
      s.k = s.v = {kv_heads * kn * d, kn * d, d};
    } else {  // Bnhd
      s = uniform(heads, {n * heads * d, d, heads * d});
      s.k = s.v = {kn * kv_heads * d, d, kv_heads * d};
    }
    return s;
  }
  static AttentionStrides packed(const Workload& w) { return dense(TensorLayout::Bnd, w); }
};

}  // namespace flashtune
