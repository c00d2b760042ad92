// Profiles (profiles/*.json and every --profile): any bytes either read or fail with a
// ProfileError / JsonFileError; a profile that reads writes back to text that reads again to the
// same measurements (the write path must not produce what the reader refuses). Each line of a
// tune journal is one measurement (profile/profile_journal.h), read by the same function.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/json_file.h"
#include "profile/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json doc;
  try {
    doc = flashtune::parse_json_text(text, "fuzz.json");
  } catch (const flashtune::JsonFileError&) {
    return 0;
  }
  try {
    (void)flashtune::measurement_from_json(doc, "fuzz.journal", "line 1");
  } catch (const flashtune::ProfileError&) {
  }
  flashtune::Profile p;
  try {
    p = flashtune::profile_from_json(doc, "fuzz.json");
  } catch (const flashtune::ProfileError&) {
    return 0;
  }
  flashtune::Profile again;
  try {
    again = flashtune::profile_from_json(flashtune::parse_json_text(flashtune::profile_text(p), "rewrite"), "rewrite");
  } catch (const std::exception&) {
    std::abort();  // the writer produced a file the reader refuses
  }
  if (again.measurements.size() != p.measurements.size() || again.workloads.size() != p.workloads.size()) std::abort();
  return 0;
}
