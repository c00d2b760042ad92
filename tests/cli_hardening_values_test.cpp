// Issue 27 ("Hardening II") through the flashtune binary, no GPU needed: items 6 (deep JSON ends in
// one line, not a segmentation fault), 11 (small acceptances refused: --seed -1, --shard "",
// list --d 0, merge --top-k alone, a spec whose base clock is above its boost clock or whose name
// is empty, one alias in two spec files, heatmap files of names that map to one file name, control
// characters in names) and 12 (messages that name the file and the value).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"
#include "test_temp_dir.h"

namespace {

using flashtune::testing_support::CommandResult;
using flashtune::testing_support::line_count;
using flashtune::testing_support::run_flashtune;
using flashtune::testing_support::TempDir;
using nlohmann::json;

std::string data(const std::string& name) { return std::string(FLASHTUNE_TEST_DATA_DIR) + "/" + name; }
std::string gpu_dir() { return std::string(FLASHTUNE_SOURCE_DIR) + "/configs/gpus"; }

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

json fixture() { return json::parse(read_all(data("fixture_profile.json"))); }
json h200_spec() { return json::parse(read_all(gpu_dir() + "/nvidia-h200.json")); }

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// One line, a usage error (exit 2), holding every fragment.
void expect_refused(const CommandResult& r, std::initializer_list<const char*> fragments, int code = 2) {
  EXPECT_EQ(r.exit_code, code) << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  for (const char* f : fragments) EXPECT_NE(r.output.find(f), std::string::npos) << "want '" << f << "' in: " << r.output;
}

// ---- item 6: deep nesting ----------------------------------------------------------------

TEST(CliHardeningValues, ADeeplyNestedProfileIsOneLineNotACrash) {
  TempDir dir("cv_deep");
  std::string text = fixture().dump();
  text.pop_back();
  text += ", \"x\": " + std::string(1000000, '[') + std::string(1000000, ']') + "}";
  const std::string p = dir.write("p.json", text);
  for (const std::string cmd : {"export --profile '" + p + "' --format csv", "compare --profile '" + p + "' --against '" + p + "'",
                                "predict --gpu h200 --B 1 --N 128 --d 64 --all --profile '" + p + "'",
                                "fit --profile '" + p + "' --cv none --free fp32_efficiency --quiet",
                                "merge '" + p + "' --out '" + dir.file("m.json") + "'"}) {
    SCOPED_TRACE(cmd);
    const auto r = run_flashtune(cmd);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.exit_code, -1) << "killed by a signal: " << r.output;
    EXPECT_EQ(line_count(r.output), 1u) << r.output.substr(0, 400);
    EXPECT_NE(r.output.find("p.json: nested deeper than 256 levels"), std::string::npos) << r.output.substr(0, 400);
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.json")));
}

TEST(CliHardeningValues, ADeeplyNestedJournalLineIsOneLineNotACrash) {
  TempDir dir("cv_deep_journal");
  const std::string p = dir.write("p.json", fixture().dump());
  {
    std::ofstream j(dir.file("p.json.journal"));
    j << std::string(100000, '[') << std::string(100000, ']') << "\n";
  }
  const auto r = run_flashtune("merge '" + p + "' --out '" + dir.file("m.json") + "'");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, -1) << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << r.output.substr(0, 400);
  EXPECT_NE(r.output.find("p.json.journal:1: nested deeper than 256"), std::string::npos) << r.output.substr(0, 400);
}

// ---- item 11: small acceptances -------------------------------------------------------------

TEST(CliHardeningValues, OptionValuesThatMeantSomethingElseAreRefused) {
  TempDir dir("cv_opts");
  const std::string p = dir.write("p.json", fixture().dump());
  // --seed is unsigned: -1 was recorded as 18446744073709551615.
  expect_refused(run_flashtune("tune --backend fake --B 1 --N 128 --d 64 --seed -1 --profile '" + dir.file("t.json") + "'"),
                 {"--seed", "negative"});
  // An unset shell variable: the whole plan on every task.
  expect_refused(run_flashtune("tune --backend fake --B 1 --N 128 --d 64 --shard \"\" --profile '" + dir.file("t.json") + "'"),
                 {"--shard", "empty"});
  EXPECT_FALSE(std::filesystem::exists(dir.file("t.json")));
  // d = 0 listed every config.
  expect_refused(run_flashtune("list --d 0"), {"--d", "0 is below 1"});
  // --top-k without --strategy model was silently ignored by merge; a plan option without a plan too.
  expect_refused(run_flashtune("merge '" + p + "' --out '" + dir.file("m.json") + "' --top-k 3"),
                 {"--top-k goes with --strategy model"});
  expect_refused(run_flashtune("merge '" + p + "' --out '" + dir.file("m.json") + "' --strategy model --top-k 3"),
                 {"--workloads"});
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.json")));
}

