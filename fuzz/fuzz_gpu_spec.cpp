// GPU spec sheets (configs/gpus/*.json, --spec FILE): any bytes either load or fail with a
// std::runtime_error naming the source; a spec that loads has figures the model can divide by.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kernels/traits/tile_config.h"
#include "model/gpu_spec.h"
#include "model/json_file.h"
#include "model/predict.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  flashtune::model::GpuSpec spec;
  try {
    spec = flashtune::model::gpu_spec_from_json(flashtune::parse_json_text(text, "fuzz.json"), "fuzz.json");
  } catch (const std::runtime_error&) {
    return 0;
  }
  // Every real figure passed the plausible-range check, so rates are finite and non-zero.
  if (!(spec.dram_bandwidth_gbs > 0) || !std::isfinite(spec.dram_bandwidth_gbs)) std::abort();
  if (!(spec.sm_clock_boost_mhz > 0) || spec.sm_count <= 0) std::abort();
  return 0;
}
