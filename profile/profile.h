// The tuning profile (profiles/<gpu>.json, docs/profile-schema.md): the GPU and build it was
// measured with, the workloads, one measurement per (workload, config) with its validity, timing,
// counters and resources, the best config per workload, and the coefficients `flashtune fit`
// fills in. Host-only (nlohmann/json). Written atomically (temp file in the same folder + rename);
// a tune appends its pairs to a journal beside it and compacts them in (profile/profile_store.h).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile/workload_set.h"

namespace flashtune {

// 2: each workload may name its element type ("dtype": fp32, bf16 or fp16; absent = fp32). Version 1
// files have no dtype and load unchanged as fp32.
// 3: each workload may give the inference operands' shape: "kv_len" (keys per entry; absent = N)
// and "kv_group" (query heads per K/V head; absent = 1). Versions 1 and 2 load unchanged.
inline constexpr int kProfileSchemaVersion = 3;
inline constexpr int kOldestProfileSchemaVersion = 1;
inline constexpr const char* kProfileKind = "flashtune-profile";

// A profile file is malformed or does not fit the schema; what() names the file and the field.
class ProfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Validity of one (workload, config). Every status is final: a resumed tune skips the pair.
namespace status {
inline constexpr const char* kOk = "ok";
inline constexpr const char* kCompile = "compile";            // config not compiled into this build
inline constexpr const char* kLaunch = "launch";              // launch or kernel failed (CUDA error)
inline constexpr const char* kResources = "resources";        // does not fit the device (smem, grid, memory)
inline constexpr const char* kWrongResult = "wrong-result";   // verification failed; never timed
}  // namespace status
bool is_known_status(const std::string& s);

// Every record below keeps the fields of its JSON object that this build does not know in
// `extra`, and writes them back after its own: a profile rewritten by an older or newer flashtune
// (fit, merge, a resumed tune) loses nothing another version put there.

struct GpuIdentity {
  std::string name;  // "NVIDIA H200"
  std::string spec;  // configs/gpus stem, "nvidia-h200"
  int sm_count = 0;
  std::string cc;    // "9.0"
  int sm_clock_max_mhz = 0, mem_clock_mhz = 0;
  long long l2_bytes = 0;
  std::string driver, cuda_runtime;
  int device_index = 0;
  nlohmann::json extra = nlohmann::json::object();
};

struct BuildInfo {
  std::string compiler, cuda_arch, git_commit, kernel_set;  // kernel_set: "full" | "small"
  nlohmann::json extra = nlohmann::json::object();
};

struct VerifyResult {
  double rel_l2 = 0, max_abs = 0;
};

// The statistics a file may leave out are optional: absent stays absent through a rewrite (a 0.0
// in their place would be a wrong number, a min_ms of 0 beside a median of 3.4).
struct TimingSummary {
  double median_ms = 0;
  std::optional<double> min_ms, max_ms, mean_ms, stdev_ms, rel_stdev;
  std::optional<int> samples, dropped;
  double sm_clock_mhz = 0;           // median SM clock over the kept samples; 0 when unknown
  std::string stop;                  // why sampling stopped (converged, time-cap, ...); empty when unknown
  std::vector<double> samples_ms;    // the kept samples, in the order taken (T4 export's runtimes)
  nlohmann::json extra = nlohmann::json::object();
};

struct ResourceUsage {
  int registers = 0, static_smem = 0, dynamic_smem = 0, local_bytes = 0, threads = 0;
};

struct Measurement {
  std::string workload, config;  // workload name, TileConfig::name()
  std::string status = status::kOk;
  std::string reason;            // one line when status != ok
  std::optional<VerifyResult> verify;
  std::optional<TimingSummary> timing;
  std::map<std::string, double> counters;
  std::string counters_status;   // "ok" | "unavailable: <reason>"
  std::optional<ResourceUsage> resources;
  std::string timestamp;         // UTC, ISO 8601, when the measurement finished
  int device_index = 0;          // which GPU measured it (--devices all)
  double elapsed_s = 0;          // wall time spent on this pair (verify + timing + counters)
  nlohmann::json extra = nlohmann::json::object();
};

struct BestConfig {
  std::string config;
  double median_ms = 0;
};

struct Profile {
  GpuIdentity gpu;
  BuildInfo build;
  std::vector<NamedWorkload> workloads;
  std::vector<Measurement> measurements;
  std::map<std::string, BestConfig> best;           // by workload name; recompute_best() fills it
  nlohmann::json coefficients = nlohmann::json::object();  // owned by `flashtune fit`, kept as is
  nlohmann::json tune_settings = nlohmann::json::object();  // how the last tune sampled (informational)
  nlohmann::json extra = nlohmann::json::object();  // unknown top-level fields, kept on rewrite
};

// Best = lowest median among the ok measurements of each workload.
void recompute_best(Profile& p);

// Field order as in docs/profile-schema.md.
nlohmann::ordered_json to_json(const Profile& p);
// The file's text: one workload and one measurement per line (readable diffs, quick rewrites).
std::string profile_text(const Profile& p);
// Throws ProfileError("<source>: field 'measurements[3].status' ...").
Profile profile_from_json(const nlohmann::json& doc, const std::string& source);

// One measurement as the profile stores it (a line of "measurements"; also a journal line,
// profile/profile_journal.h). measurement_from_json throws ProfileError("<source>: field '<at>.status' ...").
nlohmann::ordered_json measurement_to_json(const Measurement& m);
Measurement measurement_from_json(const nlohmann::json& j, const std::string& source, const std::string& at);

// Throws ProfileError naming the file (cannot open, malformed JSON, bad field).
Profile load_profile(const std::string& path);
// Writes to a temporary beside the file and renames it over it (creating the folder), so a reader
// or a crash sees the old file or the new one, never a half-written one; the rename is made durable
// (folder fsynced) before returning. Through profile/output_file.h's StagedOutput: a symbolic link is
// followed (the file it names is rewritten, the link kept), the file keeps its mode, a read-only
// file is refused, and temporaries a killed writer left are removed. Throws ProfileError.
void write_profile_atomic(const std::string& path, const Profile& p);

// Which (workload, config) pairs a profile already holds (any status).
class DoneIndex {
 public:
  DoneIndex() = default;
  explicit DoneIndex(const Profile& p);
  bool contains(const std::string& workload, const std::string& config) const;
  void insert(const std::string& workload, const std::string& config);
  std::size_t size() const { return done_.size(); }

 private:
  std::set<std::pair<std::string, std::string>> done_;
};

// Adds workloads the profile does not list yet. Throws ProfileError when a name is already there
// with other dimensions ("workload 't10' is B=10 ... in the profile but B=12 ... now").
void add_workloads(Profile& p, const std::vector<NamedWorkload>& workloads);

// Current UTC time as "2026-11-21T10:15:03Z".
std::string utc_timestamp();

}  // namespace flashtune