// A data folder with the shipped spec sheets; returns its path.
std::string data_dir_with_specs(const TempDir& dir) {
  const std::string specs = dir.file("data/configs/gpus");
  std::filesystem::create_directories(specs);
  for (const auto& e : std::filesystem::directory_iterator(gpu_dir()))
    std::filesystem::copy_file(e.path(), specs + "/" + e.path().filename().string());
  return dir.file("data");
}

TEST(CliHardeningValues, SpecSheetsWithImpossibleClocksOrNamesAreRefused) {
  TempDir dir("cv_spec");
  const std::string d = data_dir_with_specs(dir);
  const std::string spec = d + "/configs/gpus/nvidia-h200.json";
  const std::string predict = "--data-dir '" + d + "' predict --gpu nvidia-h200 --B 1 --N 128 --d 64 --all";
  json s = h200_spec();
  s["sm_clock_base_mhz"]["value"] = 1e6;
  s["sm_clock_boost_mhz"]["value"] = 1;
  std::ofstream(spec, std::ios::trunc) << s.dump();
  expect_refused(run_flashtune(predict), {"nvidia-h200.json", "sm_clock_base_mhz", "1e+06", "above"});
  s = h200_spec();
  s["name"] = "";
  std::ofstream(spec, std::ios::trunc) << s.dump();
  expect_refused(run_flashtune(predict), {"nvidia-h200.json", "'name' is empty"});
  s = h200_spec();
  s["name"] = "NVIDIA \x1b[31mH200\x1b[0m";
  std::ofstream(spec, std::ios::trunc) << s.dump();
  const auto r = run_flashtune(predict);
  expect_refused(r, {"nvidia-h200.json", "control character \\x1b"});
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << "raw escape reached the terminal";
}

TEST(CliHardeningValues, OneAliasInTwoSpecFilesIsRefusedNamingBoth) {
  TempDir dir("cv_alias");
  const std::string d = data_dir_with_specs(dir);
  json s = h200_spec();
  s["name"] = "Another H200";
  std::ofstream(d + "/configs/gpus/zz-other-h200.json") << s.dump();
  expect_refused(run_flashtune("--data-dir '" + d + "' predict --gpu h200 --B 1 --N 128 --d 64 --all"),
                 {"'h200'", "nvidia-h200.json", "zz-other-h200.json"});
  // The stem itself still names one file.
  EXPECT_EQ(run_flashtune("--data-dir '" + d + "' predict --gpu nvidia-h200 --B 1 --N 128 --d 64 --all").exit_code, 0);
}

TEST(CliHardeningValues, ControlCharactersInWorkloadNamesAreRefusedNotPrinted) {
  TempDir dir("cv_ctrl");
  json p = fixture();
  p["workloads"][0]["name"] = "n\x1b[2J512";
  for (json& m : p["measurements"])
    if (m["workload"] == "n512") m["workload"] = "n\x1b[2J512";
  const auto r = run_flashtune("export --profile '" + dir.write("p.json", p.dump()) + "' --format csv");
  expect_refused(r, {"p.json", "workloads[0].name", "control character \\x1b"});
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos);
  const json w = {{"schema_version", 1}, {"name", "ctl"}, {"workloads", {{{"name", std::string("a\x07") + "b"}, {"B", 1}, {"N", 128}, {"d", 64}, {"causal", false}}}}};
  const auto t = run_flashtune("tune --backend fake --workloads '" + dir.write("w.json", w.dump()) + "' --profile '" +
                               dir.file("t.json") + "'");
  expect_refused(t, {"w.json", "control character \\x07"});
  EXPECT_EQ(t.output.find('\x07'), std::string::npos);
  const auto n = run_flashtune("tune --backend fake --B 1 --N 128 --d 64 --name \"$(printf 'x\\033y')\" --profile '" +
                               dir.file("t.json") + "'");
  expect_refused(n, {"--name", "control character \\x1b"});
  EXPECT_EQ(n.output.find('\x1b'), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.file("t.json")));
}

