// The registry instance of a decode config: can_implement, the launch of the split kernel and
// (splits > 1) the combine kernel over a workspace from this library's stream-ordered pool.
// Included by the decode instance files (kernels/CMakeLists.txt) before kernel_instance.cuh's
// InstanceFile::add is instantiated, so InstanceOf below picks this class for traits::Decode.
#pragma once

#include <climits>
#include <cstdint>
#include <mutex>
#include <string>

#include "kernels/decode.cuh"
#include "kernels/decode_api.h"
#include "kernels/kernel_instance.cuh"
#include "kernels/support_checks.h"

namespace flashtune::kernels {

// The workspace pool: one per device, never trimmed (a decode launch reuses the last one's bytes
// instead of mapping fresh memory, which would stall the stream behind a host call).
cudaMemPool_t decode_workspace_pool(int device);
// A fresh id per launch that combines in the split kernel (48 bits, never 0): tags its tickets.
unsigned long long decode_launch_id();

template <int D, int BR, int BC, int DT, int STAGES>
class DecodeKernelInstance final : public KernelInstance, public DecodeKernel {
 public:
  using Tr = traits::Decode;
  using Tile = Tr::Tile<D, BR, BC, DT, STAGES>;
  using SplitFn = void (*)(DecodeParams);

  explicit DecodeKernelInstance(SplitFn split) : split_(split) {}

  const TileConfig& config() const override { return config_; }

  Support can_run(const DecodeProblem& p, const DeviceLimits& dev) const override {
    using std::to_string;
    const std::string n = config_.name();
    if (p.d != D) return Support::no("config is for d=" + to_string(D) + ", workload has d=" + to_string(p.d));
    if (p.dtype != config_.dtype)
      return Support::no(std::string("config is for ") + dtype_name(config_.dtype) + " operands, workload is " +
                         dtype_name(p.dtype));
    if (p.batch < 1 || p.q_heads < 1 || p.nq < 1 || p.keys < 1)
      return Support::no("batch, heads, N and kv_len must be >= 1");
    if (p.nq > Tr::kMaxQueryRows)
      return Support::no("decode serves N <= " + to_string(Tr::kMaxQueryRows) + " query rows per head (got N=" +
                         to_string(p.nq) + "): the tiled families serve longer queries");
    if (p.kv_group < 1 || p.q_heads % p.kv_group != 0)
      return Support::no("query heads " + to_string(p.q_heads) + " are not a multiple of kv_group " +
                         to_string(p.kv_group));
    if (p.keys > INT_MAX - BC) return Support::no("kv_len=" + to_string(p.keys) + " is above the kernel's limit");
    if (p.causal && p.nq > p.keys)
      return Support::no("causal with N=" + to_string(p.nq) + " above kv_len=" + to_string(p.keys) +
                         ": bottom-right alignment would leave the first query rows no key");
    const Tr::Shape s = Tr::shape(config_, p.batch, p.q_heads, p.kv_group, p.nq, p.keys, 1);
    if (s.kv_entries > traits::kMaxGridY)
      return Support::no("batch x K/V heads = " + to_string(s.kv_entries) + " is above the grid's limit " +
                         to_string(traits::kMaxGridY));
    if (Tile::kSmemBytes > dev.smem_per_block_optin)
      return Support::no("needs " + to_string(Tile::kSmemBytes) + " B of shared memory, device allows " +
                         to_string(dev.smem_per_block_optin) + " B");
    if (p.strides.heads != p.q_heads) return Support::no("strides.heads must be the query heads");
    return Support::yes();
  }

  Support can_implement(const Workload& w, const DeviceLimits& dev) const override {
    if (Support s = check_inference_shape(w); !s) return s;
    if (w.B < 1) return Support::no("B must be >= 1 (got " + std::to_string(w.B) + ")");
    // The heads are the caller's strides' business; one head per entry stands for any here.
    DecodeProblem p;
    p.q_heads = w.kv_group;
    p.strides.heads = w.kv_group;
    p.batch = w.B / w.kv_group > 0 ? w.B / w.kv_group : 1;
    p.kv_group = w.kv_group;
    p.nq = w.N;
    p.keys = w.keys();
    p.d = w.d;
    p.causal = w.causal;
    p.dtype = w.dtype;
    if (w.B % w.kv_group != 0)
      return Support::no("B=" + std::to_string(w.B) + " is not a multiple of kv_group=" + std::to_string(w.kv_group));
    return can_run(p, dev);
  }

  using KernelInstance::launch;
  cudaError_t launch(const AttentionTensors& t, const Workload& w, cudaStream_t stream) const override {
    if (!check_inference_shape(w) || !check_tensors(t, w)) return cudaErrorInvalidValue;
    return launch_decode(decode_problem(t, w), 0, stream);
  }

  int default_splits(const DecodeProblem& p, const DeviceLimits& dev) const override {
    return Tr::default_splits(config_, p.batch, p.q_heads, p.kv_group, p.nq, p.keys, dev.sm_count);
  }

