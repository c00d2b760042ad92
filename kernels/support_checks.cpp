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
    return Support::no("causal with N=" + to_string(w.N) + " above kv_len=" + to_string(w.keys()) +
                       ": bottom-right alignment would leave the first query rows no key");
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
  if (Support s = check_inference_shape(w); !s) return s;
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
  // Q and O, and K and V (one copy per K/V head), of the workload's dtype.
  const double bytes = double(dtype_bytes(w.dtype)) * double(w.B) * double(w.d) *
                       (2.0 * double(w.N) + 2.0 * double(w.keys()) / double(w.kv_group));
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

// rows: the operand's rows per entry (N for Q and O, keys() for K and V); heads: its heads per batch
// entry (query heads for Q and O, K/V heads for K and V).
Support check_operand(const char* name, const void* ptr, const OperandStrides& s, const Workload& w,
                      long long batch, long long heads, long long rows) {
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
  } strides[] = {{"batch", s.batch, batch > 1}, {"head", s.head, heads > 1}, {"row", s.row, rows > 1}};
  for (const auto& st : strides) {
    if (!st.used) continue;  // a stride that never multiplies a non-zero index may be anything
    if (st.value < 0)
      return Support::no(op + " " + st.what + " stride " + to_string(st.value) + " is negative");
    if (st.value % vector_elements != 0)
      return Support::no(op + " " + st.what + " stride " + to_string(st.value) + " is not a multiple of " +
                         to_string(vector_elements) + " " + (w.dtype == DType::Fp32 ? "floats" : "elements") +
                         " (the kernels load and store 16-byte vectors)");
  }
  if (rows > 1 && s.row > INT_MAX)
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
  if (w.kv_group < 1) return Support::no("kv_group=" + to_string(w.kv_group) + " must be >= 1");
  if (heads % w.kv_group != 0)
    return Support::no("query heads=" + to_string(heads) + " are not a multiple of kv_group=" + to_string(w.kv_group) +
                       " (Hq = Hkv x kv_group)");
  const long long batch = w.B / heads, kv_heads = heads / w.kv_group;
  const struct {
    const char* name;
    const void* ptr;
    const OperandStrides& s;
    long long heads, rows;
  } ops[] = {{"q", t.q, t.strides.q, heads, w.N},
             {"k", t.k, t.strides.k, kv_heads, w.keys()},
             {"v", t.v, t.strides.v, kv_heads, w.keys()},
             {"o", t.o, t.strides.o, heads, w.N}};
  for (const auto& op : ops)
    if (Support s = check_operand(op.name, op.ptr, op.s, w, batch, op.heads, op.rows); !s) return s;
  // One offset addresses an entry's K and V in every kernel (kernels/attention_params.cuh: Entry).
  const OperandStrides &ks = t.strides.k, &vs = t.strides.v;
  if (batch > 1 && ks.batch != vs.batch)
    return Support::no("k and v batch strides differ (" + to_string(ks.batch) + " and " + to_string(vs.batch) +
                       "): the kernels address an entry's K and V with one offset");
  if (kv_heads > 1 && ks.head != vs.head)
    return Support::no("k and v head strides differ (" + to_string(ks.head) + " and " + to_string(vs.head) +
                       "): the kernels address an entry's K and V with one offset");
  // Rows of O written by different blocks must not share addresses.
  if (w.N > 1 && t.strides.o.row < w.d)
    return Support::no("o row stride " + to_string(t.strides.o.row) + " is below d=" + to_string(w.d) +
                       ": output rows would overlap");
  return Support::yes();
}

}  // namespace flashtune
