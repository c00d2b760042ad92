// Issue 27 ("Hardening II"), host side, items 6, 9 and 11's spec checks: JSON nested deeper than
// the one reader's limit is refused in one line before anything is built (a profile nested
// 1,000,000 deep and a journal line nested 100,000 deep used to end in a segmentation fault); the
// profile's value ranges come from one table (profile/profile_ranges.h) that the checker and
// docs/profile-schema.md both read; a spec sheet's clocks and name are checked. Host-only, so the
// sanitizer build runs it too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "model/data_dir.h"
#include "model/gpu_spec.h"
#include "model/json_file.h"
#include "model/text_check.h"
#include "plots/drawer.h"
#include "plots/plot_profile.h"
#include "profile/profile.h"
#include "profile/profile_check.h"
#include "profile/profile_journal.h"
#include "profile/profile_ranges.h"
#include "profile/workload_set.h"
#include "test_temp_dir.h"

namespace {

using flashtune::testing_support::TempDir;
using nlohmann::json;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

template <class E, class F>
void expect_error(F f, std::initializer_list<const char*> fragments) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    const std::string what = e.what();
    for (const char* frag : fragments) EXPECT_NE(what.find(frag), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
  }
}

std::string nested(std::size_t depth, const std::string& inner = "1") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

json fixture_profile() { return json::parse(read_all(FLASHTUNE_FIXTURE_PROFILE)); }

// The fixture's text with an unknown top-level field nested `depth` deep.
std::string fixture_with_deep_field(std::size_t depth) {
  std::string text = fixture_profile().dump();
  text.pop_back();  // the closing brace
  return text + ", \"x\": " + nested(depth) + "}";
}

// ---- item 6: the nesting limit of the one JSON reader ----------------------------------------

TEST(JsonDepth, AMillionDeepProfileIsRefusedNamingTheFileAndTheLimit) {
  TempDir t("deep_profile");
  const std::string path = t.write("p.json", fixture_with_deep_field(1000000));
  const std::string limit = std::to_string(flashtune::kMaxJsonDepth);
  expect_error<flashtune::ProfileError>([&] { flashtune::load_profile(path); }, {"p.json", "nested deeper", limit.c_str()});
  expect_error<std::runtime_error>([&] { flashtune::plots::load_plot_profile(path); }, {"p.json", "nested deeper"});
  // Just within the limit reads (the field is kept); one level more is refused.
  const std::string ok = t.write("ok.json", fixture_with_deep_field(flashtune::kMaxJsonDepth - 1));
  EXPECT_NO_THROW(flashtune::load_profile(ok));
  const std::string over = t.write("over.json", fixture_with_deep_field(flashtune::kMaxJsonDepth));
  expect_error<flashtune::ProfileError>([&] { flashtune::load_profile(over); }, {"over.json", "nested deeper"});
}

TEST(JsonDepth, BracketsInsideStringsDoNotCount) {
  const std::string deep_text = "{\"a\": \"" + std::string(100000, '[') + "\\\"" + std::string(100000, '{') + "\"}";
  const json j = flashtune::parse_json_text(deep_text, "s.json");
  EXPECT_EQ(j["a"].get<std::string>().size(), 200001u);
  try {
    flashtune::parse_json_text(nested(100000), "deep.json");
    ADD_FAILURE() << "no exception";
  } catch (const flashtune::JsonFileError& e) {
    EXPECT_EQ(e.kind(), flashtune::JsonFileError::Kind::kLimit);
    EXPECT_NE(std::string(e.what()).find("deep.json: nested deeper than"), std::string::npos) << e.what();
  }
}

TEST(JsonDepth, SpecAndWorkloadFilesNestedDeepAreRefusedToo) {
  TempDir t("deep_other");
  const std::string spec = t.write("spec.json", "{\"x\": " + nested(5000000) + "}");
  expect_error<std::runtime_error>([&] { flashtune::model::load_gpu_spec(spec); }, {"spec.json", "nested deeper"});
  const std::string wl = t.write("w.json", nested(5000000));
  expect_error<std::runtime_error>([&] { flashtune::load_workload_set(wl); }, {"w.json", "nested deeper"});
}

// A journal line nested 100,000 deep (a whole line, never a torn write): refused naming the
// journal, its line and the limit, by every reader that folds the journal in.
TEST(JsonDepth, AJournalLineNestedDeepIsRefusedNamingTheLine) {
  TempDir t("deep_journal");
  const std::string path = t.write("p.json", fixture_profile().dump());
  const std::string journal = flashtune::journal_path(path);
  // Checked before the header: the first line, alone (the last line, where a torn write may sit)
  // or followed by another.
  for (const bool last : {true, false}) {
    std::ofstream(journal) << nested(100000) << "\n" << (last ? "" : "{}\n");
    expect_error<flashtune::ProfileError>([&] { flashtune::load_profile_with_journal(path, nullptr); },
                                          {"p.json.journal:1", "nested deeper"});
  }
}