  cudaError_t launch_decode(const DecodeProblem& p, int splits, cudaStream_t stream) const override {
    int device = 0;
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
    if (p.d != D || p.dtype != config_.dtype || p.batch < 1 || p.q_heads < 1 || p.nq < 1 ||
        p.nq > Tr::kMaxQueryRows || p.keys < 1 || p.keys > INT_MAX - BC || p.kv_group < 1 ||
        p.q_heads % p.kv_group != 0 || p.strides.heads != p.q_heads || (p.causal && p.nq > p.keys))
      return cudaErrorInvalidValue;
    if (splits <= 0) {
      DeviceLimits dev;
      if (cudaDeviceGetAttribute(&dev.sm_count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
        return cudaErrorInvalidDevice;
      splits = default_splits(p, dev);
    }
    const Tr::Shape s = Tr::shape(config_, p.batch, p.q_heads, p.kv_group, p.nq, p.keys, splits);
    if (s.kv_entries > traits::kMaxGridY || static_cast<long long>(s.row_tiles) * s.splits > traits::kMaxGridX)
      return cudaErrorInvalidConfiguration;
    if (Tile::kSmemBytes > 48 * 1024) {
      const cudaError_t e = cudaFuncSetAttribute(reinterpret_cast<const void*>(split_),
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize, Tile::kSmemBytes);
      if (e != cudaSuccess) return e;
    }
    const AttentionStrides& st = p.strides;
    DecodeParams dp{p.q,
                    p.k,
                    p.v,
                    p.o,
                    device_strides(st.q),
                    device_strides(st.k),
                    device_strides(st.v),
                    device_strides(st.o),
                    s.kv_entries,
                    p.q_heads / p.kv_group,
                    p.kv_group,
                    static_cast<int>(p.nq),
                    static_cast<int>(p.keys),
                    p.causal ? 1 : 0,
                    static_cast<int>(p.keys - p.nq),
                    p.effective_scale() * 1.4426950408889634f,
                    s.rows,
                    s.row_tiles,
                    s.splits,
                    static_cast<int>(s.chunk_tiles),
                    nullptr,
                    nullptr,
                    0,
                    0};
    if (const int forced = decode_flags(); forced >= 0) {
      dp.flags = forced;
    } else {
      int l2 = 0;
      if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess) return cudaErrorInvalidDevice;
      dp.flags = decode_streams_evict_first(p, l2) ? kDecodeEvictFirst : 0;
    }
    // The cluster combine unless forced flags leave it out (FLASHTUNE_DECODE_FLAGS, experiments).
    const bool cluster = ((dp.flags & kDecodeClusterCombine) != 0 || decode_flags() < 0) && clusters_fit(device, s);
    dp.flags = cluster ? (dp.flags | kDecodeClusterCombine) & ~kDecodeFusedCombine : dp.flags & ~kDecodeClusterCombine;
    const long long work_floats = cluster ? 0 : Tr::workspace_floats(config_, s);
    void* w = nullptr;
    if (work_floats > 0) {
      // The tickets (8-byte words) first, then the partials.
      const long long tickets = (dp.flags & kDecodeFusedCombine) ? s.kv_entries * s.row_tiles : 0;
      if (cudaError_t e = cudaMallocFromPoolAsync(&w, static_cast<std::size_t>(tickets * 8 + work_floats * 4),
                                                  decode_workspace_pool(device), stream);
          e != cudaSuccess)
        return e;
      dp.tickets = tickets > 0 ? static_cast<unsigned long long*>(w) : nullptr;
      dp.ticket_id = tickets > 0 ? decode_launch_id() : 0;
      dp.work = reinterpret_cast<float*>(static_cast<char*>(w) + tickets * 8);
    }
    const dim3 grid(static_cast<unsigned>(s.row_tiles * s.splits), static_cast<unsigned>(s.kv_entries));
    void* args[] = {&dp};
    cudaError_t e = cudaSuccess;
    if (cluster) {
      cudaLaunchConfig_t cfg = cluster_launch(s, stream);
      cudaLaunchAttribute attr = cluster_attribute(s.splits);
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      e = cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(split_), args);
    } else {
      e = cudaLaunchKernel(reinterpret_cast<const void*>(split_), grid, dim3(Tr::kThreads), args,
                           static_cast<std::size_t>(Tile::kSmemBytes), stream);
    }
    if (e == cudaSuccess && dp.work && !dp.tickets && !(dp.flags & kDecodeSkipCombineToTimeIt)) {
      const long long warps = combine_warps<D>(s.kv_entries, s.rows);
      // A programmatic dependent launch: the combine's blocks are scheduled while the split
      // kernel runs and wait for it in the kernel (griddepcontrol.wait), which takes its launch
      // latency off the call's time.
      cudaLaunchConfig_t cfg{};
      cfg.gridDim = dim3(static_cast<unsigned>((warps + kCombineWarps - 1) / kCombineWarps));
      cfg.blockDim = dim3(32 * kCombineWarps);
      cfg.dynamicSmemBytes = 0;
      cfg.stream = stream;
      cudaLaunchAttribute attr{};
      attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr.val.programmaticStreamSerializationAllowed = 1;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      e = cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(&decode_combine_kernel<D, BR, DT>), args);
    }
    if (w) {
      const cudaError_t f = cudaFreeAsync(w, stream);
      if (e == cudaSuccess) e = f;
    }
    return e;
  }