TEST(CliHardeningValues, WorkloadsOfOneFileNameGetOneHeatmapEach) {
  if (!flashtune::testing_support::gnuplot_on_path()) GTEST_SKIP() << "gnuplot not installed";
  TempDir dir("cv_heat");
  json p = fixture();
  const std::map<std::string, std::string> rename = {{"n512", "a/b"}, {"n1024", "a_b"}};
  for (json& w : p["workloads"])
    if (rename.count(w["name"])) w["name"] = rename.at(w["name"]);
  for (json& m : p["measurements"])
    if (rename.count(m["workload"])) m["workload"] = rename.at(m["workload"]);
  const std::string path = dir.write("p.json", p.dump());
  const std::string out = dir.file("r");
  const auto r = run_flashtune("report --profile '" + path + "' --out '" + out + "' --gpu-spec nvidia-h200 --heatmaps all");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string md = read_all(out + "/report.md");
  EXPECT_EQ(count_of(md, "(heatmap_a_b.png)"), 1u) << md;
  std::size_t tagged = 0;
  for (const auto& e : std::filesystem::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("heatmap_a_b-", 0) == 0 && e.path().extension() == ".png") {
      ++tagged;
      EXPECT_EQ(count_of(md, "(" + name + ")"), 1u) << md;
    }
  }
  EXPECT_EQ(tagged, 1u);
  EXPECT_TRUE(std::filesystem::exists(out + "/heatmap_a_b.svg"));
}

// ---- item 12: messages naming the file and the value -----------------------------------------

TEST(CliHardeningValues, AFoldTooSmallToFitIsReportedNotTheWholeReportLost) {
  // 30 ok measurements, 4 free coefficients (20 needed): holding out regtile_2d leaves 18.
  const auto r = run_flashtune("fit --profile '" + data("fixture_profile.json") +
                               "' --free fp32_efficiency,launch_overhead_us,smem_efficiency,dram_efficiency "
                               "--cv variant --quiet --no-write");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("incomplete: variant fold 'regtile_2d' (18 training, 12 held out) not fitted: too few"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("leave-one-variant-out"), std::string::npos) << r.output;
}

TEST(CliHardeningValues, AMalformedSpecIsNamedNotCalledUnknown) {
  TempDir dir("cv_badspec");
  const std::string d = data_dir_with_specs(dir);
  std::ofstream(d + "/configs/gpus/nvidia-h200.json", std::ios::trunc) << "{\"schema_version\": 1,";
  const auto r = run_flashtune("--data-dir '" + d + "' predict --gpu h200 --B 1 --N 128 --d 64 --all");
  expect_refused(r, {"nvidia-h200.json", "malformed"});
  EXPECT_EQ(r.output.find("unknown GPU"), std::string::npos) << r.output;
}

TEST(CliHardeningValues, MergeSaysWhatAFolderOrAFifoIs) {
  TempDir dir("cv_merge_kind");
  std::filesystem::create_directories(dir.file("shards"));
  expect_refused(run_flashtune("merge '" + dir.file("shards") + "' --out '" + dir.file("m.json") + "'"),
                 {"shards", "is a folder"});
  ASSERT_EQ(::mkfifo(dir.file("f.json").c_str(), 0600), 0);
  expect_refused(run_flashtune("merge '" + dir.file("f.json") + "' --out '" + dir.file("m.json") + "'"),
                 {"f.json", "is a FIFO"});
}

TEST(CliHardeningValues, PlotAndReportMessagesCarryTheCommandAndNameTheEmptyOption) {
  TempDir dir("cv_plot_msgs");
  const auto missing = run_flashtune("plot --profile '" + dir.file("none.json") + "' --out '" + dir.file("o") + "'");
  expect_refused(missing, {"flashtune plot: "});
  const auto rep = run_flashtune("report --profile '" + dir.file("none.json") + "' --out '" + dir.file("o") + "'");
  expect_refused(rep, {"flashtune report: "});
  const auto empty = run_flashtune("plot --profile '" + data("fixture_profile.json") + "' --out \"\"");
  expect_refused(empty, {"--out", "empty"});
}

TEST(CliHardeningValues, NumbersOutOfTheOptionsRangeSayTheRangeAndTheValue) {
  expect_refused(run_flashtune("list --d 4294967360"), {"--d", "4294967360", "2147483647"});
  const auto s = run_flashtune("predict --gpu h200 --B 1 --N 128 --d 64 --all --scale 1e-320");
  expect_refused(s, {"--scale", "1e-320", "too small"});
  EXPECT_EQ(s.output.find("scale=0"), std::string::npos) << s.output;
}

}  // namespace