// ---- item 9: the profile's value ranges, one table -------------------------------------------

void expect_profile_refused(const json& doc, std::initializer_list<const char*> fragments) {
  TempDir t("ranges");
  const std::string path = t.write("p.json", doc.dump());
  expect_error<flashtune::ProfileError>([&] { flashtune::load_profile(path); }, fragments);
  expect_error<std::runtime_error>([&] { flashtune::plots::load_plot_profile(path); }, fragments);
}

TEST(ProfileRanges, ImpossibleValuesAreRefusedNamingTheFieldAndValue) {
  struct Case {
    const char* pointer;  // JSON pointer into the fixture
    json value;
    std::initializer_list<const char*> fragments;
  };
  const Case cases[] = {
      {"/gpu/sm_count", -1, {"gpu.sm_count", "-1"}},
      {"/gpu/device_index", -1, {"gpu.device_index", "-1"}},
      {"/measurements/2/verify/rel_l2", 1e300, {"measurements[2].verify.rel_l2", "1e+300", "tolerance"}},
      {"/measurements/2/verify/rel_l2", 2e-4, {"measurements[2].verify.rel_l2", "tolerance 0.0001"}},
      {"/measurements/2/timing/samples", 0, {"measurements[2].timing.samples", "= 0"}},
      {"/measurements/2/resources/threads", 0, {"measurements[2].resources.threads", "= 0"}},
      {"/measurements/2/resources/registers", 0, {"measurements[2].resources.registers", "= 0"}},
      {"/measurements/2/timing/sm_clock_mhz", 1e300, {"measurements[2].timing.sm_clock_mhz", "1e+300"}},
      {"/measurements/2/device_index", -1, {"measurements[2].device_index", "-1"}},
      {"/measurements/2/elapsed_s", 1e300, {"measurements[2].elapsed_s", "1e+300"}},
      {"/measurements/2/counters_status", "maybe", {"measurements[2].counters_status", "'maybe'", "unavailable: <reason>"}},
      {"/measurements/2/timing/stop", "bogus", {"measurements[2].timing.stop", "'bogus'", "converged"}},
      {"/measurements/2/timestamp", "yesterday", {"measurements[2].timestamp", "'yesterday'", "ISO 8601"}},
      {"/measurements/2/timestamp", "2026-13-01T00:00:00Z", {"measurements[2].timestamp"}},
      {"/measurements/2/status", "launch", {"measurements[2].timing", "status 'launch'"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.pointer) + " = " + c.value.dump());
    json p = fixture_profile();
    p[json::json_pointer(c.pointer)] = c.value;
    expect_profile_refused(p, c.fragments);
  }
  // Absent resources fields are named, not read as 0.
  json p = fixture_profile();
  p["measurements"][2]["resources"].erase("threads");
  expect_profile_refused(p, {"measurements[2].resources.threads", "missing"});
}

TEST(ProfileRanges, ValuesThatTheWriterProducesAreAccepted) {
  json p = fixture_profile();
  p["measurements"][2]["timestamp"] = "2026-11-22T06:00:00Z";
  p["measurements"][3]["timestamp"] = "2026-11-22T06:00:00.123Z";
  p["measurements"][2]["timing"]["stop"] = "hard-time-cap";
  p["measurements"][3]["timing"]["stop"] = "converged";
  p["measurements"][2]["counters_status"] = "unavailable: disabled by --no-counters";
  p["measurements"][2]["verify"]["rel_l2"] = 1e-4;  // exactly the fp32 bar passes
  p["measurements"][30]["verify"] = {{"rel_l2", 0.5}, {"max_abs", 2.0}};  // a refused pair's error is not bounded
  TempDir t("ranges_ok");
  EXPECT_NO_THROW(flashtune::load_profile(t.write("p.json", p.dump())));
}