  int clusters_at_once(int cluster_blocks) const override {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return 0;
    return static_cast<int>(cluster_capacity(device, cluster_blocks));
  }

  bool combines_in_cluster(const DecodeProblem& p, int splits) const override {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || (decode_flags() >= 0 && !(decode_flags() & kDecodeClusterCombine)))
      return false;
    if (splits <= 0) {
      DeviceLimits dev;
      if (cudaDeviceGetAttribute(&dev.sm_count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return false;
      splits = default_splits(p, dev);
    }
    return clusters_fit(device, Tr::shape(config_, p.batch, p.q_heads, p.kv_group, p.nq, p.keys, splits));
  }

  KernelResources resources() const override {
    return kernel_resources(reinterpret_cast<const void*>(split_), Tile::kSmemBytes, Tr::kThreads);
  }

 private:
  cudaLaunchConfig_t cluster_launch(const Tr::Shape& s, cudaStream_t stream) const {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(static_cast<unsigned>(s.row_tiles * s.splits), static_cast<unsigned>(s.kv_entries));
    cfg.blockDim = dim3(Tr::kThreads);
    cfg.dynamicSmemBytes = static_cast<std::size_t>(Tile::kSmemBytes);
    cfg.stream = stream;
    return cfg;
  }
  static cudaLaunchAttribute cluster_attribute(int splits) {
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = static_cast<unsigned>(splits);
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    return attr;
  }

  // Whether the splits of this launch merge in a cluster: this kernel running from sm_90 code (the
  // cluster path is compiled for nothing older), then traits::Decode::cluster_combine (one block per
  // SM, at most half the SMs, enough clusters at once) on what this device answers: its blocks per
  // SM and its cudaOccupancyMaxActiveClusters for `splits` blocks, asked once per (device, splits).
  bool clusters_fit(int device, const Tr::Shape& s) const {
    const long long capacity = cluster_capacity(device, s.splits);
    return capacity > 0 &&
           Tr::cluster_combine(cc_[device], s.splits, per_sm_[device], s.blocks, sms_[device], capacity);
  }
  // Clusters of `splits` blocks this kernel runs at once on `device`; 0 where none (or no cluster
  // path). Asked of the runtime once per (device, splits); the device's figures beside it.
  long long cluster_capacity(int device, int splits) const {
    if (splits < 2 || splits > Tr::kMaxClusterSplits || device < 0 || device >= kMaxDevices) return 0;
    std::lock_guard<std::mutex> lock(cluster_mutex_);
    int& known = cluster_fit_[device][splits];
    if (known == 0) known = query_cluster_capacity(device, splits) ? 1 : -1;
    return known > 0 ? cluster_capacity_[device][splits] : 0;
  }
  bool query_cluster_capacity(int device, int splits) const {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return false;
    cudaFuncAttributes fa{};
    if (cudaFuncGetAttributes(&fa, reinterpret_cast<const void*>(split_)) != cudaSuccess) return false;
    if (major < 9 || fa.ptxVersion < 90 || fa.binaryVersion < 90) return false;
    const void* f = reinterpret_cast<const void*>(split_);
    if (Tile::kSmemBytes > 48 * 1024 &&
        cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, Tile::kSmemBytes) != cudaSuccess)
      return false;
    if (splits > 8 && cudaFuncSetAttribute(f, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    int sms = 0, per_sm = 0, clusters = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, Tr::kThreads, Tile::kSmemBytes) != cudaSuccess)
      return false;
    Tr::Shape one{};  // one cluster: the grid's size does not enter the answer
    one.splits = splits;
    one.row_tiles = 1;
    one.kv_entries = 1;
    cudaLaunchConfig_t cfg = cluster_launch(one, nullptr);
    cudaLaunchAttribute attr = cluster_attribute(splits);
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    if (cudaOccupancyMaxActiveClusters(&clusters, f, &cfg) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    cluster_capacity_[device][splits] = clusters;
    cc_[device] = 10 * major;
    sms_[device] = sms;
    per_sm_[device] = per_sm;
    return clusters > 0;
  }

  static constexpr int kMaxDevices = 16;
  TileConfig config_ = Tile::kConfig;
  SplitFn split_;
  mutable std::mutex cluster_mutex_;
  mutable int cluster_fit_[kMaxDevices][Tr::kMaxClusterSplits + 1] = {};           // 0 unknown, 1 yes, -1 never
  mutable long long cluster_capacity_[kMaxDevices][Tr::kMaxClusterSplits + 1] = {};  // clusters at a time
  mutable int cc_[kMaxDevices] = {}, per_sm_[kMaxDevices] = {};                       // 90 for 9.0; blocks per SM
  mutable long long sms_[kMaxDevices] = {};
};

template <int D, int BR, int BC, Layout L, int DT, int STAGES, int QSMEM>
struct InstanceOf<traits::Decode, D, BR, BC, L, DT, STAGES, QSMEM> {
  using type = DecodeKernelInstance<D, BR, BC, DT, STAGES>;
};

}  // namespace flashtune::kernels
