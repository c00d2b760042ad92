// Workload files (configs/workloads/*.json, tune --workloads): any bytes either load or fail with
// a WorkloadFileError / JsonFileError; every workload that loads passes the shared size limits.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/json_file.h"
#include "model/workload_limits.h"
#include "profile/workload_set.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  flashtune::WorkloadSet set;
  try {
    set = flashtune::workload_set_from_json(flashtune::parse_json_text(text, "fuzz.json"), "fuzz.json");
  } catch (const std::runtime_error&) {
    return 0;
  }
  for (const flashtune::NamedWorkload& w : set.workloads)
    if (flashtune::model::workload_limit_error(w.workload)) std::abort();
  return 0;
}
