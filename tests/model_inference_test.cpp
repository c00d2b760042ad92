// Inference operands on the host side: the Workload's keys and grouped heads, their limits, the
// strides of grouped K/V, the model's counts over keys with bottom-right causal, the DRAM rule's
// K/V shared by a group, and schema 3 of profiles and workload files (versions 1 and 2 load
// unchanged). No GPU needed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/traits/tensor_strides.h"
#include "kernels/traits/traits_common.h"
#include "model/block_schedule.h"
#include "model/config_catalog.h"
#include "model/counts.h"
#include "model/memory_traffic.h"
#include "model/workload_limits.h"
#include "profile/export.h"
#include "profile/profile.h"
#include "profile/workload_set.h"

namespace flashtune {
namespace {

namespace fs = std::filesystem;

model::GpuSpec spec(const std::string& stem) {
  return model::load_gpu_spec(std::string(FLASHTUNE_TEST_GPU_DIR) + "/" + stem + ".json");
}

Workload inference(long long B, long long nq, long long nkv, bool causal, int group) {
  Workload w{B, nq, 64, causal, 0};
  w.kv_len = nkv;
  w.kv_group = group;
  return w;
}

std::string temp_file(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("flashtune_inference_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

TEST(InferenceWorkload, KeysDefaultToNAndFlopsCountTheUnmaskedArea) {
  Workload self{2, 100, 64, true, 0};
  EXPECT_EQ(self.keys(), 100);
  EXPECT_EQ(self.causal_offset(), 0);
  EXPECT_TRUE(self.self_attention());
  EXPECT_DOUBLE_EQ(self.nominal_flops(), 0.5 * 4.0 * 2 * 100 * 100 * 64);  // today's halving
  const Workload decode = inference(8, 4, 1000, true, 4);
  EXPECT_EQ(decode.keys(), 1000);
  EXPECT_EQ(decode.causal_offset(), 996);
  EXPECT_FALSE(decode.self_attention());
  EXPECT_DOUBLE_EQ(decode.nominal_flops(), 4.0 * 8 * 64 * (4.0 * 1000 - 8.0));
  const Workload open = inference(8, 4, 1000, false, 4);
  EXPECT_DOUBLE_EQ(open.nominal_flops(), 4.0 * 8 * 4 * 1000 * 64);
  EXPECT_EQ(inference_suffix(decode), " kv=1000 g=4");
  EXPECT_EQ(inference_suffix(self), "");
}

TEST(InferenceWorkload, LimitsNameTheBadValue) {
  EXPECT_FALSE(model::workload_limit_error(inference(8, 4, 1000, true, 4)));
  const auto more_queries = model::workload_limit_error(inference(8, 64, 32, true, 1));
  ASSERT_TRUE(more_queries);
  EXPECT_NE(more_queries->find("N=64"), std::string::npos) << *more_queries;
  EXPECT_NE(more_queries->find("kv_len=32"), std::string::npos) << *more_queries;
  EXPECT_FALSE(model::workload_limit_error(inference(8, 64, 32, false, 1)));  // no mask, no problem
  const auto group = model::workload_limit_error(inference(6, 4, 100, false, 4));
  ASSERT_TRUE(group);
  EXPECT_NE(group->find("B=6 is not a multiple of kv_group=4"), std::string::npos) << *group;
  const auto zero = model::workload_limit_error(inference(8, 4, 100, false, 0));
  ASSERT_TRUE(zero);
  EXPECT_NE(zero->find("kv_group=0"), std::string::npos) << *zero;
  const auto huge = model::workload_limit_error(inference(8, 4, 1LL << 40, false, 1));
  ASSERT_TRUE(huge);
  EXPECT_NE(huge->find("kv_len=1099511627776"), std::string::npos) << *huge;
}

// Grouped K/V: entry e = (b, hq) reads K/V head hq / g of batch b; packed, that is K/V entry e / g.
TEST(InferenceStrides, GroupedKvAddressesOneCopyPerKvHead) {
  const Workload w = inference(16, 4, 1000, false, 4);  // 2 batches x 8 query heads, 2 K/V heads
  const AttentionStrides bhnd = AttentionStrides::dense(TensorLayout::Bhnd, w, 8);
  EXPECT_EQ(bhnd.heads, 8);
  EXPECT_EQ(bhnd.q.batch, 8 * 4 * 64);
  EXPECT_EQ(bhnd.k.batch, 2 * 1000 * 64);
  EXPECT_EQ(bhnd.k.head, 1000 * 64);
  EXPECT_EQ(bhnd.k.row, 64);
  const AttentionStrides bnhd = AttentionStrides::dense(TensorLayout::Bnhd, w, 8);
  EXPECT_EQ(bnhd.k.batch, 1000 * 2 * 64);
  EXPECT_EQ(bnhd.k.head, 64);
  EXPECT_EQ(bnhd.k.row, 2 * 64);
  const AttentionStrides packed = AttentionStrides::packed(w);
  for (long long e = 0; e < w.B; ++e) {
    const long long b = e / packed.heads, hq = e % packed.heads;
    EXPECT_EQ(b * packed.k.batch + (hq / w.kv_group) * packed.k.head, (e / w.kv_group) * 1000 * 64) << e;
    EXPECT_EQ(b * packed.q.batch + hq * packed.q.head, e * 4 * 64) << e;
  }
  // Self-attention keeps the layout every kernel started with.
  const AttentionStrides self = AttentionStrides::packed(Workload{4, 100, 64, false, 0});
  EXPECT_EQ(self.heads, 1);
  EXPECT_EQ(self.k.batch, 100 * 64);
}

// The kernels divide the query head by kv_group with a multiply-high and a shift: exact.
TEST(InferenceStrides, FastDivisionOfTheHeadIsExact) {
  for (unsigned d = 1; d <= 1024; ++d) {
    const traits::FastDivisor f = traits::fast_divisor(d);
    for (unsigned n = 0; n < 4096; ++n) ASSERT_EQ(traits::fast_divide(n, f), n / d) << n << " / " << d;
    for (unsigned n : {65535u, 1000003u, 2147483647u}) ASSERT_EQ(traits::fast_divide(n, f), n / d) << n << " / " << d;
  }
}

// Tile visits over the keys, brute force: query tile i sees keys up to (i + 1) Br - 1 + offset.
TEST(InferenceCounts, BottomRightCausalVisitsMatchABruteForceWalk) {
  for (int Br : {16, 64, 128})
    for (int Bc : {16, 32, 64})
      for (long long nq : {1LL, 4LL, 16LL, 64LL, 77LL})
        for (long long nkv : {77LL, 1000LL, 4097LL}) {
          const Workload w = inference(2, nq, nkv, true, 1);
          const model::TileVisits t = model::count_tile_visits(w, Br, Bc);
          const long long Tr = (nq + Br - 1) / Br, Tc = (nkv + Bc - 1) / Bc, off = nkv - nq;
          long long visits = 0, last = 0, max_tiles = 0;
          for (long long i = 0; i < Tr; ++i) {
            long long n = 0;
            for (long long j = 0; j < Tc; ++j)
              if (j * Bc <= (i + 1) * Br - 1 + off) {
                ++n;
                if (j == Tc - 1) ++last;
              }
            visits += n;
            max_tiles = std::max(max_tiles, n);
          }
          SCOPED_TRACE("Br=" + std::to_string(Br) + " Bc=" + std::to_string(Bc) + " Nq=" + std::to_string(nq) +
                       " Nkv=" + std::to_string(nkv));
          EXPECT_EQ(t.kv_tiles, Tc);
          EXPECT_EQ(t.visits, 2 * visits);
          EXPECT_EQ(t.last_tile_visits, 2 * last);
          EXPECT_EQ(t.max_tiles_per_block, max_tiles);
        }
}

TEST(InferenceCounts, KeysSetTheFlopsAndTheKvBytesAndGroupsShareTheCompulsoryKv) {
  model::ConfigCatalog cat;
  const TileConfig c{Variant::RowReg, 64, 128, 32, Layout::Plain};
  const model::GeometryAnalysis& a = cat.analysis(c);
  const Workload w = inference(8, 16, 1000, true, 4);
  const model::Counts n = model::count_work(w, a);
  // Row i sees i + 1 + 984 keys.
  EXPECT_DOUBLE_EQ(n.useful_flops, 4.0 * 8 * 64 * (16.0 * 17 / 2 + 16.0 * 984));
  EXPECT_EQ(n.tiles.kv_tiles, 32);
  // K/V: 31 full tiles and the last 8 rows, every entry.
  EXPECT_DOUBLE_EQ(n.l2_kv_bytes, 8.0 * (31 * 32 + 8) * 2 * 64 * 4);
  // Q and O per entry, K and V per K/V head (8 / 4 of them).
  EXPECT_DOUBLE_EQ(n.dram_compulsory_bytes, (2.0 * 8 * 16 + 2.0 * 2 * 1000) * 64 * 4);
}

// Decode: one query tile per entry; the 4 query heads of a K/V head run together, so DRAM reads
// each K/V once though L2 serves it four times. Spread over time (one resident block), each head
// re-reads it from far back once the working set outgrows L2.
TEST(InferenceDram, QueryHeadsOfAGroupRunningTogetherShareTheirKv) {
  model::GpuSpec gpu = spec("nvidia-h200");
  model::ConfigCatalog cat;
  const TileConfig c{Variant::RowReg, 64, 128, 32, Layout::Plain};
  const Workload w = inference(64, 4, 100000, true, 4);
  const model::Counts n = model::count_work(w, cat.analysis(c));
  const model::DramEstimate together = model::estimate_dram(w, c, n, 132, false, gpu, model::Coefficients{});
  EXPECT_EQ(together.sweeps_per_entry, 1);
  EXPECT_EQ(together.kv_sets_in_flight, 16);
  EXPECT_DOUBLE_EQ(together.bytes, n.dram_compulsory_bytes);
  EXPECT_NEAR(n.l2_kv_bytes / (n.dram_compulsory_bytes - 2.0 * 64 * 4 * 64 * 4), 4.0, 1e-9);
  gpu.l2_bytes = 1024 * 1024;
  const model::DramEstimate apart = model::estimate_dram(w, c, n, 1, false, gpu, model::Coefficients{});
  EXPECT_EQ(apart.sweeps_per_entry, 4);
  EXPECT_GT(apart.bytes, 3.0 * n.dram_compulsory_bytes);
}

// The causal grid's schedule reads the same block lengths as the counts: with Nq much smaller than
// Nkv every query tile sees nearly all keys, so the blocks are almost equal.
TEST(InferenceSchedule, OffsetMakesDecodeBlocksNearlyEqual) {
  const model::SharedSmGrid g{64, 64, true, 132, 2};
  const Workload w = inference(64, 256, 100000, true, 1);
  Workload open = w;
  open.causal = false;
  const double causal = model::shared_sm_makespan(w, g, 1.0);
  const double equal = model::shared_sm_makespan(open, g, 1.0);
  EXPECT_NEAR(causal / equal, 1.0, 0.05);
}

// ---- files ----------------------------------------------------------------------------------

Profile one_workload_profile(const Workload& w) {
  Profile p;
  p.gpu = {"NVIDIA H100", "nvidia-h100-sxm", 132, "9.0", 1980, 2619, 52428800, "580", "13.0", 0};
  p.build = {"nvcc 13.0", "90", "abc1234", "small"};
  p.workloads = {{"decode", w}};
  Measurement m;
  m.workload = "decode";
  m.config = "row_reg/d64/br128xbc32/plain";
  m.verify = VerifyResult{2e-6, 3e-6};
  TimingSummary t;
  t.median_ms = 0.2;
  t.sm_clock_mhz = 1980;
  m.timing = t;
  p.measurements = {m};
  recompute_best(p);
  return p;
}

TEST(InferenceProfile, Schema3RoundTripsKeysAndGroupAndVersion2LoadsUnchanged) {
  const std::string path = temp_file("p3.json");
  const Profile p = one_workload_profile(inference(8, 4, 1000, true, 4));
  write_profile_atomic(path, p);
  const nlohmann::json doc = nlohmann::json::parse(std::ifstream(path));
  EXPECT_EQ(doc["schema_version"], 3);
  EXPECT_EQ(doc["workloads"][0]["kv_len"], 1000);
  EXPECT_EQ(doc["workloads"][0]["kv_group"], 4);
  const Profile q = load_profile(path);
  EXPECT_EQ(q.workloads[0].workload.keys(), 1000);
  EXPECT_EQ(q.workloads[0].workload.kv_group, 4);

  // A self-attention workload writes neither field, and a version 2 file loads as before.
  const std::string v2 = temp_file("p2.json");
  write_profile_atomic(v2, one_workload_profile(Workload{8, 512, 64, true, 0}));
  nlohmann::json old = nlohmann::json::parse(std::ifstream(v2));
  EXPECT_FALSE(old["workloads"][0].contains("kv_len"));
  EXPECT_FALSE(old["workloads"][0].contains("kv_group"));
  old["schema_version"] = 2;
  std::ofstream(v2) << old.dump();
  const Profile r = load_profile(v2);
  EXPECT_EQ(r.workloads[0].workload.keys(), 512);
  EXPECT_EQ(r.workloads[0].workload.kv_group, 1);
  EXPECT_TRUE(r.workloads[0].workload.self_attention());

  // Out of range: named by field.
  nlohmann::json bad = doc;
  bad["workloads"][0]["kv_group"] = 0;
  std::ofstream(path) << bad.dump();
  try {
    load_profile(path);
    ADD_FAILURE() << "kv_group 0 accepted";
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("kv_group"), std::string::npos) << e.what();
  }
  bad = doc;
  bad["workloads"][0]["kv_len"] = 2;  // causal with 4 queries over 2 keys
  std::ofstream(path) << bad.dump();
  try {
    load_profile(path);
    ADD_FAILURE() << "causal N > kv_len accepted";
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("kv_len=2"), std::string::npos) << e.what();
  }
}

TEST(InferenceProfile, CsvAndT4CarryTheColumns) {
  const Profile p = one_workload_profile(inference(8, 4, 1000, true, 4));
  const std::string csv = profile_to_csv(p);
  EXPECT_EQ(csv.rfind("gpu,workload,B,N,d,causal,dtype,kv_len,kv_group,config,", 0), 0u) << csv;
  EXPECT_NE(csv.find(",8,4,64,1,fp32,1000,4,row_reg"), std::string::npos) << csv;
  const auto t4 = profile_to_t4(p);
  EXPECT_EQ(t4["results"][0]["configuration"]["kv_len"], 1000);
  EXPECT_EQ(t4["results"][0]["configuration"]["kv_group"], 4);
}

TEST(InferenceWorkloadSet, Version3ReadsKeysAndGroupAndNamesThem) {
  const std::string path = temp_file("w.json");
  std::ofstream(path) << R"({"schema_version": 3, "workloads": [
      {"name": "dec", "B": 64, "N": 1, "d": 128, "causal": true, "dtype": "bf16", "kv_len": 4097, "kv_group": 8},
      {"name": "self", "B": 4, "N": 512, "d": 64}]})";
  const WorkloadSet set = load_workload_set(path);
  EXPECT_EQ(set.workloads[0].workload.keys(), 4097);
  EXPECT_EQ(set.workloads[0].workload.kv_group, 8);
  EXPECT_EQ(set.workloads[1].workload.keys(), 512);
  EXPECT_EQ(default_workload_name(set.workloads[0].workload), "b64_n1_kv4097_g8_d128_causal_bf16");
  EXPECT_EQ(default_workload_name(set.workloads[1].workload), "b4_n512_d64");
  EXPECT_EQ(describe_workload(set.workloads[0].workload), "B=64 N=1 kv=4097 g=8 d=128 causal bf16");
  Workload other = set.workloads[0].workload;
  other.kv_len = 4096;
  EXPECT_FALSE(same_dimensions(other, set.workloads[0].workload));
  std::ofstream(path) << R"({"schema_version": 3, "workloads": [
      {"name": "dec", "B": 6, "N": 1, "d": 128, "kv_len": 100, "kv_group": 4}]})";
  try {
    load_workload_set(path);
    ADD_FAILURE() << "B=6 with kv_group 4 accepted";
  } catch (const WorkloadFileError& e) {
    EXPECT_NE(std::string(e.what()).find("kv_group=4"), std::string::npos) << e.what();
  }
}

// The shipped decode workload files (schema 3) read, and every workload keeps its shape.
TEST(InferenceWorkloadSet, ShippedDecodeFilesLoad) {
  for (const char* file : {"decode_cases.json", "decode_grid.json", "unseen_decode.json"}) {
    const WorkloadSet set = load_workload_set(std::string(FLASHTUNE_TEST_GPU_DIR) + "/../workloads/" + file);
    ASSERT_FALSE(set.workloads.empty()) << file;
    for (const NamedWorkload& nw : set.workloads) {
      EXPECT_TRUE(nw.workload.causal) << nw.name;
      EXPECT_GE(nw.workload.keys(), nw.workload.N) << nw.name;
      EXPECT_EQ(nw.workload.B % nw.workload.kv_group, 0) << nw.name;
    }
  }
}

}  // namespace
}  // namespace flashtune
