#include "tuner/cupti_profiler.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <utility>

#include "kernels/cuda_check.h"
#include "model/counter_check.h"  // the metric names the check reads (k...Metric)
#include "tuner/cupti_host.h"
#include "tuner/device_check.h"
#include "tuner/timing_harness.h"

namespace flashtune {
namespace {

// Room for a few ranges so that a launch that starts more than one kernel is reported as such
// (numTotalRanges > 1) instead of silently keeping only the first.
constexpr std::size_t kMaxRanges = 4;

// Makes `device` current for a scope and restores the caller's device afterwards, so that
// profiling device 1 does not move the caller's later work there.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    FLASHTUNE_CUDA_CHECK(cudaGetDevice(&previous_));
    FLASHTUNE_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceScope() { cudaSetDevice(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

// The current (primary) context, which the range profiler is enabled on. cuCtxGetCurrent is
// fetched through the runtime so that nothing links libcuda directly: the binaries then still
// start (and skip their GPU work) on machines without a driver.
CUcontext current_context() {
  using CtxGetCurrent = CUresult (*)(CUcontext*);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  FLASHTUNE_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || !fn) throw CudaError("cuCtxGetCurrent: not found in the driver");
  CUcontext ctx = nullptr;
  if (reinterpret_cast<CtxGetCurrent>(fn)(&ctx) != CUDA_SUCCESS || !ctx)
    throw CudaError("cuCtxGetCurrent: no current CUDA context");
  return ctx;
}

// Empty when CUPTI can profile `device`, else which part of the configuration prevents it.
std::optional<std::string> device_support_problem(int device) {
  auto p = cupti_params<CUpti_Profiler_DeviceSupported_Params>(CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE);
  p.cuDevice = device;
  p.api = CUPTI_PROFILER_RANGE_PROFILING;
  check_cupti(cuptiProfilerDeviceSupported(&p), "cuptiProfilerDeviceSupported");
  if (p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return std::nullopt;
  std::string why;
  const auto add = [&why](CUpti_Profiler_Support_Level level, const char* what) {
    if (level != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) why += (why.empty() ? "" : ", ") + std::string(what);
  };
  add(p.architecture, "architecture");
  add(p.sli, "SLI");
  add(p.vGpu, "vGPU");
  add(p.confidentialCompute, "confidential compute");
  add(p.cmp, "CMP device");
  add(p.wsl, "WSL");
  return "device " + std::to_string(device) + " not supported by the CUPTI range profiler (" +
         (why.empty() ? std::string("reason unknown") : why) + ")";
}

std::string chip_name(int device) {
  auto p = cupti_params<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
  p.deviceIndex = std::size_t(device);
  check_cupti(cuptiDeviceGetChipName(&p), "cuptiDeviceGetChipName");
  return p.pChipName;
}

// Which counters this device exposes now (the host API schedules passes with it).
std::vector<std::uint8_t> counter_availability(CUcontext ctx) {
  auto p = cupti_params<CUpti_Profiler_GetCounterAvailability_Params>(CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
  p.ctx = ctx;
  check_cupti(cuptiProfilerGetCounterAvailability(&p), "cuptiProfilerGetCounterAvailability(size)");
  std::vector<std::uint8_t> image(p.counterAvailabilityImageSize);
  p.pCounterAvailabilityImage = image.data();
  check_cupti(cuptiProfilerGetCounterAvailability(&p), "cuptiProfilerGetCounterAvailability");
  return image;
}

// The range profiler enabled on a context for one scope: Enable in the constructor, Disable in
// the destructor (after a Stop when a pass was left open by an exception), so the context carries
// no profiler state outside measure().
class RangeSession {
 public:
  explicit RangeSession(CUcontext ctx) {
    auto p = cupti_params<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
    p.ctx = ctx;
    check_cupti(cuptiRangeProfilerEnable(&p), "cuptiRangeProfilerEnable");
    object_ = p.pRangeProfilerObject;
  }
  ~RangeSession() {
    if (started_) stop();
    auto p = cupti_params<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = object_;
    cuptiRangeProfilerDisable(&p);
  }
  RangeSession(const RangeSession&) = delete;
  RangeSession& operator=(const RangeSession&) = delete;

  // A counter data image initialised for `metrics` and up to kMaxRanges ranges.
  std::vector<std::uint8_t> counter_data_image(const std::vector<std::string>& metrics) const {
    std::vector<const char*> names = c_strings(metrics);
    auto size = cupti_params<CUpti_RangeProfiler_GetCounterDataSize_Params>(CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
    size.pRangeProfilerObject = object_;
    size.pMetricNames = names.data();
    size.numMetrics = names.size();
    size.maxNumOfRanges = kMaxRanges;
    size.maxNumRangeTreeNodes = uint32_t(kMaxRanges);
    check_cupti(cuptiRangeProfilerGetCounterDataSize(&size), "cuptiRangeProfilerGetCounterDataSize");

    std::vector<std::uint8_t> image(size.counterDataSize);
    auto init = cupti_params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
    init.pRangeProfilerObject = object_;
    init.counterDataSize = image.size();
    init.pCounterData = image.data();
    check_cupti(cuptiRangeProfilerCounterDataImageInitialize(&init), "cuptiRangeProfilerCounterDataImageInitialize");
    return image;
  }

  // Auto range (each kernel is a range, so the flush before Start is not one) and user replay
  // (we run the passes ourselves, which lets before_pass() flush L2 ahead of each one; kernel
  // replay would replay inside CUPTI with no hook between passes).
  void set_config(const std::vector<std::uint8_t>& config, std::vector<std::uint8_t>& counter_data) {
    auto p = cupti_params<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = object_;
    p.configSize = config.size();
    p.pConfig = config.data();
    p.counterDataImageSize = counter_data.size();
    p.pCounterDataImage = counter_data.data();
    p.range = CUPTI_AutoRange;
    p.replayMode = CUPTI_UserReplay;
    p.maxRangesPerPass = kMaxRanges;
    p.numNestingLevels = 1;
    p.minNestingLevel = 1;
    p.passIndex = 0;
    p.targetNestingLevel = 1;
    check_cupti(cuptiRangeProfilerSetConfig(&p), "cuptiRangeProfilerSetConfig");
  }

  void start() {
    auto p = cupti_params<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = object_;
    check_cupti(cuptiRangeProfilerStart(&p), "cuptiRangeProfilerStart");
    started_ = true;
  }

  // Ends a pass; true when every pass the config needs has been submitted.
  bool stop() {
    started_ = false;
    auto p = cupti_params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = object_;
    check_cupti(cuptiRangeProfilerStop(&p), "cuptiRangeProfilerStop");
    return p.isAllPassSubmitted != 0;
  }

  // Moves the collected counters into the counter data image; returns the ranges dropped.
  std::size_t decode() {
    auto p = cupti_params<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = object_;
    check_cupti(cuptiRangeProfilerDecodeData(&p), "cuptiRangeProfilerDecodeData");
    return p.numOfRangeDropped;
  }

 private:
  CUpti_RangeProfiler_Object* object_ = nullptr;
  bool started_ = false;
};

std::size_t ranges_in(const std::vector<std::uint8_t>& counter_data) {
  auto p = cupti_params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
  p.pCounterDataImage = counter_data.data();
  p.counterDataImageSize = counter_data.size();
  check_cupti(cuptiRangeProfilerGetCounterDataInfo(&p), "cuptiRangeProfilerGetCounterDataInfo");
  return p.numTotalRanges;
}

}  // namespace

struct CuptiProfiler::Impl {
  int device = 0;
  std::vector<std::string> metrics;
  std::string reason;
  bool available = false;
  bool cupti_initialized = false;
  CUcontext ctx = nullptr;
  std::unique_ptr<CuptiHost> host;
  CuptiConfigImage config;

  ~Impl() { close(); }

  void close() {
    host.reset();
    if (cupti_initialized) {
      auto p = cupti_params<CUpti_Profiler_DeInitialize_Params>(CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE);
      cuptiProfilerDeInitialize(&p);
      cupti_initialized = false;
    }
  }

  void open() {
    if (metrics.empty()) throw CuptiError("no metrics requested");
    if (const auto why = cuda_device_problem(device)) throw CudaError("no CUDA device: " + *why);
    DeviceScope scope(device);
    FLASHTUNE_CUDA_CHECK(cudaFree(nullptr));
    ctx = current_context();

    auto init = cupti_params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
    check_cupti(cuptiProfilerInitialize(&init), "cuptiProfilerInitialize");
    cupti_initialized = true;
    if (const auto why = device_support_problem(device)) throw CuptiError(*why);

    host = std::make_unique<CuptiHost>(chip_name(device), counter_availability(ctx));
    try {
      metrics = metrics_for_chip(metrics, host->chip(), [&](const std::string& m) { return host->metric_problem(m); });
    } catch (const std::invalid_argument& e) {
      throw CuptiError(e.what());
    }
    config = host->config_image(metrics);

    // A trial enable: this is where missing permission (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) or
    // another profiler on the device shows, so available() is true only when measure() can work.
    RangeSession trial(ctx);
    trial.counter_data_image(metrics);
  }

  CounterResult measure(const std::function<void()>& launch, const std::function<void()>& before_pass) {
    DeviceScope scope(device);
    std::vector<std::uint8_t> counter_data;
    {
      RangeSession session(ctx);
      counter_data = session.counter_data_image(metrics);
      session.set_config(config.bytes, counter_data);
      const std::size_t max_passes = 2 * config.passes + 2;
      bool all_submitted = false;
      for (std::size_t pass = 0; pass < max_passes && !all_submitted; ++pass) {
        if (before_pass) before_pass();
        FLASHTUNE_CUDA_CHECK(cudaDeviceSynchronize());
        session.start();
        launch();
        FLASHTUNE_CUDA_CHECK(cudaDeviceSynchronize());
        all_submitted = session.stop();
      }
      if (!all_submitted)
        return unavailable("passes not complete after " + std::to_string(max_passes) + " replays (config needs " +
                           std::to_string(config.passes) + ")");
      const std::size_t dropped = session.decode();
      if (dropped > 0)
        return unavailable("launch started more than " + std::to_string(kMaxRanges) + " kernels (" +
                           std::to_string(dropped) + " ranges dropped); expected one");
    }
    const std::size_t ranges = ranges_in(counter_data);
    if (ranges != 1)
      return unavailable("launch started " + std::to_string(ranges) + " kernels; expected exactly one");
    const std::vector<double> values = host->evaluate(counter_data, 0, metrics);
    CounterResult r;
    r.ok = true;
    r.status = "ok";
    for (std::size_t i = 0; i < metrics.size(); ++i) r.values[metrics[i]] = values[i];
    return r;
  }

  static CounterResult unavailable(const std::string& why) {
    CounterResult r;
    r.status = "unavailable: " + why;
    return r;
  }
};

std::vector<std::string> CuptiProfiler::default_metrics() {
  return {
      "gpu__time_duration.sum",
      "dram__bytes_read.sum",
      "dram__bytes_write.sum",
      "lts__t_bytes.sum",
      "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
      "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
      "sm__warps_active.avg.pct_of_peak_sustained_active",
      "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
      "smsp__thread_inst_executed_pipe_xu_pred_on.sum",
      model::kTensorInstructionsMetric,  // mma.sync warp instructions (tensor-core variants)
      model::kWarpInstructionsMetric,    // every warp instruction: the issue pipe's work
      // The same split by the pipe that executes them: which instructions the traits' counts miss
      // (address arithmetic on alu/fma, loop branches on cbu, uniform-datapath setup).
      "smsp__inst_executed_pipe_alu.sum",
      "smsp__inst_executed_pipe_fma.sum",
      "smsp__inst_executed_pipe_lsu.sum",
      "smsp__inst_executed_pipe_xu.sum",
      "smsp__inst_executed_pipe_cbu.sum",
      "smsp__inst_executed_pipe_adu.sum",
      "smsp__inst_executed_pipe_uniform.sum",
      // L2 read requests from the SMs and the sectors the crossbar returns to them: a padded tile's
      // cp.async copies split into more, smaller requests than a swizzled tile's (same addresses).
      "lts__t_requests_srcunit_tex_op_read.sum",
      "l1tex__m_xbar2l1tex_read_sectors.sum",
      // Every wavefront the shared-memory data pipe serves, warp shuffles included (the op_ld /
      // op_st pair above leaves them out): what the time's shared term counts.
      model::kSharedPipeWavefrontsMetric,
      // Hopper only (hopper_metrics): the wgmma16 family's HGMMA instructions and TMA copies.
      model::kWgmmaInstructionsMetric,
      model::kTmaLoadBytesMetric,
      model::kTmaStoreBytesMetric,
      model::kTmaLoadInstructionsMetric,
      model::kTmaStoreInstructionsMetric,
  };
}

const std::vector<std::string>& CuptiProfiler::hopper_metrics() {
  static const std::vector<std::string> metrics = {model::kWgmmaInstructionsMetric, model::kTmaLoadBytesMetric,
                                                    model::kTmaStoreBytesMetric, model::kTmaLoadInstructionsMetric,
                                                    model::kTmaStoreInstructionsMetric};
  return metrics;
}

std::vector<std::string> CuptiProfiler::metrics_for_chip(
    const std::vector<std::string>& metrics, const std::string& chip,
    const std::function<std::optional<std::string>(const std::string&)>& problem) {
  const std::vector<std::string>& hopper = hopper_metrics();
  std::vector<std::string> kept;
  for (const std::string& m : metrics) {
    if (const auto why = problem(m)) {
      if (std::find(hopper.begin(), hopper.end(), m) != hopper.end()) continue;  // a pre-Hopper chip
      throw std::invalid_argument("metric '" + m + "' is not valid on " + chip + ": " + *why);
    }
    kept.push_back(m);
  }
  return kept;
}

CuptiProfiler CuptiProfiler::create(int device, std::vector<std::string> metrics) {
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  impl->metrics = std::move(metrics);
  try {
    impl->open();
    impl->available = true;
  } catch (const std::exception& e) {
    // Whatever went wrong (no device, no permission, a profiler already attached, an unknown
    // metric), the caller tunes on timings alone and records why.
    impl->available = false;
    impl->reason = e.what();
    impl->close();
  }
  return CuptiProfiler(std::move(impl));
}

CuptiProfiler::CuptiProfiler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CuptiProfiler::~CuptiProfiler() = default;
CuptiProfiler::CuptiProfiler(CuptiProfiler&&) noexcept = default;
CuptiProfiler& CuptiProfiler::operator=(CuptiProfiler&&) noexcept = default;

bool CuptiProfiler::available() const { return impl_ && impl_->available; }

const std::string& CuptiProfiler::reason() const {
  static const std::string moved_from = "profiler was moved from";
  return impl_ ? impl_->reason : moved_from;
}

const std::vector<std::string>& CuptiProfiler::metrics() const {
  static const std::vector<std::string> none;
  return impl_ ? impl_->metrics : none;
}

int CuptiProfiler::passes() const { return available() ? int(impl_->config.passes) : 0; }

CounterResult CuptiProfiler::measure(const std::function<void()>& launch, const std::function<void()>& before_pass) {
  if (!available()) return Impl::unavailable(reason());
  try {
    return impl_->measure(launch, before_pass);
  } catch (const CuptiError& e) {
    return Impl::unavailable(e.what());
  }
}

}  // namespace flashtune
