// The traits' registers_estimate against what ptxas compiled (tests/data/ptxas_registers_sm90.json,
// written by scripts/ptxas_registers_json.sh from the full build's ptxas report): the model's
// occupancy without a profile comes from the estimate, so it must give the compiled kernels' blocks
// per SM on sm_90 GPUs, and stay close in value (the issue and latency terms scale with warps).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/traits/tile_config.h"
#include "kernels/traits/variants.h"
#include "model/gpu_spec.h"
#include "model/occupancy.h"

namespace flashtune {
namespace {

std::map<std::string, int> compiled_registers() {
  const std::string path = FLASHTUNE_TEST_DATA_DIR "/ptxas_registers_sm90.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open file");
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::map<std::string, int> regs;
  for (const auto& [name, value] : doc.at("registers").items()) regs[name] = value.get<int>();
  return regs;
}

// The table's keys are TileConfig::name() (mma16's with dtype, stages and /qsmem): read back by
// the one parser of config names.
TileConfig config_named(const std::string& name) {
  if (const auto c = parse_config_name(name)) return *c;
  throw std::runtime_error("no config named " + name);
}

// The table is the full kernel set: every compiled config of this build is in it, and each of its
// entries is a config the traits allow.
TEST(KernelRegisters, TableCoversTheCompiledKernels) {
  const auto regs = compiled_registers();
  EXPECT_EQ(regs.size(), 223u);  // 117 SIMT + 26 mma_3xtf32 + 6 mma_1xtf32 + 26 mma16 + 31 wgmma16 + 12 decode + 5 wgmma_tf32
  for (const TileConfig& c : compiled_configs()) EXPECT_EQ(regs.count(c.name()), 1u) << c.name();
  for (const auto& [name, r] : regs) {
    EXPECT_FALSE(tile_rejection(config_named(name)).has_value()) << name;
    EXPECT_GE(r, 1) << name;
    EXPECT_LE(r, 255) << name;
  }
}

TEST(KernelRegisters, EstimateGivesTheCompiledOccupancyOnSm90) {
  const auto regs = compiled_registers();
  for (const char* gpu : {"nvidia-h200", "nvidia-h100-sxm"}) {
    const model::GpuSpec spec = model::load_gpu_spec(std::string(FLASHTUNE_TEST_GPU_DIR) + "/" + gpu + ".json");
    for (const auto& [name, compiled] : regs) {
      const KernelGeometry g = make_geometry(config_named(name));
      const model::Occupancy want = model::compute_occupancy(spec, g.threads_per_block, compiled, g.smem_bytes);
      const model::Occupancy got =
          model::compute_occupancy(spec, g.threads_per_block, g.registers_estimate, g.smem_bytes);
      EXPECT_EQ(got.blocks_per_sm, want.blocks_per_sm)
          << gpu << " " << name << ": estimate " << g.registers_estimate << ", compiled " << compiled;
    }
  }
}

// Per variant the mean relative error stays under 10%, and no config is off by more than a third.
TEST(KernelRegisters, EstimateIsCloseToTheCompiledValue) {
  std::map<Variant, std::pair<double, int>> sum;
  for (const auto& [name, compiled] : compiled_registers()) {
    const TileConfig c = config_named(name);
    const int estimate = make_geometry(c).registers_estimate;
    const double err = std::abs(estimate - compiled) / double(compiled);
    EXPECT_LE(err, 1.0 / 3) << name << ": estimate " << estimate << ", compiled " << compiled;
    sum[c.variant].first += err;
    sum[c.variant].second += 1;
  }
  EXPECT_EQ(sum.size(), std::size(kAllVariants));  // every variant is in the table
  for (const auto& [variant, s] : sum)
    EXPECT_LE(s.first / s.second, 0.10) << variant_name(variant) << " mean relative error " << s.first / s.second;
}

}  // namespace
}  // namespace flashtune
