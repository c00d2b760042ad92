// What the kernel families' device tests share: their environment switches, the instances of a
// family, the worst error per dtype and its report, the sweep every 16-bit instance passes against
// the double reference on rounded inputs, and the L2-flushed median of a launch.
//
// Environment: FLASHTUNE_KERNEL_FILTER=<substring> limits the configs; FLASHTUNE_TEST_QUICK=1 runs
// one small workload per config; FLASHTUNE_TEST_REPORT=<file.json> receives the worst errors.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "gpu_test_support.h"
#include "half_operands.h"
#include "kernels/reference.h"
#include "kernels/registry.h"
#include "kernels/traits/variants.h"

// No usable CUDA device: skip, saying why.
#define SKIP_WITHOUT_DEVICE()                                                      \
  do {                                                                             \
    const std::string why_ = ::flashtune::testing_support::no_gpu_reason();        \
    if (!why_.empty()) GTEST_SKIP() << "no CUDA device: " << why_;                 \
  } while (0)

// No device, or one without wgmma (below sm_90): skip, saying which; `family` names what needs it.
#define SKIP_WITHOUT_SM90(family)                                                                    \
  do {                                                                                               \
    SKIP_WITHOUT_DEVICE();                                                                           \
    const ::flashtune::DeviceLimits d_ = ::flashtune::DeviceLimits::query(0);                        \
    if (d_.cc_major * 10 + d_.cc_minor < ::flashtune::kWgmmaMinComputeCapability)                    \
      GTEST_SKIP() << family << " needs sm_90a; " << d_.name << " is " << d_.cc_major << "." << d_.cc_minor; \
  } while (0)

namespace flashtune::testing_support {

// An environment switch: its value, or nullptr where it is unset or empty.
inline const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// The compiled instances `keep` accepts, limited to the names that hold FLASHTUNE_KERNEL_FILTER.
template <class Keep>
std::vector<const KernelInstance*> instances_where(Keep keep) {
  const char* filter = env("FLASHTUNE_KERNEL_FILTER");
  std::vector<const KernelInstance*> out;
  for (const KernelInstance* k : kernel_registry())
    if (keep(k->config()) && (!filter || k->name().find(filter) != std::string::npos)) out.push_back(k);
  return out;
}
inline std::vector<const KernelInstance*> instances_of(Variant v) {
  return instances_where([v](const TileConfig& c) { return c.variant == v; });
}

inline std::string describe(const Workload& w, float amp_q) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "B=%lld N=%lld d=%d causal=%d %s q in [-%g, %g]", w.B, w.N, w.d, int(w.causal),
                dtype_name(w.dtype), double(amp_q), double(amp_q));
  return buf;
}

// The worst of a dtype's checks: the largest relative L2 error (infinite where an output was not
// finite), where it was, the largest absolute error anywhere, and how many checks ran.
struct WorstError {
  double rel_l2 = 0, max_abs = 0;
  std::string where;
  long long checks = 0;
  void record(const ErrorStats& e, const std::string& at) {
    ++checks;
    if (e.rel_l2 >= rel_l2 || e.nonfinite > 0) {
      rel_l2 = e.nonfinite > 0 ? INFINITY : e.rel_l2;
      where = at;
    }
    max_abs = std::max(max_abs, e.max_abs);
  }
};
using WorstByDtype = std::map<std::string, WorstError>;  // by dtype_name

// One line per dtype ("worst rel L2 <family> <dtype> ..."), and the same with the dtype's tolerance
// into FLASHTUNE_TEST_REPORT when it is set.
inline void report_worst(const char* family, const WorstByDtype& worst, const DeviceLimits& dev) {
  nlohmann::json report;
  report["device"] = dev.name;
  for (const auto& [dt, wv] : worst) {
    const double tolerance = rel_l2_tolerance(*parse_dtype(dt));
    std::printf("worst rel L2 %s %-5s %.3e  (max abs %.3e, %lld checks; tolerance %.0e) at %s\n", family, dt.c_str(),
                wv.rel_l2, wv.max_abs, wv.checks, tolerance, wv.where.c_str());
    report["worst"][dt] = {{"rel_l2", wv.rel_l2}, {"max_abs", wv.max_abs}, {"checks", wv.checks}, {"where", wv.where}};
    report["tolerance_rel_l2"][dt] = tolerance;
  }
  if (const char* path = env("FLASHTUNE_TEST_REPORT")) std::ofstream(path) << report.dump(2) << "\n";
}

