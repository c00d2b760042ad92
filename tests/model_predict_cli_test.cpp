// `flashtune predict` from the outside: bad input gets exactly one line naming the value, field,
// file or position and exit code 2; good input gets a ranked table or JSON. No GPU needed.
#include <gtest/gtest.h>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_test_support.h"
#include "kernels/traits/variants.h"

namespace flashtune {
namespace {

using Result = testing_support::CommandResult;

Result predict(const std::string& args) { return testing_support::run_flashtune("predict " + args); }

// A d with at least one compiled config, and that config.
const TileConfig& some_config() { return compiled_configs().front(); }
std::string workload_args() { return "--B 4 --N 1000 --d " + std::to_string(some_config().d); }
std::string config_args(const TileConfig& c) {
  return std::string("--variant ") + variant_name(c.variant) + " --Br " + std::to_string(c.Br) + " --Bc " +
         std::to_string(c.Bc) + " --layout " + layout_name(c.layout);
}

void expect_error(const Result& r, const std::string& line) {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output, "flashtune predict: " + line + "\n");
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string p = testing::TempDir() + "flashtune_predict_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(p) << text;
  return p;
}

// A whole profile (the tests' fixture, measured on an H200) with `coefficients`: predict reads a
// profile through the one profile reader, so a fragment holding coefficients alone is refused.
std::string profile_with(const std::string& name, const nlohmann::json& coefficients) {
  std::ifstream in(std::string(FLASHTUNE_TEST_GPU_DIR) + "/../../tests/data/fixture_profile.json");
  nlohmann::json p = nlohmann::json::parse(in);
  p["coefficients"] = coefficients;
  return write_temp(name, p.dump());
}

std::string shipped_h200() {
  std::ifstream in(std::string(FLASHTUNE_TEST_GPU_DIR) + "/nvidia-h200.json");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Inference operands: --B batch x --heads entries, --kv-heads dividing --heads, --kv-len keys;
// the JSON's workload carries them, and each bad value is refused in one line.
TEST(PredictCli, KvCacheAndGroupedHeads) {
  const std::string d = std::to_string(some_config().d);
  const Result r =
      predict("--gpu h200 --B 2 --heads 8 --kv-heads 2 --N 4 --kv-len 4097 --d " + d + " --causal --all --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("workload").at("B"), 16);
  EXPECT_EQ(j.at("workload").at("N"), 4);
  EXPECT_EQ(j.at("workload").at("kv_len"), 4097);
  EXPECT_EQ(j.at("workload").at("kv_group"), 4);
  const Result text =
      predict("--gpu h200 --B 2 --heads 8 --kv-heads 2 --N 4 --kv-len 4097 --d " + d + " --causal --all");
  EXPECT_NE(text.output.find("B=16 N=4 kv=4097 g=4"), std::string::npos) << text.output;
  expect_error(predict("--gpu h200 --B 2 --heads 6 --kv-heads 4 --N 4 --d " + d),
               "heads=6 is not a multiple of kv-heads=4 (each K/V head serves the same number of query heads)");
  expect_error(predict("--gpu h200 --B 2 --N 64 --kv-len 32 --causal --d " + d),
               "causal with N=64 above kv_len=32: bottom-right alignment would leave the first query rows no key");
  expect_error(predict("--gpu h200 --B 2 --N 4 --kv-len 0 --d " + d), "kv-len=0: must be >= 1");
}

// A decode config explains its own terms: the split kernel, the combine and the launch; one block's
// stream from its tile (on the fp32 path the warp instructions, the traits' count and the compiled
// extras); DRAM bytes by kind, K/V once per K/V head.
TEST(PredictCli, DecodeExplainsItsStream) {
  const std::string args =
      "--gpu h200 --B 1 --heads 32 --N 1 --kv-len 16384 --d 128 --causal --config decode/d128/br16xbc16/swizzled/s2";
  const Result j = predict(args + " --json");
  ASSERT_EQ(j.exit_code, 0) << j.output;
  const nlohmann::json d = nlohmann::json::parse(j.output)["results"][0]["decode"];
  ASSERT_TRUE(d.is_object()) << j.output;
  EXPECT_DOUBLE_EQ(d["kv_bytes"].get<double>(), 2.0 * 4 * 32 * 16384 * 128);
  EXPECT_NEAR(d["dram_bytes"].get<double>(),
              d["kv_bytes"].get<double>() + d["qo_bytes"].get<double>() + d["writeback_bytes"].get<double>(), 1.0);
  EXPECT_EQ(d["tile_traits_instructions"].get<double>(), 2576.0);
  EXPECT_EQ(d["tile_compiled_instructions"].get<double>(), 895.0);  // configs/kernels/compiled_instructions.json
  EXPECT_GT(d["tile_cycles"].get<double>(), (2576.0 + 895.0) * d["tile_stretch"].get<double>() - 1);
  EXPECT_GT(d["split_kernel_s"].get<double>(), 0.0);
  const Result t = predict(args);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("decode time: split kernel"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("traits 2576 + compiled 895"), std::string::npos) << t.output;
  EXPECT_EQ(t.output.find("K/V tile visits"), std::string::npos) << t.output;  // the tiled families' lines
}

TEST(PredictCli, UnknownGpuListsTheKnownOnes) {
  const Result r = predict("--gpu v100 " + workload_args() + " --all");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output.rfind("flashtune predict: unknown GPU 'v100' (known: ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("nvidia-h200"), std::string::npos);
}

TEST(PredictCli, SpecMissingAFieldNamesFileAndField) {
  auto doc = nlohmann::json::parse(shipped_h200());
  doc.erase("l2_bandwidth_gbs");
  const std::string p = write_temp("missing.json", doc.dump(2));
  expect_error(predict("--spec '" + p + "' " + workload_args() + " --all"), p + ": missing field 'l2_bandwidth_gbs'");
}

TEST(PredictCli, MalformedSpecGivesThePosition) {
  std::string text = shipped_h200();
  text.insert(text.find("\"sm_count\""), "oops ");
  const std::string p = write_temp("malformed.json", text);
  const Result r = predict("--spec '" + p + "' " + workload_args() + " --all");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output.rfind("flashtune predict: " + p + ": malformed JSON: ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("line "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "one line";
}

TEST(PredictCli, UnsupportedHeadDimension) {
  const Result r = predict("--gpu h200 --B 1 --N 128 --d 48 --all");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output.rfind("flashtune predict: unsupported d=48 (compiled: ", 0), 0u) << r.output;
}

TEST(PredictCli, TileTheVariantDoesNotAllow) {
  const TileConfig& c = some_config();
  expect_error(predict("--gpu h200 " + workload_args() + " --variant " + variant_name(c.variant) +
                       " --Br 48 --Bc " + std::to_string(c.Bc)),
               std::string(variant_name(c.variant)) + "/d" + std::to_string(c.d) + "/br48xbc" + std::to_string(c.Bc) +
                   "/" + layout_name(Layout::Plain) + ": Br=48 is not supported (Br in {16, 32, 64, 128}; 192 for wgmma16)");
  // row_reg reads K/V as broadcasts and has no layout switch.
  const TileConfig bad{Variant::RowReg, 64, 128, 32, Layout::Padded};
  const Result r = predict("--gpu h200 --B 1 --N 128 --d 64 " + config_args(bad));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "flashtune predict: " + bad.name() + ": " + *tile_rejection(bad) + "\n");
}

// The element type: an unknown one is named, bf16 ranks only bf16 configs, and a GPU without bf16
// tensor cores refuses in one line with exit 4 (nothing to rank there).
TEST(PredictCli, DtypeIsCheckedAndFiltersTheConfigs) {
  expect_error(predict("--gpu h200 --B 1 --N 128 --d 64 --all --dtype fp8"),
               "unknown dtype 'fp8' (known: fp32, bf16, fp16)");
  bool any_bf16 = false;
  for (const TileConfig& c : compiled_configs()) any_bf16 |= c.dtype == DType::Bf16 && c.d == 64;
  if (!any_bf16) GTEST_SKIP() << "no bf16 config of d=64 in this kernel set";
  const Result r = predict("--gpu h100 --B 500 --N 2048 --d 64 --all --dtype bf16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_FALSE(j["results"].empty());
  for (const auto& row : j["results"])
    EXPECT_EQ(parse_config_name(row["config"].get<std::string>())->dtype, DType::Bf16) << row.dump();
  const Result pascal = predict("--gpu gtx-1080 --B 500 --N 2048 --d 64 --all --dtype bf16");
  EXPECT_EQ(pascal.exit_code, 4) << pascal.output;
  EXPECT_EQ(pascal.output.find('\n'), pascal.output.size() - 1) << pascal.output;
  EXPECT_NE(pascal.output.find("needs BF16 tensor cores"), std::string::npos) << pascal.output;
}

TEST(PredictCli, BadValuesAreNamed) {
  expect_error(predict("--gpu h200 --B 0 --N 128 --d 64 --all"), "B=0: must be >= 1");
  expect_error(predict("--gpu h200 --B 1 --N 128 --d 64 --variant fast --Br 64 --Bc 32"),
               "unknown variant 'fast' (known: row_smem, row_reg, warp_groups, regtile_2d, mma_3xtf32, mma_1xtf32, mma16, wgmma16, decode, wgmma_3xtf32, wgmma_1xtf32)");
  expect_error(predict("--gpu h200 --B 1 --N 128 --d 64"),
               "name a config (--config NAME, or --variant, --Br, --Bc [--layout]) or rank them all with --all");
  const std::string prof = profile_with("profile.json", {{"fp32_eff", 0.5}});
  const Result r = predict("--gpu h200 " + workload_args() + " --all --profile '" + prof + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output.rfind("flashtune predict: " + prof + ": unknown coefficient 'fp32_eff' (known: ", 0), 0u)
      << r.output;
}

TEST(PredictCli, AllRanksEveryCompiledConfigOfTheHeadDimension) {
  const Result r = predict("--gpu h200 " + workload_args() + " --all --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  std::size_t expected = 0;  // the default precision fp32 ranks the fp32-accurate configs only
  // (decode configs serve N <= 64 only: not this workload)
  for (const TileConfig& c : compiled_configs())
    expected += c.d == some_config().d && c.dtype == DType::Fp32 && variant_precision(c.variant) == Precision::Fp32 &&
                c.variant != Variant::Decode;
  EXPECT_EQ(j["results"].size() + j["refused"].size(), expected);
  double last = 0;
  for (const auto& row : j["results"]) {
    EXPECT_GE(row["time_s"].get<double>(), last);
    last = row["time_s"].get<double>();
    EXPECT_GT(row["baselines"]["seed_s"].get<double>(), 0);
    EXPECT_FALSE(row["smem_sites"].empty());
  }
}

TEST(PredictCli, ProfileCoefficientsChangeTheTime) {
  const TileConfig& c = some_config();
  const std::string args = "--gpu h200 " + workload_args() + " " + config_args(c) + " --json";
  const Result base = predict(args);
  const std::string prof =
      profile_with("slow.json", {{"fp32_efficiency", 0.05}, {"issue_efficiency", 0.05}, {"smem_efficiency", 0.05}});
  const Result slow = predict(args + " --profile '" + prof + "'");
  ASSERT_EQ(base.exit_code, 0) << base.output;
  ASSERT_EQ(slow.exit_code, 0) << slow.output;
  EXPECT_GT(nlohmann::json::parse(slow.output)["results"][0]["time_s"].get<double>(),
            2 * nlohmann::json::parse(base.output)["results"][0]["time_s"].get<double>());
}


// Fitted by default: the GPU's shipped profile (profiles/<spec>.json in the data folder) when it
// holds fitted coefficients, named in the first line and the JSON; --spec-only reads none.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

TEST(PredictCli, ShippedProfileIsTheDefaultAndNamed) {
  const std::string args = "--gpu h200 --B 10 --N 2048 --d 64 --variant mma_3xtf32 --Br 64 --Bc 64 --layout swizzled";
  const Result fitted = predict(args + " --json"), spec_only = predict(args + " --json --spec-only");
  ASSERT_EQ(fitted.exit_code, 0) << fitted.output;
  ASSERT_EQ(spec_only.exit_code, 0) << spec_only.output;
  const auto f = nlohmann::json::parse(fitted.output), s = nlohmann::json::parse(spec_only.output);
  const std::filesystem::path shipped = std::filesystem::path(FLASHTUNE_TEST_GPU_DIR) / ".." / ".." / "profiles" / "nvidia-h200.json";
  ASSERT_TRUE(f.at("profile").is_string()) << f.at("profile");
  EXPECT_TRUE(std::filesystem::equivalent(f.at("profile").get<std::string>(), shipped));
  EXPECT_EQ(f.at("coefficients_from"), f.at("profile"));
  EXPECT_TRUE(s.at("profile").is_null());
  EXPECT_EQ(s.at("coefficients_from"), "defaults (--spec-only)");
  EXPECT_NE(f.at("results")[0].at("time_s"), s.at("results")[0].at("time_s"));
  // The same as naming the shipped profile.
  const Result named = predict(args + " --json --profile '" + f.at("profile").get<std::string>() + "'");
  ASSERT_EQ(named.exit_code, 0) << named.output;
  EXPECT_EQ(nlohmann::json::parse(named.output).at("results")[0].at("time_s"), f.at("results")[0].at("time_s"));
  // The table's first line names it.
  const Result table = predict(args);
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(first_line(table.output).find("coefficients: " + f.at("profile").get<std::string>()), std::string::npos)
      << table.output;
  EXPECT_NE(first_line(predict(args + " --spec-only").output).find("coefficients: defaults (--spec-only)"),
            std::string::npos);
}

TEST(PredictCli, GpuWithoutShippedProfileUsesTheDefaults) {
  const Result r = predict("--gpu a100 --B 10 --N 2048 --d 64 --all");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(first_line(r.output).find("coefficients: defaults (no fitted profile shipped for nvidia-a100-sxm-80gb)"),
            std::string::npos)
      << r.output;
}

TEST(PredictCli, SpecOnlyAndProfileExcludeEachOther) {
  const Result r = predict("--gpu h200 --B 10 --N 2048 --d 64 --all --spec-only --profile x.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("excludes"), std::string::npos) << r.output;
}

TEST(PredictCli, DataDirWithoutDataIsNamed) {
  const std::string dir = testing::TempDir() + "flashtune_predict_no_data";
  std::filesystem::create_directories(dir);
  const Result r = testing_support::run_flashtune("--data-dir '" + dir + "' predict --gpu h200 --B 1 --N 128 --d 64 --all");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(dir + "/configs/gpus"), std::string::npos) << r.output;
}

// --precision: fp32 (default) ranks only fp32-accurate configs (SIMT and mma_3xtf32), tf32 admits
// mma_1xtf32 too; a bad value or a TF32-only config without tf32 is one line, exit 2.
TEST(PredictCli, UnknownPrecisionIsNamed) {
  expect_error(predict("--gpu h200 --B 10 --N 2048 --d 64 --all --precision fp16"),
               "unknown precision 'fp16' (known: fp32, tf32)");
}

std::vector<std::string> ranked_configs(const Result& r) {
  std::vector<std::string> names;
  const nlohmann::json doc = nlohmann::json::parse(r.output);  // named: at() returns into it
  for (const auto& row : doc.at("results")) names.push_back(row.at("config").get<std::string>());
  return names;
}

std::size_t count_prefix(const std::vector<std::string>& names, const std::string& prefix) {
  std::size_t n = 0;
  for (const std::string& s : names) n += s.rfind(prefix, 0) == 0;
  return n;
}

TEST(PredictCli, AllListsTf32ConfigsOnlyUnderPrecisionTf32) {
  const Result fp32 = predict("--gpu h200 --B 10 --N 2048 --d 64 --all --json");
  const Result tf32 = predict("--gpu h200 --B 10 --N 2048 --d 64 --all --json --precision tf32");
  ASSERT_EQ(fp32.exit_code, 0) << fp32.output;
  ASSERT_EQ(tf32.exit_code, 0) << tf32.output;
  const auto strict = ranked_configs(fp32), loose = ranked_configs(tf32);
  EXPECT_GT(count_prefix(strict, "mma_3xtf32/"), 0u);
  EXPECT_EQ(count_prefix(strict, "mma_1xtf32/"), 0u);
  EXPECT_GT(count_prefix(loose, "mma_3xtf32/"), 0u);
  EXPECT_GT(count_prefix(loose, "mma_1xtf32/"), 0u);
  EXPECT_EQ(loose.size(), strict.size() + count_prefix(loose, "mma_1xtf32/") + count_prefix(loose, "wgmma_1xtf32/"));
  EXPECT_EQ(nlohmann::json::parse(fp32.output).at("precision"), "fp32");
  EXPECT_EQ(nlohmann::json::parse(tf32.output).at("precision"), "tf32");
  const nlohmann::json loose_doc = nlohmann::json::parse(tf32.output);
  for (const auto& row : loose_doc.at("results"))
    EXPECT_EQ(row.at("precision"), row.at("config").get<std::string>().rfind("mma_1xtf32/", 0) == 0 ||
                                           row.at("config").get<std::string>().rfind("wgmma_1xtf32/", 0) == 0
                                       ? "tf32"
                                       : "fp32");
  // The table says the same.
  const Result table = predict("--gpu h200 --B 10 --N 2048 --d 64 --all");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("mma_3xtf32/"), std::string::npos);
  EXPECT_EQ(table.output.find("mma_1xtf32/"), std::string::npos);
  EXPECT_NE(table.output.find("precision fp32"), std::string::npos);
}

TEST(PredictCli, NamedTf32ConfigNeedsPrecisionTf32) {
  const std::string config = "--variant mma_1xtf32 --Br 64 --Bc 64 --layout swizzled";
  expect_error(predict("--gpu h200 --B 10 --N 2048 --d 64 " + config),
               "mma_1xtf32 is TF32-accurate only (rel L2 up to 1e-02): pass --precision tf32 to use it");
  expect_error(predict("--gpu h200 --B 10 --N 2048 --d 64 --all --variant mma_1xtf32"),
               "mma_1xtf32 is TF32-accurate only (rel L2 up to 1e-02): pass --precision tf32 to use it");
  const Result ok = predict("--gpu h200 --B 10 --N 2048 --d 64 " + config + " --precision tf32 --json");
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_EQ(ranked_configs(ok), std::vector<std::string>{"mma_1xtf32/d64/br64xbc64/swizzled"});
  // 3xTF32 is fp32-accurate: no flag needed.
  EXPECT_EQ(predict("--gpu h200 --B 10 --N 2048 --d 64 --variant mma_3xtf32 --Br 64 --Bc 64 --layout swizzled").exit_code,
            0);
}

}  // namespace
}  // namespace flashtune
