// Plots and report from the small fixture profile (tests/data/fixture_profile.json): every plot is
// drawn, each SVG is well-formed XML and carries the fixture's data; bad input gives one clear
// line and exit code 2. Skips the drawing tests when gnuplot is not installed.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/config_catalog.h"
#include "model/counts.h"
#include "plots/drawer.h"
#include "plots/accuracy.h"
#include "plots/gnuplot_runner.h"
#include "model/gpu_spec.h"
#include "plots/plot_points.h"
#include "plots/plot_profile.h"
#include "plots/plot_set.h"

namespace {

namespace fs = std::filesystem;
using flashtune::plots::find_gnuplot;

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

CommandResult run_shell(const std::string& cmd) {
  CommandResult r;
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  std::size_t got = 0;
  while ((got = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, got);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

CommandResult run_flashtune(const std::string& args, const std::string& env = "") {
  return run_shell(env + " '" FLASHTUNE_BINARY "' " + args);
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A .dat file's data blocks (gnuplot's `index`: separated by two blank lines), each its lines.
std::vector<std::vector<std::string>> dat_blocks(const fs::path& p) {
  std::vector<std::vector<std::string>> blocks(1);
  std::istringstream in(read_text(p));
  int blank = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) {
      if (++blank == 2) blocks.emplace_back();
      continue;
    }
    blank = 0;
    blocks.back().push_back(line);
  }
  return blocks;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("flashtune_plots_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Minimal XML well-formedness: every start tag is closed in order, comments / declarations /
// CDATA skipped, attribute values quoted. Returns "" when well-formed, else what went wrong.
std::string xml_problem(const std::string& s) {
  std::vector<std::string> open;
  std::size_t i = 0;
  while ((i = s.find('<', i)) != std::string::npos) {
    if (s.compare(i, 4, "<!--") == 0) {
      const std::size_t e = s.find("-->", i);
      if (e == std::string::npos) return "unterminated comment";
      i = e + 3;
      continue;
    }
    if (s.compare(i, 9, "<![CDATA[") == 0) {
      const std::size_t e = s.find("]]>", i);
      if (e == std::string::npos) return "unterminated CDATA";
      i = e + 3;
      continue;
    }
    // Find the tag end, honouring quoted attribute values.
    std::size_t j = i + 1;
    char quote = 0;
    for (; j < s.size(); ++j) {
      if (quote) {
        if (s[j] == quote) quote = 0;
      } else if (s[j] == '"' || s[j] == '\'') {
        quote = s[j];
      } else if (s[j] == '>') {
        break;
      }
    }
    if (j >= s.size()) return "unterminated tag at byte " + std::to_string(i);
    const std::string tag = s.substr(i + 1, j - i - 1);
    i = j + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1, tag.find_first_of(" \t\n") - 1);
      if (open.empty() || open.back() != name) return "unexpected </" + name + ">";
      open.pop_back();
      continue;
    }
    if (tag.back() == '/') continue;
    open.push_back(tag.substr(0, tag.find_first_of(" \t\n")));
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  return "";
}

int count_of(const std::string& s, const std::string& what) {
  int n = 0;
  for (std::size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

TEST(PlotsXmlCheck, CatchesBrokenDocuments) {
  EXPECT_EQ(xml_problem("<svg a=\"1>\"><g><path d='M 1 2'/></g></svg>"), "");
  EXPECT_NE(xml_problem("<svg><g></svg>"), "");
  EXPECT_NE(xml_problem("<svg><g>"), "");
}

TEST(PlotsProfile, ReadsFixtureKeepingOnlyOkMeasurements) {
  const auto p = flashtune::plots::load_plot_profile(FLASHTUNE_FIXTURE_PROFILE);
  EXPECT_EQ(p.gpu_name, "NVIDIA H200");
  EXPECT_EQ(p.workloads.size(), 3u);
  EXPECT_EQ(p.measurements_total, 31);
  EXPECT_EQ(p.ok.size(), 30u);
  EXPECT_EQ(p.ok[0].config.name(), "row_smem/d64/br64xbc32/plain");
  EXPECT_EQ(p.ok[0].registers, 104);
  EXPECT_TRUE(p.ok[0].counters.empty());  // N=512 rows carry no counters
  EXPECT_EQ(p.ok[1].counters.size(), 5u);
  EXPECT_EQ(p.fitted_coefficients, 0);
}

TEST(PlotsHeatmapSelection, DefaultsToTheFirstWorkloadsAndRejectsUnknownNames) {
  flashtune::plots::PlotProfile p;
  p.path = "p.json";
  for (int i = 0; i < 9; ++i) p.workloads.push_back({"w" + std::to_string(i), flashtune::Workload{1, 64, 64}});
  const auto first = flashtune::plots::select_heatmap_workloads(p, "");
  ASSERT_EQ(first.size(), std::size_t(flashtune::plots::kDefaultHeatmaps));
  EXPECT_EQ(first.front(), "w0");
  EXPECT_EQ(first.back(), "w" + std::to_string(flashtune::plots::kDefaultHeatmaps - 1));
  EXPECT_EQ(flashtune::plots::select_heatmap_workloads(p, "all").size(), 9u);
  EXPECT_EQ(flashtune::plots::select_heatmap_workloads(p, "w8, w2"), (std::vector<std::string>{"w8", "w2"}));
  try {
    flashtune::plots::select_heatmap_workloads(p, "w1,w99");
    ADD_FAILURE() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("p.json has no workload 'w99'"), std::string::npos) << e.what();
  }
}

// Every variant (the tensor-core pair included) has its own colour, so no two share a legend
// entry's look, and the names of the new variants parse back from profile config names.
TEST(PlotsDrawer, EveryVariantHasItsOwnColour) {
  std::set<std::string> colours;
  for (flashtune::Variant v : flashtune::kAllVariants) {
    const std::string c = flashtune::plots::variant_colour(v);
    EXPECT_EQ(c.size(), 7u) << flashtune::variant_name(v);
    EXPECT_EQ(c[0], '#') << flashtune::variant_name(v);
    EXPECT_NE(c, "#000000") << flashtune::variant_name(v) << " falls through to the default colour";
    colours.insert(c);
  }
  EXPECT_EQ(colours.size(), std::size(flashtune::kAllVariants));
  EXPECT_EQ(flashtune::parse_config_name("mma_1xtf32/d64/br64xbc64/swizzled")->variant, flashtune::Variant::MmaTf32x1);
  EXPECT_EQ(flashtune::parse_config_name("mma_3xtf32/d128/br128xbc64/padded")->variant, flashtune::Variant::MmaTf32x3);
  const auto blocks = flashtune::plots::variant_blocks(
      {{flashtune::Variant::RowReg, "1\t2\n"}, {flashtune::Variant::MmaTf32x1, "3\t4\n"}});
  const auto var = [&](const std::string& name) {
    for (const auto& [k, v] : blocks.vars)
      if (k == name) return v;
    return std::string("(missing)");
  };
  EXPECT_NE(var("colours").find("#56B4E9"), std::string::npos) << var("colours");
  EXPECT_NE(var("variants").find("mma_1xtf32"), std::string::npos) << var("variants");
}

// A profile drawn against a GPU without TF32 tensor cores: its tensor-core measurements are left
// out with the model's reason (they used to end the whole plot with exit 2), the rest is drawn.
TEST(PlotsPoints, TensorCoreMeasurementsAreSkippedOnAGpuWithoutThem) {
  const flashtune::plots::PlotProfile p = flashtune::plots::load_plot_profile(FLASHTUNE_SHIPPED_H200_PROFILE);
  const auto dir = flashtune::model::default_gpu_spec_dir();
  std::vector<std::string> skipped;
  const auto points = flashtune::plots::predict_points(p, flashtune::model::find_gpu_spec("gtx-1080", dir),
                                                       flashtune::model::Coefficients{}, skipped);
  std::size_t tensor = 0;
  for (const auto& m : p.ok) tensor += flashtune::uses_tensor_cores(m.config.variant) ? 1 : 0;
  ASSERT_GT(tensor, 0u);
  // (SIMT configs the GTX 1080 cannot hold, e.g. over its shared memory, are skipped too.)
  std::size_t for_tensor_cores = 0;
  for (const std::string& why : skipped)
    for_tensor_cores += why.find("needs TF32 tensor cores (compute capability >= 8.0)") != std::string::npos ? 1 : 0;
  EXPECT_EQ(for_tensor_cores, tensor);
  EXPECT_EQ(points.size() + skipped.size(), p.ok.size());
  EXPECT_GT(points.size(), 0u);
  for (const auto& pt : points) EXPECT_FALSE(flashtune::uses_tensor_cores(pt.m.config.variant));
  // On the H200 every measurement is drawn.
  skipped.clear();
  EXPECT_EQ(flashtune::plots::predict_points(p, flashtune::model::find_gpu_spec("h200", dir),
                                             flashtune::model::Coefficients{}, skipped).size(), p.ok.size());
  EXPECT_TRUE(skipped.empty());
}

TEST(PlotsAccuracy, MapeMedianMax) {
  const auto s = flashtune::plots::summarize_accuracy({1.05, 2.0, 2.5}, {1.0, 2.0, 2.0});
  EXPECT_EQ(s.n, 3);
  EXPECT_NEAR(s.mape, (5.0 + 0.0 + 25.0) / 3, 1e-9);
  EXPECT_NEAR(s.median_ape, 5.0, 1e-9);
  EXPECT_NEAR(s.max_ape, 25.0, 1e-9);
  EXPECT_EQ(s.within_10, 2);
}

TEST(PlotsCli, DrawsEveryPlotAsWellFormedSvgWithData) {
  if (!find_gnuplot()) GTEST_SKIP() << "gnuplot not installed";
  const fs::path dir = fresh_dir("draw");
  const auto r = run_flashtune("plot --profile '" FLASHTUNE_FIXTURE_PROFILE "' --out '" + dir.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Expected number of point markers per SVG: accuracy and roofline one per measurement (30);
  // time_vs_n 3 N x 2 panels (best config, best of the worst variant); bank_conflicts 20 with
  // counters, in each of its two panels; heatmaps and pipes are cells (checked below).
  const std::vector<std::pair<std::string, int>> expected = {
      {"accuracy", 30},     {"time_vs_n", 3 * 2}, {"heatmap_n512", 0}, {"heatmap_n1024", 0},
      {"heatmap_n2048", 0}, {"roofline", 30},     {"bank_conflicts", 2 * 20}, {"pipes", 0}};
  for (const auto& [stem, points] : expected) {
    SCOPED_TRACE(stem);
    const fs::path svg = dir / (stem + ".svg");
    ASSERT_TRUE(fs::exists(svg));
    ASSERT_TRUE(fs::exists(dir / (stem + ".png")));
    ASSERT_TRUE(fs::exists(dir / (stem + ".dat")));
    const std::string text = read_text(svg);
    EXPECT_EQ(xml_problem(text), "");
    EXPECT_NE(text.find("<svg"), std::string::npos);
    EXPECT_NE(text.find("NVIDIA H200"), std::string::npos);  // the title names the GPU
    EXPECT_GE(count_of(text, "<path"), 10);
    // gnuplot draws each point marker as a <use xlink:href='#gpPt..'> element.
    EXPECT_GE(count_of(text, "<use "), points);
  }
  // Accuracy: three panels of 30 points each.
  EXPECT_GE(count_of(read_text(dir / "accuracy.svg"), "<use "), 90);
  // The roofline carries its ceilings' labels.
  const std::string roof = read_text(dir / "roofline.svg");
  EXPECT_NE(roof.find("DRAM 4800 GB/s"), std::string::npos);
  EXPECT_NE(roof.find("FP32"), std::string::npos);
  // Each arithmetic pipe's ceiling: the tensor-core points sit above FP32's (issue 24).
  EXPECT_NE(roof.find("tensor TF32 535 TFLOP/s"), std::string::npos);
  EXPECT_NE(roof.find("tensor bf16/fp16 1071 TFLOP/s"), std::string::npos);
  // Axis labels carry units.
  EXPECT_NE(read_text(dir / "accuracy.svg").find("measured time (ms)"), std::string::npos);
  EXPECT_NE(read_text(dir / "time_vs_n.svg").find("kernel time (ms)"), std::string::npos);
  EXPECT_NE(read_text(dir / "bank_conflicts.svg").find("predicted wavefronts (millions)"), std::string::npos);
  // Heatmaps: every (Bc, Br) cell of the .dat is labelled with its measured and predicted time.
  const std::string heat = read_text(dir / "heatmap_n1024.svg");
  EXPECT_NE(heat.find("Br (query rows per block)"), std::string::npos);
  std::istringstream cells(read_text(dir / "heatmap_n1024.dat"));
  int labelled = 0;
  for (std::string line; std::getline(cells, line) && !line.empty();) {
    double bc = 0, br = 0, measured = 0, predicted = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%lf %lf %lf %lf", &bc, &br, &measured, &predicted), 4) << line;
    for (double v : {measured, predicted}) {
      char text[48];
      std::snprintf(text, sizeof text, ">%.3g</text>", v);
      EXPECT_NE(heat.find(text), std::string::npos) << text;
    }
    ++labelled;
  }
  EXPECT_EQ(labelled, 4);  // the fixture measures 4 tiles on n1024
  // Pipes: a row per workload, named with its best config and measured time.
  const std::string pipes = read_text(dir / "pipes.svg");
  for (const char* w : {"n512: ", "n1024: ", "n2048: "}) EXPECT_NE(pipes.find(w), std::string::npos) << w;
  EXPECT_NE(pipes.find("model total"), std::string::npos);
  fs::remove_all(dir);
}

// The bank-conflict plot compares ncu's op_ld + op_st with the model's loads and stores only:
// regtile_2d copies its K/V tiles with cp.async (op_ldgsts in ncu), which must stay out.
TEST(PlotsCli, BankConflictsCompareLoadsAndStoresWithoutAsyncCopies) {
  if (!find_gnuplot()) GTEST_SKIP() << "gnuplot not installed";
  const fs::path dir = fresh_dir("bank");
  ASSERT_EQ(run_flashtune("plot --profile '" FLASHTUNE_FIXTURE_PROFILE "' --out '" + dir.string() + "'").exit_code, 0);
  double plotted = 0;  // column 1: the model's wavefronts (millions), every row of every block
  int rows = 0;
  std::istringstream dat(read_text(dir / "bank_conflicts.dat"));
  for (std::string line; std::getline(dat, line);)
    if (!line.empty()) plotted += std::stod(line), ++rows;
  double ld_st = 0, async = 0;
  flashtune::model::ConfigCatalog catalog;
  for (const auto& m : flashtune::plots::load_plot_profile(FLASHTUNE_FIXTURE_PROFILE).ok) {
    if (!m.counters.count("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")) continue;
    const auto c = flashtune::model::count_work(m.workload, catalog.analysis(m.config));
    ld_st += (c.smem_load_wavefronts + c.smem_store_wavefronts) / 1e6;
    async += c.smem_async_copy_wavefronts / 1e6;
  }
  EXPECT_EQ(rows, 20);
  // The fixture's regtile_2d rows do copy with cp.async: counting them would miss the tolerance
  // below by 100x or more.
  EXPECT_GT(async, 1e-3 * ld_st);
  EXPECT_NEAR(plotted, ld_st, 1e-5 * ld_st);
  fs::remove_all(dir);
}

// time_vs_n: points are the measurements, lines the model over a dense N grid.
TEST(PlotsCli, TimeVsNPointsAreMeasuredAndLinesAreTheModel) {
  if (!find_gnuplot()) GTEST_SKIP() << "gnuplot not installed";
  const fs::path dir = fresh_dir("tvn");
  ASSERT_EQ(run_flashtune("plot --profile '" FLASHTUNE_FIXTURE_PROFILE "' --out '" + dir.string() + "'").exit_code, 0);
  // Blocks alternate: measured (N, ms) then model (N, ms), separated by two blank lines.
  const std::vector<std::vector<std::string>> blocks = dat_blocks(dir / "time_vs_n.dat");
  ASSERT_EQ(blocks.size(), 4u);  // 2 panels x 1 series (B=8, N = 512, 1024, 2048)
  const auto profile = flashtune::plots::load_plot_profile(FLASHTUNE_FIXTURE_PROFILE);
  for (std::size_t b = 0; b < blocks.size(); b += 2) {
    ASSERT_EQ(blocks[b].size(), 3u);
    EXPECT_EQ(blocks[b][0].substr(0, 4), "512\t");
    // Each measured row is a fixture median.
    for (const std::string& row : blocks[b]) {
      const double ms = std::stod(row.substr(row.find('\t') + 1));
      bool found = false;
      for (const auto& m : profile.ok) found = found || std::fabs(m.median_ms - ms) < 1e-5 * ms;
      EXPECT_TRUE(found) << row;
    }
    EXPECT_GE(blocks[b + 1].size(), 20u);  // dense model line
  }
  fs::remove_all(dir);
}

// The decode plot (issue 26): from split sweeps, one panel per element type, one block per swept shape
// of two or more K/V lengths: keys, the time at the model's split, the best split's, the model's and
// the floor of Q + K + V + O bytes over the copy bandwidth (the spec's measured one). Either
// --profile or --decode, not both.
TEST(PlotsCli, DecodeTimeAgainstKeysWithTheBandwidthFloor) {
  if (!find_gnuplot()) GTEST_SKIP() << "gnuplot not installed";
  const fs::path dir = fresh_dir("decode");
  const std::string sweep = std::string(FLASHTUNE_SOURCE_DIR) + "/docs/results/h200-decode-sweep-bf16-write-80da91a.jsonl";
  const auto r = run_flashtune("plot --decode '" + sweep + "' --gpu h200 --out '" + dir.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(xml_problem(read_text(dir / "decode_vs_keys.svg")), "");
  const std::vector<std::vector<std::string>> blocks = dat_blocks(dir / "decode_vs_keys.dat");
  // 1 x 32/8 and 1 x 32/32 heads at Nq 1 and 4 (the d = 64 shape has one length).
  ASSERT_EQ(blocks.size(), 4u);
  for (const auto& b : blocks) {
    ASSERT_GE(b.size(), 3u);
    for (const std::string& row : b) {
      std::istringstream f(row);
      double keys, at, best, model, floor;
      ASSERT_TRUE(f >> keys >> at >> best >> model >> floor) << row;
      EXPECT_LE(best, at) << row;
      EXPECT_LT(floor, best) << row;  // nothing beats the copy bandwidth here
      EXPECT_GT(model, 0.0) << row;
    }
  }
  // The first series' first row: 1 x 32/8 heads x 4096 keys, bf16: (2 x 32 + 2 x 8 x 4096) x 128 x 2
  // bytes over 4233 GB/s.
  std::istringstream first(blocks[0][0]);
  double keys, at, best, model, floor;
  first >> keys >> at >> best >> model >> floor;
  EXPECT_EQ(keys, 4096);
  EXPECT_NEAR(floor, (2.0 * 32 + 2.0 * 8 * 4096) * 128 * 2 / 4233e9 * 1e3, 1e-6);
  EXPECT_NE(run_flashtune("plot --decode '" + sweep + "' --profile '" FLASHTUNE_FIXTURE_PROFILE "' --out '" +
                          dir.string() + "'").exit_code, 0);
  EXPECT_NE(run_flashtune("plot --out '" + dir.string() + "'").exit_code, 0);
  fs::remove_all(dir);
}

TEST(PlotsCli, HeatmapsOptionPicksWorkloadsAndNamesUnknownOnes) {
  if (!find_gnuplot()) GTEST_SKIP() << "gnuplot not installed";
  const fs::path dir = fresh_dir("heatpick");
  auto r = run_flashtune("plot --profile '" FLASHTUNE_FIXTURE_PROFILE "' --out '" + dir.string() + "' --heatmaps n1024");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "heatmap_n1024.svg"));
  EXPECT_FALSE(fs::exists(dir / "heatmap_n512.svg"));
  r = run_flashtune("plot --profile '" FLASHTUNE_FIXTURE_PROFILE "' --out '" + dir.string() + "' --heatmaps n1024,t99");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--heatmaps: " FLASHTUNE_FIXTURE_PROFILE " has no workload 't99'"), std::string::npos)
      << r.output;
  fs::remove_all(dir);
}

TEST(PlotsCli, ReportHasAccuracyTableBestConfigsAndPlots) {
  if (!find_gnuplot()) GTEST_SKIP() << "gnuplot not installed";
  const fs::path dir = fresh_dir("report");
  const auto r = run_flashtune("report --profile '" FLASHTUNE_FIXTURE_PROFILE "' --out '" + dir.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string md = read_text(dir / "report.md");
  EXPECT_NE(md.find("# flashtune report: NVIDIA H200"), std::string::npos);
  EXPECT_NE(md.find("| flashtune model | 30 |"), std::string::npos);
  EXPECT_NE(md.find("| pure roofline | 30 |"), std::string::npos);
  EXPECT_NE(md.find("| seed model | 30 |"), std::string::npos);
  EXPECT_NE(md.find("| n2048 |"), std::string::npos);
  EXPECT_NE(md.find("![accuracy](accuracy.png)"), std::string::npos);
  EXPECT_NE(md.find("default coefficients: the profile has none fitted"), std::string::npos);
  // The bank-conflict plot's note sums up the agreement of the 20 measurements with counters.
  EXPECT_NE(md.find("of 20 within 10%; conflict share: median |predicted - measured|"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "accuracy.png"));
  fs::remove_all(dir);
}

// An empty measurements array, for plot and report alike: one line naming the file, exit 2,
// nothing drawn.
TEST(PlotsCli, EmptyMeasurementsIsAUsageErrorForPlotAndReport) {
  const fs::path dir = fresh_dir("nomeas");
  const fs::path prof = dir / "none.json";
  std::ofstream(prof) << R"({"schema_version": 1, "kind": "flashtune-profile", "gpu": {"name": "NVIDIA H200",
    "spec": "nvidia-h200"}, "build": {}, "workloads": [], "measurements": [], "coefficients": {}})";
  for (const char* cmd : {"plot", "report"}) {
    SCOPED_TRACE(cmd);
    const auto r = run_flashtune(std::string(cmd) + " --profile '" + prof.string() + "' --out '" + (dir / "out").string() + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find(prof.string() + ": no measurements with status ok to plot"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "out" / "report.md"));
  }
  fs::remove_all(dir);
}

TEST(PlotsCli, MissingOrMalformedProfileNamesTheFile) {
  const fs::path dir = fresh_dir("badprof");
  const fs::path bad = dir / "bad.json";
  std::ofstream(bad) << "{\"kind\": \"flashtune-profile\", ";
  auto r = run_flashtune("plot --profile '" + bad.string() + "' --out '" + (dir / "out").string() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find(bad.string() + ": malformed JSON"), std::string::npos) << r.output;
  r = run_flashtune("report --profile '" + (dir / "absent.json").string() + "' --out '" + (dir / "out").string() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find((dir / "absent.json").string() + ": cannot open"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

TEST(PlotsCli, NoOkMeasurementsIsAUsageError) {
  const fs::path dir = fresh_dir("empty");
  const fs::path prof = dir / "empty.json";
  std::ofstream(prof) << R"({"schema_version": 1, "kind": "flashtune-profile", "gpu": {"name": "NVIDIA H200",
    "spec": "nvidia-h200"}, "build": {}, "workloads": [{"name": "t", "B": 1, "N": 64, "d": 64, "causal": false}],
    "measurements": [{"workload": "t", "config": "row_reg/d64/br64xbc32/plain", "status": "launch", "reason": "x"}]})";
  const auto r = run_flashtune("plot --profile '" + prof.string() + "' --out '" + (dir / "out").string() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find(prof.string() + ": no measurements with status ok to plot"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

TEST(PlotsCli, MissingGnuplotSaysWhatToInstall) {
  const fs::path dir = fresh_dir("nognuplot");
  fs::create_directories(dir / "emptybin");
  const auto r = run_flashtune("plot --profile '" FLASHTUNE_FIXTURE_PROFILE "' --out '" + (dir / "out").string() + "'",
                               "PATH='" + (dir / "emptybin").string() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("gnuplot not found: install it with `apt-get install gnuplot-nox` (or run "
                          "scripts/install-deps.sh)"),
            std::string::npos)
      << r.output;
  fs::remove_all(dir);
}

// report without gnuplot still writes the tables, says why there are no plots, and exits 0.
TEST(PlotsCli, ReportWithoutGnuplotWritesTablesAndSaysWhatToInstall) {
  const fs::path dir = fresh_dir("reportnognuplot");
  fs::create_directories(dir / "emptybin");
  const auto r = run_flashtune("report --profile '" FLASHTUNE_FIXTURE_PROFILE "' --out '" + (dir / "out").string() + "'",
                               "PATH='" + (dir / "emptybin").string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("gnuplot not found"), std::string::npos) << r.output;
  const std::string md = read_text(dir / "out" / "report.md");
  EXPECT_NE(md.find("| flashtune model | 30 |"), std::string::npos);
  EXPECT_NE(md.find("No plots: gnuplot not found"), std::string::npos);
  EXPECT_EQ(md.find(".png"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "out" / "accuracy.svg"));
  fs::remove_all(dir);
}

}  // namespace