// A workload's 16-bit Q, K and V on the device (the bits the kernel reads) and the double
// reference computed on the same rounded values (their exact floats), in O's [B, N, d] order. K and
// V hold B / kv_group entries of keys() rows. load() asserts (the caller checks HasFatalFailure).
struct HalfInputsOnDevice {
  DeviceArray<uint16_t> q, k, v;
  std::vector<double> reference;
  HalfInputsOnDevice(std::size_t nq, std::size_t nkv) : q(nq), k(nkv), v(nkv) {}
  void load(const Workload& w, const HalfOperand& hq, const HalfOperand& hk, const HalfOperand& hv) {
    const std::size_t nq = hq.bits.size(), nkv = hk.bits.size();
    DeviceArray<float> qf(nq), kf(nkv), vf(nkv);
    DeviceArray<double> ref_d(nq);
    ASSERT_TRUE(q.ptr && k.ptr && v.ptr && qf.ptr && kf.ptr && vf.ptr && ref_d.ptr);
    CUDA_OK(cudaMemcpy(qf.ptr, hq.exact.data(), nq * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(kf.ptr, hk.exact.data(), nkv * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(vf.ptr, hv.exact.data(), nkv * 4, cudaMemcpyHostToDevice));
    Workload wr = w;
    wr.dtype = DType::Fp32;
    CUDA_OK(attention_reference_gpu(qf.ptr, kf.ptr, vf.ptr, ref_d.ptr, wr, nullptr));
    reference.resize(nq);
    CUDA_OK(cudaMemcpy(reference.data(), ref_d.ptr, nq * 8, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(q.ptr, hq.bits.data(), nq * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(k.ptr, hk.bits.data(), nkv * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(v.ptr, hv.bits.data(), nkv * 2, cudaMemcpyHostToDevice));
  }
};

// Every 16-bit instance of `kernels` (bf16 and fp16; each d they hold) against the double reference
// computed on the inputs rounded to its dtype: fresh random inputs, O poisoned with NaN first, every
// element compared, rel L2 under rel_l2_tolerance(dtype). Odd N (1, 17, 1000, 2049: no multiple of
// any tile) and 512 (a multiple of every tile), causal or not, and q of amplitude 15 against k of 3,
// whose scores reach past +-50 (no inf or NaN allowed, fp16's P and O included). FLASHTUNE_TEST_QUICK:
// one small shape. The worst per dtype into `worst`; asserts (so the caller checks HasFatalFailure).
inline void check_every_half_instance(const std::vector<const KernelInstance*>& kernels, std::mt19937& rng,
                                      WorstByDtype& worst) {
  const DeviceLimits dev = DeviceLimits::query(0);
  const bool quick = env("FLASHTUNE_TEST_QUICK") != nullptr;
  struct Shape {
    long long B, N;
  };
  const std::vector<Shape> shapes =
      quick ? std::vector<Shape>{{2, 77}} : std::vector<Shape>{{3, 1}, {3, 17}, {2, 512}, {2, 1000}, {1, 2049}};
  std::set<int> dims;
  for (const KernelInstance* k : kernels) dims.insert(k->config().d);
  for (DType t : {DType::Bf16, DType::Fp16})
    for (int d : dims) {
      std::vector<const KernelInstance*> ks;
      for (const KernelInstance* k : kernels)
        if (k->config().d == d && k->config().dtype == t) ks.push_back(k);
      if (ks.empty()) continue;
      for (const Shape& shape : shapes)
        for (bool causal : {false, true})
          for (float amp : {3.0f, 15.0f}) {
            if (quick && amp > 3.0f) continue;
            Workload w;
            w.B = shape.B;
            w.N = shape.N;
            w.d = d;
            w.causal = causal;
            w.dtype = t;
            const std::size_t n = static_cast<std::size_t>(w.B * w.N * d);
            const HalfOperand q = random_half_operand(n, amp, t, rng), k = random_half_operand(n, 3.0f, t, rng),
                              v = random_half_operand(n, 3.0f, t, rng);
            HalfInputsOnDevice in(n, n);
            in.load(w, q, k, v);
            if (::testing::Test::HasFatalFailure()) return;
            DeviceArray<uint16_t> ob(n);
            ASSERT_TRUE(ob.ptr);
            std::vector<uint16_t> out_bits(n);
            std::vector<float> out(n);
            for (const KernelInstance* kern : ks) {
              const std::string where = kern->name() + " " + describe(w, amp);
              const Support s = kern->can_implement(w, dev);
              if (const char* why = workload_refusal(kern->config(), w)) {  // the /pe grid under causal
                EXPECT_FALSE(s) << where << " serves a workload its traits refuse: " << why;
                continue;
              }
              ASSERT_TRUE(s) << where << ": " << s.reason;
              CUDA_OK(cudaMemset(ob.ptr, 0xFF, n * 2));  // NaN in both dtypes
              CUDA_OK(kern->launch(in.q.ptr, in.k.ptr, in.v.ptr, ob.ptr, w, nullptr));
              CUDA_OK(cudaDeviceSynchronize());
              CUDA_OK(cudaMemcpy(out_bits.data(), ob.ptr, n * 2, cudaMemcpyDeviceToHost));
              for (std::size_t i = 0; i < n; ++i) out[i] = from_bits(out_bits[i], t);
              const ErrorStats e = compare_to_reference(out.data(), in.reference.data(), n);
              EXPECT_TRUE(e.passes(rel_l2_tolerance(t)))
                  << where << ": rel_l2 " << e.rel_l2 << " max_abs " << e.max_abs << " non-finite " << e.nonfinite;
              worst[dtype_name(t)].record(e, where);
            }
          }
    }
}

// Each 16-bit instance of `kernels` on [batch, N, heads, d] views (heads = 3) with O in a buffer
// whose rows have 8 elements of gap, N 77 and 300, causal or not: bit for bit its packed [B, N, d]
// launch, and nothing written outside O's rows (poisoned with NaN first). Asserts.
inline void check_strided_half_launches(const std::vector<const KernelInstance*>& kernels) {
  const DeviceLimits dev = DeviceLimits::query(0);
  std::mt19937 rng(5);
  const long long batch = 2, heads = 3;
  long long compared = 0;
  for (const KernelInstance* kern : kernels)
    for (long long N : {77LL, 300LL})
      for (bool causal : {false, true}) {
        const TileConfig& c = kern->config();
        const int d = c.d;
        Workload w;
        w.B = batch * heads;
        w.N = N;
        w.d = d;
        w.causal = causal;
        w.dtype = c.dtype;
        const std::size_t one = static_cast<std::size_t>(w.B * N * d);
        const HalfOperand q = random_half_operand(one, 3.0f, c.dtype, rng), k = random_half_operand(one, 3.0f, c.dtype, rng),
                          v = random_half_operand(one, 3.0f, c.dtype, rng);
        const OperandStrides bnhd{N * heads * d, d, heads * d};
        const OperandStrides o_strided{N * heads * (d + 8), d + 8, heads * (d + 8)};
        const std::size_t o_elems = static_cast<std::size_t>(batch * N * heads * (d + 8));
        std::vector<uint16_t> qs(one), ks(one), vs(one);
        for (long long b = 0; b < batch; ++b)
          for (long long h = 0; h < heads; ++h)
            for (long long r = 0; r < N; ++r)
              for (int col = 0; col < d; ++col) {
                const std::size_t src = static_cast<std::size_t>(((b * heads + h) * N + r) * d + col);
                const std::size_t dst = static_cast<std::size_t>(b * bnhd.batch + h * bnhd.head + r * bnhd.row + col);
                qs[dst] = q.bits[src];
                ks[dst] = k.bits[src];
                vs[dst] = v.bits[src];
              }
        DeviceArray<uint16_t> pq(one), pk(one), pv(one), po(one), sq(one), sk(one), sv(one), so(o_elems);
        ASSERT_TRUE(pq.ptr && pk.ptr && pv.ptr && po.ptr && sq.ptr && sk.ptr && sv.ptr && so.ptr);
        CUDA_OK(cudaMemcpy(pq.ptr, q.bits.data(), one * 2, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(pk.ptr, k.bits.data(), one * 2, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(pv.ptr, v.bits.data(), one * 2, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(sq.ptr, qs.data(), one * 2, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(sk.ptr, ks.data(), one * 2, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(sv.ptr, vs.data(), one * 2, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemset(so.ptr, 0xFF, o_elems * 2));
        AttentionTensors t{sq.ptr, sk.ptr, sv.ptr, so.ptr, AttentionStrides::uniform(heads, bnhd)};
        t.strides.o = o_strided;
        const std::string where = kern->name() + " N=" + std::to_string(N) + (causal ? " causal" : "");
        if (const char* why = workload_refusal(c, w)) {  // the /pe grid under causal
          EXPECT_FALSE(kern->can_implement(w, dev)) << where << " serves a workload its traits refuse: " << why;
          continue;
        }
        ASSERT_TRUE(kern->can_address(t, w)) << where << ": " << kern->can_address(t, w).reason;
        ASSERT_TRUE(kern->can_implement(w, dev)) << where;
        CUDA_OK(kern->launch(pq.ptr, pk.ptr, pv.ptr, po.ptr, w, nullptr));
        CUDA_OK(kern->launch(t, w, nullptr));
        CUDA_OK(cudaDeviceSynchronize());
        std::vector<uint16_t> packed(one), strided(o_elems);
        CUDA_OK(cudaMemcpy(packed.data(), po.ptr, one * 2, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(strided.data(), so.ptr, o_elems * 2, cudaMemcpyDeviceToHost));
        std::vector<char> is_row(o_elems, 0);
        long long mismatches = 0, gap_writes = 0;
        for (long long b = 0; b < batch; ++b)
          for (long long h = 0; h < heads; ++h)
            for (long long r = 0; r < N; ++r)
              for (int col = 0; col < d; ++col) {
                const std::size_t i =
                    static_cast<std::size_t>(b * o_strided.batch + h * o_strided.head + r * o_strided.row + col);
                is_row[i] = 1;
                mismatches += strided[i] != packed[static_cast<std::size_t>(((b * heads + h) * N + r) * d + col)];
              }
        for (std::size_t i = 0; i < o_elems; ++i) gap_writes += !is_row[i] && strided[i] != 0xFFFFu;
        EXPECT_EQ(mismatches, 0) << where << ": elements differing from the packed launch";
        EXPECT_EQ(gap_writes, 0) << where << ": elements written outside O's rows";
        ++compared;
      }
  EXPECT_GT(compared, 0);
}

// The seed cases' timing: a launch's median of 15 after 3 warm-ups, the L2 flushed (256 MB written)
// before each, between CUDA events.
class L2FlushedTimer {
 public:
  L2FlushedTimer() : flush_(kFlushBytes) {
    cudaEventCreate(&start_);
    cudaEventCreate(&stop_);
  }
  ~L2FlushedTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  L2FlushedTimer(const L2FlushedTimer&) = delete;
  L2FlushedTimer& operator=(const L2FlushedTimer&) = delete;
  bool ready() const { return flush_.ptr != nullptr && start_ != nullptr && stop_ != nullptr; }

  // `launch` returns the launch's cudaError_t; the median into `median_ms` (asserts).
  template <class Launch>
  void median_ms(Launch launch, double& median_ms) {
    for (int i = 0; i < 3; ++i) CUDA_OK(launch());
    std::vector<float> ms;
    for (int i = 0; i < 15; ++i) {
      CUDA_OK(cudaMemsetAsync(flush_.ptr, i, kFlushBytes));
      CUDA_OK(cudaEventRecord(start_));
      CUDA_OK(launch());
      CUDA_OK(cudaEventRecord(stop_));
      CUDA_OK(cudaEventSynchronize(stop_));
      float t = 0;
      CUDA_OK(cudaEventElapsedTime(&t, start_, stop_));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    median_ms = ms[ms.size() / 2];
  }

 private:
  static constexpr std::size_t kFlushBytes = 256u << 20;
  DeviceArray<char> flush_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace flashtune::testing_support
