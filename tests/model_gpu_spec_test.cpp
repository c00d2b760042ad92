// The spec loader: every shipped sheet loads, names and aliases resolve, and bad files fail with
// one line naming the file and the field or position.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "model/gpu_spec.h"

namespace flashtune::model {
namespace {

const std::string kDir = FLASHTUNE_TEST_GPU_DIR;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

class TempDir {
 public:
  TempDir() : path_(std::filesystem::temp_directory_path() / ("flashtune_spec_test_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = (path_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

TEST(GpuSpec, EveryShippedSheetLoads) {
  const auto names = known_gpu_names(kDir);
  ASSERT_EQ(names.size(), 5u);
  for (const std::string& n : names) {
    SCOPED_TRACE(n);
    const GpuSpec s = load_gpu_spec(kDir + "/" + n + ".json");
    EXPECT_GT(s.sm_count, 0);
    EXPECT_GT(s.fp32_peak_flops(), 1e12);
  }
}

TEST(GpuSpec, H200FiguresAndMeasuredCeilings) {
  const GpuSpec s = find_gpu_spec("h200", kDir);
  EXPECT_EQ(s.sm_count, 132);
  EXPECT_EQ(s.cc_major, 9);
  EXPECT_EQ(s.l2_bytes, 62914560);
  ASSERT_TRUE(s.dram_bandwidth_measured_gbs.has_value());
  EXPECT_DOUBLE_EQ(*s.dram_bandwidth_measured_gbs, 4233);
  // 132 x 128 x 2 x 1.98 GHz = 66.9 TFLOP/s.
  EXPECT_NEAR(s.fp32_peak_flops(), 66.9e12, 0.1e12);
}

TEST(GpuSpec, Rtx3090PeakIsTheSeedReportsFigure) {
  EXPECT_NEAR(find_gpu_spec("rtx3090", kDir).fp32_peak_flops(), 35.58e12, 0.01e12);
}

TEST(GpuSpec, NamesMatchStemOrAliasCaseInsensitively) {
  EXPECT_EQ(find_gpu_spec("nvidia-a100-sxm-80gb", kDir).sm_count, 108);
  EXPECT_EQ(find_gpu_spec("A100", kDir).sm_count, 108);
  EXPECT_EQ(find_gpu_spec("H100", kDir).sm_count, 132);
}

// A CUDA device's name to the spec file naming it (what a tune records in gpu.spec and the
// dispatcher looks a GPU's shipped profile up by).
TEST(GpuSpec, DeviceNamesMapToSpecFiles) {
  const std::string dir = FLASHTUNE_TEST_GPU_DIR;
  EXPECT_EQ(gpu_spec_name("NVIDIA H200", dir), "nvidia-h200");
  EXPECT_EQ(gpu_spec_name("NVIDIA H100 80GB HBM3", dir), "nvidia-h100-sxm");
  EXPECT_EQ(gpu_spec_name("NVIDIA A100-SXM4-80GB", dir), "nvidia-a100-sxm-80gb");
  EXPECT_EQ(gpu_spec_name("NVIDIA GeForce RTX 3090", dir), "nvidia-rtx-3090");
  EXPECT_EQ(gpu_spec_name("Mystery GPU 9000", dir), "mystery-gpu-9000");
  EXPECT_EQ(spec_stem(find_gpu_spec("h200", dir)), "nvidia-h200");
}

TEST(GpuSpec, UnknownNameListsTheKnownOnes) {
  const std::string e = error_of([] { find_gpu_spec("v100", kDir); });
  EXPECT_NE(e.find("unknown GPU 'v100'"), std::string::npos) << e;
  EXPECT_NE(e.find("nvidia-h200"), std::string::npos) << e;
  EXPECT_NE(e.find("nvidia-gtx-1080"), std::string::npos) << e;
}

nlohmann::json shipped(const std::string& stem) {
  std::ifstream in(kDir + "/" + stem + ".json");
  return nlohmann::json::parse(in);
}

TEST(GpuSpec, MissingFieldIsNamed) {
  TempDir t;
  auto doc = shipped("nvidia-h200");
  doc.erase("sm_count");
  const std::string p = t.write("x.json", doc.dump());
  EXPECT_EQ(error_of([&] { load_gpu_spec(p); }), p + ": missing field 'sm_count'");
}

TEST(GpuSpec, MissingSourceIsNamed) {
  TempDir t;
  auto doc = shipped("nvidia-h200");
  doc["l2_bytes"].erase("source");
  const std::string p = t.write("x.json", doc.dump());
  EXPECT_EQ(error_of([&] { load_gpu_spec(p); }), p + ": missing field 'l2_bytes.source'");
}

TEST(GpuSpec, IllTypedFieldIsNamed) {
  TempDir t;
  auto doc = shipped("nvidia-h200");
  doc["sm_count"]["value"] = "many";
  const std::string p = t.write("x.json", doc.dump());
  EXPECT_EQ(error_of([&] { load_gpu_spec(p); }), p + ": field 'sm_count.value' must be an integer");
}

// The measured cluster capacity (optional): the H200's loads by cluster size, a sheet without it
// has none (the model then keeps the decode combine kernel), and a malformed one is named.
TEST(GpuSpec, ClusterCapacityIsOptionalAndChecked) {
  const GpuSpec h200 = load_gpu_spec(kDir + "/nvidia-h200.json");
  EXPECT_EQ(h200.max_active_clusters(2), 66);
  EXPECT_EQ(h200.max_active_clusters(4), 30);
  EXPECT_EQ(h200.max_active_clusters(16), 7);
  EXPECT_EQ(h200.max_active_clusters(1), 0);
  EXPECT_EQ(h200.max_active_clusters(17), 0);
  EXPECT_EQ(load_gpu_spec(kDir + "/nvidia-a100-sxm-80gb.json").max_active_clusters(2), 0);
  TempDir t;
  for (const char* bad : {R"([1, 2])", R"("many")", R"([66, 39, 30, 22, 17, 15, 15, 9, 7, 7, 7, 7, 7, 7, -1])",
                          R"([66, 39, 30, 22, 17, 15, 15, 9, 7, 7, 7, 7, 7, 7, 999])"}) {
    auto doc = shipped("nvidia-h200");
    doc["clusters_at_once_one_block_per_sm"]["value"] = nlohmann::json::parse(bad);
    const std::string p = t.write("x.json", doc.dump());
    EXPECT_EQ(error_of([&] { load_gpu_spec(p); }),
              p + ": field 'clusters_at_once_one_block_per_sm.value' must be an array of 15 integers in [0, sm_count] "
                  "(clusters of 2..16 blocks)")
        << bad;
  }
}

TEST(GpuSpec, MalformedJsonGivesThePosition) {
  TempDir t;
  const std::string p = t.write("x.json", "{\n  \"schema_version\": 1,\n  \"name\": \"x\"\n  \"sm_count\": 3\n}\n");
  const std::string e = error_of([&] { load_gpu_spec(p); });
  EXPECT_EQ(e.rfind(p + ": malformed JSON: ", 0), 0u) << e;
  EXPECT_NE(e.find("line 4"), std::string::npos) << e;
}

// The dense TF32 tensor-core rate: per clock per SM, so peak = rate x SMs x boost clock.
TEST(GpuSpec, Tf32TensorRateOfEverySheet) {
  const GpuSpec h200 = find_gpu_spec("h200", kDir);
  EXPECT_DOUBLE_EQ(h200.tf32_tensor_flops_per_clock_per_sm, 2048);
  EXPECT_NEAR(h200.tf32_tensor_peak_flops(), 132 * 2048 * 1.98e9, 1e6);  // 535 TFLOP/s
  ASSERT_TRUE(h200.tf32_measured_tflops.has_value());
  EXPECT_DOUBLE_EQ(*h200.tf32_measured_tflops, 412);
  EXPECT_EQ(h200.compute_capability(), 90);
  EXPECT_DOUBLE_EQ(find_gpu_spec("h100", kDir).tf32_tensor_flops_per_clock_per_sm, 2048);
  // A100: the whitepaper's 156 TFLOP/s = 108 x 1410 MHz x 1024.
  const GpuSpec a100 = find_gpu_spec("a100", kDir);
  EXPECT_DOUBLE_EQ(a100.tf32_tensor_flops_per_clock_per_sm, 1024);
  EXPECT_NEAR(a100.tf32_tensor_peak_flops(), 156e12, 0.5e12);
  // RTX 3090: 35.6 TFLOP/s = 82 x 1695 MHz x 256.
  EXPECT_NEAR(find_gpu_spec("rtx3090", kDir).tf32_tensor_peak_flops(), 35.6e12, 0.1e12);
  const GpuSpec gtx = find_gpu_spec("gtx1080", kDir);
  EXPECT_EQ(gtx.tf32_tensor_flops_per_clock_per_sm, 0);
  EXPECT_EQ(gtx.compute_capability(), 61);
  EXPECT_FALSE(gtx.tf32_measured_tflops.has_value());
}

TEST(GpuSpec, Tf32TensorRateMissingOrNegativeIsNamed) {
  TempDir t;
  auto doc = shipped("nvidia-a100-sxm-80gb");
  doc.erase("tf32_tensor_flops_per_clock_per_sm");
  const std::string missing = t.write("missing.json", doc.dump());
  EXPECT_EQ(error_of([&] { load_gpu_spec(missing); }), missing + ": missing field 'tf32_tensor_flops_per_clock_per_sm'");
  doc = shipped("nvidia-a100-sxm-80gb");
  doc["tf32_tensor_flops_per_clock_per_sm"]["value"] = -1024;
  const std::string negative = t.write("negative.json", doc.dump());
  EXPECT_EQ(error_of([&] { load_gpu_spec(negative); }),
            negative + ": field 'tf32_tensor_flops_per_clock_per_sm.value' must not be negative (got -1024)");
  doc = shipped("nvidia-a100-sxm-80gb");
  doc["tf32_tensor_flops_per_clock_per_sm"].erase("source");
  const std::string unsourced = t.write("unsourced.json", doc.dump());
  EXPECT_EQ(error_of([&] { load_gpu_spec(unsourced); }),
            unsourced + ": missing field 'tf32_tensor_flops_per_clock_per_sm.source'");
  // Pascal with a tensor rate contradicts its compute capability.
  doc = shipped("nvidia-gtx-1080");
  doc["tf32_tensor_flops_per_clock_per_sm"]["value"] = 256;
  const std::string pascal = t.write("pascal.json", doc.dump());
  const std::string e = error_of([&] { load_gpu_spec(pascal); });
  EXPECT_EQ(e.rfind(pascal + ": field 'tf32_tensor_flops_per_clock_per_sm.value' must be 0 below compute capability 8.0", 0), 0u) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
  // The measured figure is optional, and positive when present.
  doc = shipped("nvidia-h200");
  doc["tf32_measured_tflops"]["value"] = 0;
  const std::string zero = t.write("zero.json", doc.dump());
  EXPECT_EQ(error_of([&] { load_gpu_spec(zero); }), zero + ": field 'tf32_measured_tflops.value' must be positive");
}

TEST(GpuSpec, MissingFileIsNamed) {
  EXPECT_EQ(error_of([] { load_gpu_spec("/nonexistent/g.json"); }), "/nonexistent/g.json: cannot open file");
}

}  // namespace
}  // namespace flashtune::model