// The one table: every row is read by the checker (a field missing from the table does not
// compile there) and listed in docs/profile-schema.md between its markers.
TEST(ProfileRanges, TheSchemaDocListsEveryRow) {
  const std::string doc = read_all(std::string(FLASHTUNE_SOURCE_DIR) + "/docs/profile-schema.md");
  const std::string begin = "<!-- value-ranges: begin (generated from profile/profile_ranges.h) -->\n";
  const std::string end = "<!-- value-ranges: end -->";
  const std::size_t a = doc.find(begin), b = doc.find(end);
  ASSERT_NE(a, std::string::npos) << "docs/profile-schema.md lacks the marker: " << begin;
  ASSERT_NE(b, std::string::npos);
  const std::string table = doc.substr(a + begin.size(), b - a - begin.size());
  EXPECT_EQ(table, flashtune::profile_ranges_markdown())
      << "docs/profile-schema.md's value-ranges table differs from profile/profile_ranges.h; paste this:\n"
      << flashtune::profile_ranges_markdown();
  for (const flashtune::ValueRange& r : flashtune::kProfileValueRanges)
    EXPECT_EQ(flashtune::profile_range_index(r.field) < flashtune::kProfileValueRangeCount, true) << r.field;
}

// ---- item 11: spec sheets, names, heatmap files ----------------------------------------------

json h200_spec() { return json::parse(read_all(std::string(FLASHTUNE_TEST_GPU_DIR) + "/nvidia-h200.json")); }

TEST(SpecChecks, BaseClockAboveBoostAndEmptyOrControlNamesAreRefused) {
  TempDir t("spec_checks");
  json s = h200_spec();
  s["sm_clock_base_mhz"]["value"] = 1e6;
  s["sm_clock_boost_mhz"]["value"] = 1;
  const std::string clock = t.write("clock.json", s.dump());
  expect_error<std::runtime_error>([&] { flashtune::model::load_gpu_spec(clock); },
                                   {"clock.json", "sm_clock_base_mhz", "1e+06", "sm_clock_boost_mhz"});
  s = h200_spec();
  s["name"] = "";
  const std::string empty = t.write("empty.json", s.dump());
  expect_error<std::runtime_error>([&] { flashtune::model::load_gpu_spec(empty); }, {"empty.json", "'name' is empty"});
  s = h200_spec();
  s["aliases"].push_back(std::string("h2\0" "00", 5));
  const std::string nul = t.write("nul.json", s.dump());
  expect_error<std::runtime_error>([&] { flashtune::model::load_gpu_spec(nul); }, {"nul.json", "aliases[", "\\x00"});
}

TEST(SpecChecks, OneAliasInTwoFilesIsRefusedAndAMalformedFileIsNamed) {
  TempDir t("spec_alias");
  t.write("nvidia-h200.json", h200_spec().dump());
  t.write("other.json", h200_spec().dump());
  expect_error<std::runtime_error>([&] { flashtune::model::find_gpu_spec("h200", t.file("")); },
                                   {"'h200'", "nvidia-h200.json", "other.json"});
  TempDir u("spec_malformed");
  u.write("nvidia-h200.json", "{\"schema_version\": 1,");
  u.write("nvidia-h100-sxm.json", read_all(std::string(FLASHTUNE_TEST_GPU_DIR) + "/nvidia-h100-sxm.json"));
  expect_error<std::runtime_error>([&] { flashtune::model::find_gpu_spec("h200", u.file("")); },
                                   {"nvidia-h200.json", "malformed"});
  EXPECT_NO_THROW(flashtune::model::find_gpu_spec("h100", u.file("")));  // breaks no other GPU
}

TEST(NameChecks, ControlCharactersAreNamedAndPrintedEscaped) {
  EXPECT_EQ(flashtune::printable("a\x1b[31mb\n"), "a\\x1b[31mb\\x0a");
  EXPECT_FALSE(flashtune::name_problem("t10"));
  EXPECT_TRUE(flashtune::name_problem(""));
  const auto why = flashtune::name_problem(std::string("a\0b", 3));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("\\x00 at byte 1"), std::string::npos) << *why;
  TempDir t("wl_ctrl");
  const json w = {{"schema_version", 1}, {"workloads", {{{"name", "x\x1by"}, {"B", 1}, {"N", 128}, {"d", 64}, {"causal", false}}}}};
  const std::string path = t.write("w.json", w.dump());
  expect_error<std::runtime_error>([&] { flashtune::load_workload_set(path); }, {"w.json", "workloads[0].name", "\\x1b"});
}

TEST(HeatmapFiles, NamesThatMapToOneFileNameGetDistinctStems) {
  using flashtune::plots::safe_stem;
  EXPECT_EQ(safe_stem("a_b"), "a_b");  // a name that is already safe keeps its file name
  EXPECT_NE(safe_stem("a/b"), safe_stem("a_b"));
  EXPECT_NE(safe_stem("a/b"), safe_stem("a b"));
  EXPECT_EQ(safe_stem("a/b"), safe_stem("a/b"));  // stable
  EXPECT_EQ(safe_stem("a/b").rfind("a_b-", 0), 0u) << safe_stem("a/b");
}

}  // namespace
