#include "kernels/support_checks.h"

#include <climits>
#include <cstdint>
#include <string>

#include "kernels/traits/traits_common.h"

namespace flashtune::kernels {

using traits::GridOrder;
using traits::kMaxGridX;

LaunchShape launch_shape(const Workload& w, int Br, bool heavy_first) {
  LaunchShape s;
  if (w.B < 1 || w.N < 1 || w.N > INT_MAX) return s;
  const long long q_tiles = traits::ceil_div_ll(w.N, Br);
  s.q_tiles = static_cast<int>(q_tiles);
  s.blocks = q_tiles * w.B;
  s.order = traits::grid_order(w.B, q_tiles, w.causal, heavy_first);
  switch (s.order) {
    case GridOrder::TileFastest: s.grid = dim3(static_cast<unsigned>(q_tiles), static_cast<unsigned>(w.B), 1); break;
    case GridOrder::BatchFastest: s.grid = dim3(static_cast<unsigned>(w.B), static_cast<unsigned>(q_tiles), 1); break;
    case GridOrder::Folded:
      if (s.blocks > kMaxGridX) return s;
      s.grid = dim3(static_cast<unsigned>(s.blocks), 1, 1);
      break;
  }
  s.ok = true;
  return s;
}

Support check_inference_shape(const Workload& w) {
  using std::to_string;
  if (w.kv_len < 0) return Support::no("kv_len=" + to_string(w.kv_len) + " must be >= 0 (0 means N)");
  if (w.keys() > INT_MAX)
    return Support::no("kv_len=" + to_string(w.keys()) + " is above the kernels' limit " + to_string(INT_MAX));
  if (w.kv_group < 1) return Support::no("kv_group=" + to_string(w.kv_group) + " must be >= 1");
  if (w.causal && w.N > w.keys())
    return Support::no("causal with N=" + to_string(w.N) + " query rows above kv_len=" + to_string(w.keys()) +
                       " keys: bottom-right alignment would leave the first rows no key");
  return Support::yes();
}

Support check_support(const TileConfig& c, int threads, int smem_bytes, int Br, bool heavy_first, const Workload& w,
                      const DeviceLimits& dev) {
  using std::to_string;
  if (!traits::is_head_dim(w.d))
    return Support::no("d=" + to_string(w.d) + " is not supported (kernels exist for d in {32, 64, 128})");
  if (w.d != c.d) return Support::no("config is for d=" + to_string(c.d) + ", workload has d=" + to_string(w.d));
  if (w.dtype != c.dtype)
    return Support::no(std::string("config is for ") + dtype_name(c.dtype) + " operands, workload is " +
                       dtype_name(w.dtype));
  if (w.B < 1) return Support::no("B must be >= 1 (got " + to_string(w.B) + ")");
  if (w.N < 1) return Support::no("N must be >= 1 (got " + to_string(w.N) + ")");
  if (w.N > INT_MAX) return Support::no("N=" + to_string(w.N) + " is above the kernels' limit " + to_string(INT_MAX));
  if (smem_bytes > dev.smem_per_block_optin)
    return Support::no("needs " + to_string(smem_bytes) + " B of shared memory, device allows " +
                       to_string(dev.smem_per_block_optin) + " B");
  if (threads > dev.max_threads_per_block)
    return Support::no("needs " + to_string(threads) + " threads per block, device allows " +
                       to_string(dev.max_threads_per_block));
  const LaunchShape shape = launch_shape(w, Br, heavy_first);
  if (!shape.ok)
    return Support::no("grid of " + to_string(shape.blocks) + " blocks exceeds the device limit of " +
                       to_string(kMaxGridX));
  // Q, K, V and O, of the workload's dtype.
  const double bytes = 4.0 * dtype_bytes(w.dtype) * double(w.B) * double(w.N) * double(w.d);
  if (dev.global_mem_bytes > 0 && bytes > double(dev.global_mem_bytes))
    return Support::no("needs " + to_string(static_cast<long long>(bytes)) +
                       " B of device memory for Q, K, V and O, device has " +
                       to_string(dev.global_mem_bytes) + " B");
  return Support::yes();
}

}  // namespace flashtune::kernels

namespace flashtune {

namespace {
// Every variant moves 16-byte vectors (float4 loads and stores, cp.async 16): a base pointer and
// each stride must keep every row start on a 16-byte boundary.
constexpr long long kVectorBytes = 16;

Support check_operand(const char* name, const void* ptr, const OperandStrides& s, const Workload& w,
                      long long heads) {
  using std::to_string;
  const std::string op = name;
  if (ptr == nullptr) return Support::no(op + " is a null pointer");
  if (reinterpret_cast<std::uintptr_t>(ptr) % kVectorBytes != 0)
    return Support::no(op + " is not 16-byte aligned (the kernels load and store float4 / cp.async 16 B)");
  const long long vector_elements = kVectorBytes / w.element_bytes();
  const struct {
    const char* what;
    long long value;
    bool used;
  } strides[] = {{"batch", s.batch, w.B / heads > 1}, {"head", s.head, heads > 1}, {"row", s.row, w.N > 1}};
  for (const auto& st : strides) {
    if (!st.used) continue;  // a stride that never multiplies a non-zero index may be anything
    if (st.value < 0)
      return Support::no(op + " " + st.what + " stride " + to_string(st.value) + " is negative");
    if (st.value % vector_elements != 0)
      return Support::no(op + " " + st.what + " stride " + to_string(st.value) + " is not a multiple of " +
                         to_string(vector_elements) + " " + (w.dtype == DType::Fp32 ? "floats" : "elements") +
                         " (the kernels load and store 16-byte vectors)");
  }
  if (w.N > 1 && s.row > INT_MAX)
    return Support::no(op + " row stride " + to_string(s.row) + " is above the kernels' limit " + to_string(INT_MAX));
  return Support::yes();
}
}  // namespace

Support check_tensors(const AttentionTensors& t, const Workload& w) {
  using std::to_string;
  const long long heads = t.strides.heads;
  if (heads < 1 || heads > INT_MAX)
    return Support::no("heads must be in [1, " + to_string(INT_MAX) + "] (got " + to_string(heads) + ")");
  if (w.B % heads != 0)
    return Support::no("B=" + to_string(w.B) + " is not a multiple of heads=" + to_string(heads));
  const struct {
    const char* name;
    const void* ptr;
    const OperandStrides& s;
  } ops[] = {{"q", t.q, t.strides.q}, {"k", t.k, t.strides.k}, {"v", t.v, t.strides.v}, {"o", t.o, t.strides.o}};
  for (const auto& op : ops)
    if (Support s = check_operand(op.name, op.ptr, op.s, w, heads); !s) return s;
  // One offset addresses an entry's K and V in every kernel (kernels/attention_params.cuh: Entry).
  const OperandStrides &ks = t.strides.k, &vs = t.strides.v;
  if (w.B / heads > 1 && ks.batch != vs.batch)
    return Support::no("k and v batch strides differ (" + to_string(ks.batch) + " and " + to_string(vs.batch) +
                       "): the kernels address an entry's K and V with one offset");
  if (heads > 1 && ks.head != vs.head)
    return Support::no("k and v head strides differ (" + to_string(ks.head) + " and " + to_string(vs.head) +
                       "): the kernels address an entry's K and V with one offset");
  // Rows of O written by different blocks must not share addresses.
  if (w.N > 1 && t.strides.o.row < w.d)
    return Support::no("o row stride " + to_string(t.strides.o.row) + " is below d=" + to_string(w.d) +
                       ": output rows would overlap");
  return Support::yes();
}

}  // namespace flashtune
