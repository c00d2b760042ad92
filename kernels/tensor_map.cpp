#include "kernels/tensor_map.h"

#include <algorithm>

#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <string>

namespace flashtune::kernels {

namespace {

// The driver's encoder, looked up once (ABI of CUDA 12.0, the first with tensor maps).
PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      f = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

constexpr long long kTmaStrideLimitBytes = 1LL << 40;

}  // namespace

Support encode_operand_map(CUtensorMap& map, const char* name, const void* ptr, const OperandStrides& s, long long batches,
                           long long heads, long long rows, const Workload& w, int box_rows) {
  using std::to_string;
  const std::string op = name;
  const long long e = w.element_bytes();
  if (reinterpret_cast<std::uintptr_t>(ptr) % 16 != 0) return Support::no(op + " is not 16-byte aligned (TMA)");
  // A stride that never multiplies a non-zero index is replaced by a harmless one (TMA checks it
  // all the same).
  const struct {
    const char* what;
    long long elements;
    bool used;
  } strides[] = {{"row", s.row, rows > 1}, {"head", s.head, heads > 1}, {"batch", s.batch, batches > 1}};
  cuuint64_t bytes[3];
  for (int i = 0; i < 3; ++i) {
    const long long b = strides[i].used ? strides[i].elements * e : 16;
    if (strides[i].used && (b <= 0 || b % 16 != 0 || b >= kTmaStrideLimitBytes))
      return Support::no(op + " " + strides[i].what + " stride " + to_string(strides[i].elements) +
                         " elements cannot be addressed by TMA (needs a positive multiple of 16 bytes below 2^40)");
    bytes[i] = static_cast<cuuint64_t>(b);
  }
  const PFN_cuTensorMapEncodeTiled_v12000 encode = encoder();
  if (!encode) return Support::no("cuTensorMapEncodeTiled is not available from the CUDA driver (TMA needs CUDA 12+)");
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(w.d), static_cast<cuuint64_t>(rows),
                              static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(batches)};
  // One swizzled row per box: 128 bytes (64 16-bit or 32 fp32 columns), or the whole row where it is
  // shorter (16-bit d = 32: 64 bytes in the 64-byte swizzle; traits: Wgmma16::swizzle_bytes).
  const long long row_bytes = std::min<long long>(128, w.d * e);
  if (row_bytes != 128 && row_bytes != 64)
    return Support::no(op + " rows of " + to_string(w.d) + " elements (" + to_string(row_bytes) +
                       " bytes) fit no TMA swizzle the kernels lay out (64 or 128 bytes)");
  const cuuint32_t box[4] = {static_cast<cuuint32_t>(row_bytes / e), static_cast<cuuint32_t>(box_rows), 1, 1};
  const CUtensorMapSwizzle swizzle = row_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
  const CUtensorMapDataType type = w.dtype == DType::Bf16   ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                   : w.dtype == DType::Fp16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                            : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  const CUresult r = encode(&map, type, 4, const_cast<void*>(ptr), dims, bytes, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return Support::no(op + ": cuTensorMapEncodeTiled refused the operand (CUresult " + to_string(static_cast<int>(r)) +
                       "; d=" + to_string(w.d) + ", rows=" + to_string(rows) + ", strides " + to_string(s.batch) + "/" +
                       to_string(s.head) + "/" + to_string(s.row) + ")");
  return Support::yes();
}

Support encode_attention_maps(CUtensorMap& q, CUtensorMap& k, CUtensorMap& v, CUtensorMap& o, const AttentionTensors& t,
                              const Workload& w, int q_box_rows, int kv_box_rows) {
  const long long heads = t.strides.heads, batches = w.B / heads, kv_heads = heads / w.kv_group;
  if (Support s = encode_operand_map(q, "q", t.q, t.strides.q, batches, heads, w.N, w, q_box_rows); !s) return s;
  if (Support s = encode_operand_map(k, "k", t.k, t.strides.k, batches, kv_heads, w.keys(), w, kv_box_rows); !s) return s;
  if (Support s = encode_operand_map(v, "v", t.v, t.strides.v, batches, kv_heads, w.keys(), w, kv_box_rows); !s) return s;
  return encode_operand_map(o, "o", t.o, t.strides.o, batches, heads, w.N, w, q_box_rows);
}

}  // namespace flashtune::kernels
