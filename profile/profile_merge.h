// `flashtune merge`: joins profiles measured apart (the shards of one plan, tuned on several GPUs
// of one model by one build) into one. Refuses profiles of another GPU or another build with the
// reason; keeps one measurement of a pair measured twice, by a fixed rule, and lists them; checks
// the inputs' shard records (a shard index given twice or not at all). The result against a tune
// plan (pairs missing, pairs beyond it): tuner/tune_plan.h plan_coverage. Host-only.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "profile/profile.h"

namespace flashtune {

// The inputs cannot be joined: one line naming both files and what differs.
class MergeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The rule for a pair in several inputs, as the reports state it.
inline constexpr const char* kMergeKeepRule =
    "an ok measurement beats a failed one; otherwise the earlier input on the command line wins";

struct MergeInput {
  std::string path;
  Profile profile;
};

struct MergeDuplicate {
  std::string workload, config;
  std::string kept_from, dropped_from;      // input paths
  std::string kept_status, dropped_status;
  double kept_ms = 0, dropped_ms = 0;       // medians, 0 without timing
};

struct MergedInput {
  std::string path;
  std::size_t pairs = 0, kept = 0;  // pairs in the input, of them kept in the result
  std::string shard;                // "I/N" from its tune_settings, empty for a whole-plan profile
};

struct MergeResult {
  Profile merged;
  std::vector<MergedInput> inputs;
  std::vector<MergeDuplicate> duplicates;
  std::vector<std::string> warnings;  // shard records that do not add up, settings that differ
};

// Throws MergeError when an input's GPU (name, spec, SMs, compute capability) or build (commit,
// kernel set, compiler, arch) differs from the first input's, or a workload name has other
// dimensions in two inputs. The result: the first input's GPU and build, the workloads of all
// inputs (first seen first), one measurement per pair (inputs in order, kMergeKeepRule), best
// recomputed, the first input's coefficients that has any, tune_settings of the first input
// without its shard and with "merged_from".
MergeResult merge_profiles(const std::vector<MergeInput>& inputs);


}  // namespace flashtune
