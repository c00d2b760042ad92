// `flashtune run` and `flashtune list` as a user calls them: bad input gets one line and exit 2
// (also without GPU), a machine without GPU gets "needs a CUDA GPU" and exit 3; on a GPU machine,
// --check passes on the default config and .npy inputs give an O.npy matching the CPU reference.
#include <gtest/gtest.h>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cli_test_support.h"
#include "gpu_test_support.h"
#include "kernels/reference.h"
#include "kernels/traits/variants.h"
#include "tuner/config_select.h"
#include "tuner/npy.h"

namespace flashtune {
namespace {

using testing_support::run_flashtune;

std::string temp_path(const std::string& name) { return testing::TempDir() + "flashtune_cli_" + std::to_string(::getpid()) + "_" + name; }

// An error answer: the exit code and exactly one line, "flashtune run: <message>".
void expect_one_line_error(const testing_support::CommandResult& r, int code, const std::string& line) {
  EXPECT_EQ(r.exit_code, code) << r.output;
  EXPECT_EQ(r.output, line + "\n");
}

std::string valid_d() { return std::to_string(compiled_head_dims().front()); }

void write_inputs(const std::string& prefix, std::size_t B, std::size_t N, std::size_t d, std::vector<float>* q = nullptr,
                  std::vector<float>* k = nullptr, std::vector<float>* v = nullptr) {
  std::vector<float> data[3];
  for (int t = 0; t < 3; ++t) {
    data[t].resize(B * N * d);
    for (std::size_t i = 0; i < data[t].size(); ++i)
      data[t][i] = float(std::sin(0.37 * double(i) + 1.3 * t) * 2.0);
    npy::write_f32(prefix + "qkv"[t] + ".npy", {B, N, d}, data[t].data());
  }
  if (q) *q = data[0];
  if (k) *k = data[1];
  if (v) *v = data[2];
}

TEST(CliRun, UnsupportedHeadDim) {
  expect_one_line_error(run_flashtune("run --B 1 --N 64 --d 48"), 2,
                        "flashtune run: unsupported d=48 (compiled: " + join_ints(compiled_head_dims()) + ")");
}

TEST(CliRun, ZeroSequenceLength) {
  expect_one_line_error(run_flashtune("run --B 1 --N 0 --d " + valid_d()), 2, "flashtune run: N=0: must be >= 1");
  expect_one_line_error(run_flashtune("run --B -3 --N 8 --d " + valid_d()), 2, "flashtune run: B=-3: must be >= 1");
}

TEST(CliRun, BadQkvLayoutOrHeads) {
  const std::string w = "run --B 6 --N 64 --d " + valid_d();
  expect_one_line_error(run_flashtune(w + " --qkv-layout bshd"), 2,
                        "flashtune run: qkv-layout=bshd: must be one of bnd, bhnd, bnhd");
  expect_one_line_error(run_flashtune(w + " --qkv-layout bnhd --heads 0"), 2, "flashtune run: heads=0: must be >= 1");
}

// Inference operands: --heads query heads per batch entry, --kv-heads dividing them, --kv-len keys;
// each bad value refused in one line before any CUDA call.
TEST(CliRun, BadHeadsOrKvShape) {
  const std::string w = "run --B 2 --N 64 --d " + valid_d();
  expect_one_line_error(run_flashtune(w + " --heads 6 --kv-heads 4"), 2,
                        "flashtune run: heads=6 is not a multiple of kv-heads=4 (each K/V head serves the same "
                        "number of query heads)");
  expect_one_line_error(run_flashtune(w + " --kv-heads 0"), 2, "flashtune run: kv-heads=0: must be >= 1");
  expect_one_line_error(run_flashtune(w + " --kv-len 0"), 2, "flashtune run: kv-len=0: must be >= 1");
  expect_one_line_error(run_flashtune(w + " --kv-len 32 --causal"), 2,
                        "flashtune run: causal with N=64 above kv_len=32: bottom-right alignment would leave the "
                        "first query rows no key");
}

TEST(CliRun, MissingDimension) {
  expect_one_line_error(run_flashtune("run --B 1 --d " + valid_d()), 2,
                        "flashtune run: missing --N (or give --q/--k/--v)");
}

TEST(CliRun, MissingFile) {
  const std::string p = temp_path("missing_");
  write_inputs(p, 1, 16, std::size_t(compiled_head_dims().front()));
  std::remove((p + "v.npy").c_str());
  expect_one_line_error(run_flashtune("run --q " + p + "q.npy --k " + p + "k.npy --v " + p + "v.npy"), 2,
                        "flashtune run: missing file " + p + "v.npy");
}

TEST(CliRun, FilesGoTogether) {
  expect_one_line_error(run_flashtune("run --q a.npy --v c.npy"), 2,
                        "flashtune run: --q, --k and --v go together (missing --k)");
}

TEST(CliRun, WrongDtype) {
  const std::string p = temp_path("dtype_");
  const std::size_t d = std::size_t(compiled_head_dims().front());
  write_inputs(p, 1, 16, d);
  std::vector<double> q64(16 * d, 0.5);
  npy::write_f64(p + "q.npy", {1, 16, d}, q64.data());
  expect_one_line_error(run_flashtune("run --q " + p + "q.npy --k " + p + "k.npy --v " + p + "v.npy"), 2,
                        "flashtune run: " + p + "q.npy: dtype '<f8', expected '<f4'");
}

TEST(CliRun, WrongShape) {
  const std::string p = temp_path("shape_");
  const std::size_t d = std::size_t(compiled_head_dims().front());
  write_inputs(p, 2, 77, d);
  std::vector<float> k(2 * 77 * 2 * d, 0.0f);
  npy::write_f32(p + "k.npy", {2, 77, 2 * d}, k.data());
  expect_one_line_error(run_flashtune("run --q " + p + "q.npy --k " + p + "k.npy --v " + p + "v.npy"), 2,
                        "flashtune run: " + p + "k.npy: shape (2, 77, " + std::to_string(2 * d) +
                            "), expected (2, 77, " + std::to_string(d) + ")");
  // Dimensions given on the command line win over the files and are checked against them.
  write_inputs(p, 2, 77, d);
  expect_one_line_error(run_flashtune("run --N 78 --q " + p + "q.npy --k " + p + "k.npy --v " + p + "v.npy"), 2,
                        "flashtune run: " + p + "q.npy: shape (2, 77, " + std::to_string(d) +
                            "), expected (2, 78, " + std::to_string(d) + ")");
}

TEST(CliRun, NotThreeDimensional) {
  const std::string p = temp_path("rank_");
  write_inputs(p, 1, 16, 64);
  std::vector<float> flat(16 * 64, 0.0f);
  npy::write_f32(p + "q.npy", {16 * 64}, flat.data());
  expect_one_line_error(run_flashtune("run --q " + p + "q.npy --k " + p + "k.npy --v " + p + "v.npy"), 2,
                        "flashtune run: " + p + "q.npy: shape (1024,), expected 3 dimensions [B, N, d]");
}

TEST(CliRun, UnknownVariantListsKnown) {
  expect_one_line_error(run_flashtune("run --B 1 --N 64 --d " + valid_d() + " --variant fastest"), 2,
                        "flashtune run: unknown variant 'fastest' (known: row_smem, row_reg, warp_groups, regtile_2d, "
                        "mma_3xtf32, mma_1xtf32, mma16, wgmma16, decode, wgmma_3xtf32, wgmma_1xtf32)");
}

// --precision: a bad value is named with the known ones; a TF32-only variant needs tf32. Both
// before any CUDA call (exit 2 on any machine).
TEST(CliRun, UnknownPrecisionListsKnown) {
  expect_one_line_error(run_flashtune("run --B 1 --N 64 --d " + valid_d() + " --precision bogus"), 2,
                        "flashtune run: unknown precision 'bogus' (known: fp32, tf32)");
  expect_one_line_error(run_flashtune("run --B 1 --N 64 --d " + valid_d() + " --auto --precision bogus"), 2,
                        "flashtune run: unknown precision 'bogus' (known: fp32, tf32)");
}

TEST(CliRun, Tf32VariantNeedsPrecisionTf32) {
  const std::string line =
      "flashtune run: mma_1xtf32 is TF32-accurate only (rel L2 up to 1e-02): pass --precision tf32 to use it";
  expect_one_line_error(run_flashtune("run --B 1 --N 64 --d 64 --variant mma_1xtf32"), 2, line);
  expect_one_line_error(run_flashtune("run --B 1 --N 64 --d 64 --variant mma_1xtf32 --all-configs"), 2, line);
  // With tf32 the same command gets past the config check: without a GPU it stops at the device.
  if (testing_support::no_gpu_reason().empty()) GTEST_SKIP() << "a CUDA device is present";
  const auto r = run_flashtune("run --B 1 --N 64 --d 64 --variant mma_1xtf32 --precision tf32");
  EXPECT_EQ(r.exit_code, 3) << r.output;
}

TEST(CliRun, ConfigNotCompiled) {
  const TileConfig c = compiled_configs().front();
  const auto r = run_flashtune("run --B 1 --N 64 --d " + std::to_string(c.d) + " --variant " + variant_name(c.variant) +
                               " --Br 1024");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output.rfind("flashtune run: config ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("is not compiled"), std::string::npos) << r.output;
}

TEST(CliRun, BadNumbers) {
  expect_one_line_error(run_flashtune("run --B 1 --N 64 --d " + valid_d() + " --scale -1"), 2,
                        "flashtune run: scale=-1: must be a positive finite number");
  expect_one_line_error(run_flashtune("run --B 1 --N 64 --d " + valid_d() + " --time-cap 0"), 2,
                        "flashtune run: time-cap=0: must be > 0");
  expect_one_line_error(run_flashtune("run --B 1 --N 64 --d " + valid_d() + " --l2-flush clean"), 2,
                        "flashtune run: l2-flush=clean: must be write or read");
}

TEST(CliRun, NeedsGpu) {
  if (testing_support::no_gpu_reason().empty()) GTEST_SKIP() << "a CUDA device is present";
  const auto r = run_flashtune("run --B 1 --N 64 --d " + valid_d());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_EQ(r.output.rfind("flashtune run needs a CUDA GPU: ", 0), 0u) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "one line: " << r.output;
}

TEST(CliList, TableWithoutGpu) {
  const auto r = run_flashtune("list");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const TileConfig& c : compiled_configs()) EXPECT_NE(r.output.find(c.name()), std::string::npos) << c.name();
}

TEST(CliList, JsonMatchesTraits) {
  const auto r = run_flashtune("list --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("schema_version"), 1);
  ASSERT_EQ(j.at("kernels").size(), compiled_configs().size());
  for (std::size_t i = 0; i < compiled_configs().size(); ++i) {
    const TileConfig& c = compiled_configs()[i];
    const nlohmann::json& k = j["kernels"][i];
    EXPECT_EQ(k.at("name"), c.name());
    EXPECT_EQ(k.at("threads"), make_geometry(c).threads_per_block);
    EXPECT_EQ(k.at("smem_bytes"), make_geometry(c).smem_bytes);
    EXPECT_EQ(k.at("precision"), precision_name(variant_precision(c.variant))) << c.name();
  }
}

TEST(CliList, Filters) {
  const TileConfig c = compiled_configs().front();
  const auto r = run_flashtune("list --json --d " + std::to_string(c.d) + " --variant " + variant_name(c.variant));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  ASSERT_FALSE(j.at("kernels").empty());
  for (const auto& k : j["kernels"]) {
    EXPECT_EQ(k.at("d"), c.d);
    EXPECT_EQ(k.at("variant"), variant_name(c.variant));
  }
  expect_one_line_error(run_flashtune("list --d 48"), 2,
                        "flashtune list: unsupported d=48 (compiled: " + join_ints(compiled_head_dims()) + ")");
  EXPECT_EQ(run_flashtune("list --variant nope").exit_code, 2);
}

TEST(CliList, ResourcesNeedGpu) {
  if (testing_support::no_gpu_reason().empty()) GTEST_SKIP() << "a CUDA device is present";
  const auto r = run_flashtune("list --resources");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_EQ(r.output.rfind("flashtune list --resources needs a CUDA GPU: ", 0), 0u) << r.output;
}

// ---- GPU ----------------------------------------------------------------------------------

#define SKIP_WITHOUT_GPU()                                                          \
  do {                                                                              \
    const std::string why = testing_support::no_gpu_reason();                       \
    if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;                    \
  } while (0)

TEST(CliRunGpu, CheckPassesOnDefaultConfig) {
  SKIP_WITHOUT_GPU();
  const auto r = run_flashtune("run --B 3 --N 1000 --d " + valid_d() + " --check --time-cap 0.3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  const nlohmann::json& res = j.at("results").at(0);
  EXPECT_EQ(res.at("status"), "ok");
  EXPECT_TRUE(res.at("check").at("pass").get<bool>());
  EXPECT_LE(res.at("check").at("rel_l2").get<double>(), kRelL2Tolerance);
  EXPECT_EQ(res.at("check").at("nonfinite"), 0);
  EXPECT_GE(res.at("time").at("samples").get<int>(), 10);
  EXPECT_GT(res.at("time").at("median_ms").get<double>(), 0.0);
  EXPECT_GT(res.at("tflops").get<double>(), 0.0);
}

TEST(CliRunGpu, L2FlushKindIsTheOneAskedFor) {
  SKIP_WITHOUT_GPU();
  for (const std::string kind : {"write", "read"}) {
    const auto r = run_flashtune("run --B 2 --N 256 --d " + valid_d() + " --l2-flush " + kind + " --time-cap 0.2 --json");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json j = nlohmann::json::parse(r.output);
    const nlohmann::json& t = j.at("results").at(0).at("time");
    EXPECT_EQ(t.at("l2_flush"), kind);
    EXPECT_GT(t.at("l2_flush_bytes").get<long long>(), 0);
    EXPECT_GT(t.at("median_ms").get<double>(), 0.0);
  }
}

TEST(CliRunGpu, NpyInputsGiveMatchingOutput) {
  SKIP_WITHOUT_GPU();
  const std::string p = temp_path("io_");
  const std::size_t B = 2, N = 77, d = std::size_t(compiled_head_dims().front());
  std::vector<float> q, k, v;
  write_inputs(p, B, N, d, &q, &k, &v);
  const std::string out = p + "o.npy";
  std::remove(out.c_str());
  const auto r = run_flashtune("run --causal --q " + p + "q.npy --k " + p + "k.npy --v " + p + "v.npy --out " + out +
                               " --check --no-time");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const npy::ArrayF32 o = npy::read_f32(out, {B, N, d});
  Workload w;
  w.B = (long long)B;
  w.N = (long long)N;
  w.d = int(d);
  w.causal = true;
  std::vector<double> ref(B * N * d);
  attention_reference_cpu(q.data(), k.data(), v.data(), ref.data(), w);
  const ErrorStats e = compare_to_reference(o.data.data(), ref.data(), ref.size());
  EXPECT_EQ(e.nonfinite, 0);
  EXPECT_LE(e.rel_l2, kRelL2Tolerance);
}

// The [batch, N, heads, d] layout: the same O (gathered back) passes the check, and the JSON says
// which layout was timed.
TEST(CliRunGpu, BnhdLayoutChecksAndTimes) {
  SKIP_WITHOUT_GPU();
  const auto r = run_flashtune("run --B 2 --N 301 --d " + valid_d() +
                               " --causal --qkv-layout bnhd --heads 3 --check --time-cap 0.3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("workload").at("qkv_layout"), "bnhd");
  EXPECT_EQ(j.at("workload").at("heads"), 3);
  EXPECT_EQ(j.at("workload").at("B"), 6);  // batch 2 x 3 heads
  const nlohmann::json& res = j.at("results").at(0);
  EXPECT_TRUE(res.at("check").at("pass").get<bool>()) << r.output;
  EXPECT_EQ(res.at("check").at("nonfinite"), 0);
  EXPECT_GT(res.at("time").at("median_ms").get<double>(), 0.0);
}

// A grouped-query KV cache through strides: 8 query heads over 2 K/V heads, 16 query rows over
// 1000 keys, bottom-right causal; the check against the double reference passes.
TEST(CliRunGpu, GroupedKvCacheChecksAndTimes) {
  SKIP_WITHOUT_GPU();
  const auto r = run_flashtune("run --B 2 --heads 8 --kv-heads 2 --N 16 --kv-len 1000 --d " + valid_d() +
                               " --causal --qkv-layout bhnd --check --time-cap 0.3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("workload").at("B"), 16);
  EXPECT_EQ(j.at("workload").at("kv_len"), 1000);
  EXPECT_EQ(j.at("workload").at("kv_group"), 4);
  EXPECT_TRUE(j.at("results").at(0).at("check").at("pass").get<bool>()) << r.output;
}

TEST(CliRunGpu, AllConfigsTimesEveryCompiledConfigOfD) {
  SKIP_WITHOUT_GPU();
  const int d = compiled_head_dims().front();
  const auto r = run_flashtune("run --B 2 --N 300 --d " + std::to_string(d) +
                               " --all-configs --check --time-cap 0.1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("results").size(), matching_configs(d, {}).size());
  EXPECT_TRUE(j.at("best").is_string());
}

}  // namespace
}  // namespace flashtune
