// The data folder (model/data_dir.h): set_data_dir() over $FLASHTUNE_DATA_DIR over the folders
// found (here the source tree: the test runs from the build tree, which holds no share/flashtune),
// and the shipped profile found through it, or not at all. Host-only.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "model/data_dir.h"
#include "model/gpu_spec.h"
#include "profile/model_profile.h"

namespace flashtune::model {
namespace {

namespace fs = std::filesystem;

// Each test leaves the override and the variables as it found them (unset).
class DataDir : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("FLASHTUNE_DATA_DIR");
    unsetenv("FLASHTUNE_PROFILE_DIR");
    set_data_dir("");
  }
  void TearDown() override { SetUp(); }
  // A data folder with the H200 spec and, when `profile` is not empty, a profile of it.
  static std::string make_folder(const std::string& name, const std::string& profile) {
    const fs::path dir = fs::path(testing::TempDir()) / ("flashtune_data_" + name);
    fs::remove_all(dir);
    fs::create_directories(dir / "configs" / "gpus");
    fs::create_directories(dir / "profiles");
    fs::copy_file(fs::path(FLASHTUNE_TEST_GPU_DIR) / "nvidia-h200.json", dir / "configs" / "gpus" / "nvidia-h200.json");
    if (!profile.empty()) std::ofstream(dir / "profiles" / "nvidia-h200.json") << profile;
    return dir.string();
  }
};

TEST_F(DataDir, BuildTreeFindsTheSourceTree) {
  EXPECT_TRUE(fs::equivalent(data_dir(), fs::path(FLASHTUNE_TEST_GPU_DIR) / ".." / ".."));
  EXPECT_TRUE(fs::equivalent(default_gpu_spec_dir(), FLASHTUNE_TEST_GPU_DIR));
  EXPECT_TRUE(fs::equivalent(shipped_profile_path("nvidia-h200"),
                             fs::path(FLASHTUNE_TEST_GPU_DIR) / ".." / ".." / "profiles" / "nvidia-h200.json"));
  EXPECT_EQ(shipped_profile_path("nvidia-a100-sxm-80gb"), "");  // no profile shipped for it
  EXPECT_EQ(shipped_profile_path(""), "");
}

TEST_F(DataDir, OverrideBeatsTheVariableWhichBeatsTheFoldersFound) {
  const std::string by_env = make_folder("env", ""), by_option = make_folder("option", "");
  ASSERT_EQ(setenv("FLASHTUNE_DATA_DIR", by_env.c_str(), 1), 0);
  EXPECT_EQ(data_dir(), by_env);
  EXPECT_EQ(spec_stem(find_gpu_spec("h200", default_gpu_spec_dir())), "nvidia-h200");
  EXPECT_EQ(find_gpu_spec("h200", default_gpu_spec_dir()).file, by_env + "/configs/gpus/nvidia-h200.json");
  set_data_dir(by_option);
  EXPECT_EQ(data_dir(), by_option);
  EXPECT_EQ(data_path("configs/gpus"), by_option + "/configs/gpus");
  set_data_dir("");
  EXPECT_EQ(data_dir(), by_env);
}

TEST_F(DataDir, ShippedProfileIsTheDefaultOnlyWithFittedCoefficients) {
  const GpuSpec h200 = find_gpu_spec("h200", default_gpu_spec_dir());
  // The source tree's shipped H200 profile holds fitted coefficients.
  const ModelProfile shipped = default_model_profile(h200);
  EXPECT_TRUE(fs::equivalent(shipped.path, shipped_profile_path("nvidia-h200")));
  EXPECT_GT(shipped.fitted_coefficients, 0);
  // A folder without a profile of the GPU, and one whose profile holds no coefficients: no default.
  set_data_dir(make_folder("none", ""));
  EXPECT_EQ(default_model_profile(h200).path, "");
  const std::string unfitted = make_folder(
      "unfitted", R"({"schema_version": 1, "kind": "flashtune-profile", "gpu": {"name": "NVIDIA H200", "spec": "nvidia-h200"},
                     "build": {}, "workloads": [], "measurements": []})");
  set_data_dir(unfitted);
  ASSERT_NE(shipped_profile_path("nvidia-h200"), "");
  EXPECT_EQ(default_model_profile(h200).path, "");
  // $FLASHTUNE_PROFILE_DIR names the profiles' folder alone.
  ASSERT_EQ(setenv("FLASHTUNE_PROFILE_DIR", (fs::path(FLASHTUNE_TEST_GPU_DIR) / ".." / ".." / "profiles").c_str(), 1), 0);
  EXPECT_GT(default_model_profile(h200).fitted_coefficients, 0);
}

TEST_F(DataDir, AVariableNamingAnEmptyFolderFailsNamingIt) {
  const fs::path empty = fs::path(testing::TempDir()) / "flashtune_data_empty";
  fs::create_directories(empty);
  ASSERT_EQ(setenv("FLASHTUNE_DATA_DIR", empty.c_str(), 1), 0);
  try {
    find_gpu_spec("h200", default_gpu_spec_dir());
    FAIL() << "found a spec in an empty folder";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((empty / "configs" / "gpus").string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flashtune::model
