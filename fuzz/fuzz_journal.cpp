// A tune's journal (profile/profile_journal.h) beside a profile: any bytes either replay or fail
// with a ProfileError naming the journal and line, and never fold in a pair the profile's value
// check would refuse: the replayed profile passes check_profile_values and writes back to text
// that reads again to the same pairs.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/json_file.h"
#include "profile/profile.h"
#include "profile/profile_check.h"
#include "profile/profile_journal.h"

namespace {

flashtune::Profile base_profile() {
  flashtune::Profile p;
  p.gpu.name = "Fuzz GPU";
  p.gpu.spec = "fuzz-gpu";
  p.gpu.sm_count = 132;
  p.gpu.cc = "9.0";
  p.gpu.sm_clock_max_mhz = 1980;
  p.gpu.mem_clock_mhz = 3201;
  p.gpu.l2_bytes = 62914560;
  p.gpu.driver = "fuzz";
  p.gpu.cuda_runtime = "13.0";
  flashtune::NamedWorkload w;
  w.name = "w";
  w.workload.B = 2;
  w.workload.N = 256;
  w.workload.d = 64;
  p.workloads.push_back(w);
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The base itself must pass the check for the property below to mean anything.
  static const bool base_ok = [] {
    try {
      flashtune::check_profile_values(base_profile(), "base");
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  flashtune::Profile p = base_profile();
  try {
    (void)flashtune::replay_journal_text(text, "fuzz.journal", p);
  } catch (const flashtune::ProfileError&) {
    return 0;
  }
  if (!base_ok) return 0;
  try {
    flashtune::check_profile_values(p, "replayed");
    const flashtune::Profile again = flashtune::profile_from_json(
        flashtune::parse_json_text(flashtune::profile_text(p), "rewrite"), "rewrite");
    if (again.measurements.size() != p.measurements.size()) std::abort();
  } catch (const std::exception&) {
    std::abort();  // the journal folded in a pair a profile reader refuses
  }
  return 0;
}
