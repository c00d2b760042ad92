// Host half of CUPTI range profiling (cupti_profiler_host.h): for one chip, checks metric names,
// builds the config image (which counters to program in which replay pass) and turns a decoded
// counter data image into metric values. It needs libcupti and the libnvperf_host that libcupti
// loads at run time, but no GPU, so metric names can be checked on a machine without one.
#pragma once

#include <cupti_profiler_host.h>
#include <cupti_result.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace flashtune {

// A CUPTI call failed; what() is "<call>: <CUPTI result name>", e.g.
// "cuptiRangeProfilerEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES".
class CuptiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A CUPTI parameter struct with every field zeroed (pPriv and the outputs must be) and its
// structSize set, which is how CUPTI tells which version of the struct the caller knows.
template <typename Params>
Params cupti_params(std::size_t struct_size) {
  Params p{};
  p.structSize = struct_size;
  return p;
}

// "CUPTI_ERROR_..." for a result code (CUPTI's own name, or the number when it has none).
std::string cupti_result_name(CUptiResult result);

// Throws CuptiError("<call>: <result name>") unless result is CUPTI_SUCCESS.
void check_cupti(CUptiResult result, const char* call);

struct CuptiConfigImage {
  std::vector<std::uint8_t> bytes;
  std::size_t passes = 0;  // replay passes the metric set needs on this chip
};

class CuptiHost {
 public:
  // `chip` as cuptiDeviceGetChipName names it ("GH100" for H100 and H200). The counter
  // availability image (from the device) may be empty: CUPTI then assumes every counter of a
  // chip it knows is available. Throws CuptiError.
  CuptiHost(std::string chip, const std::vector<std::uint8_t>& counter_availability);
  ~CuptiHost();
  CuptiHost(const CuptiHost&) = delete;
  CuptiHost& operator=(const CuptiHost&) = delete;

  const std::string& chip() const { return chip_; }

  // Empty when `metric` (with its rollup, e.g. ".sum") exists on this chip, else the CUPTI result
  // name, e.g. "CUPTI_ERROR_INVALID_METRIC_NAME".
  std::optional<std::string> metric_problem(const std::string& metric) const;

  // The config image for all `metrics` together (given in one call so that CUPTI packs them into
  // as few passes as it can: the 12 default metrics need 3 passes on GH100, 12 when added one by
  // one). CUPTI accumulates metrics in the host object, so this may be called once per CuptiHost;
  // a second call throws std::logic_error. Throws CuptiError for an unknown metric.
  CuptiConfigImage config_image(const std::vector<std::string>& metrics);

  // Values of `metrics`, in that order, for range `range_index` of a decoded counter data image.
  std::vector<double> evaluate(const std::vector<std::uint8_t>& counter_data, std::size_t range_index,
                               const std::vector<std::string>& metrics) const;

 private:
  std::string chip_;
  std::vector<std::uint8_t> availability_;  // lives as long as the host object that was given it
  CUpti_Profiler_Host_Object* host_ = nullptr;
  bool configured_ = false;
};

// Pointers into `names` (which must outlive the result), as the CUPTI parameter structs take them.
std::vector<const char*> c_strings(const std::vector<std::string>& names);

}  // namespace flashtune
