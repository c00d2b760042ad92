// Two profiles of the same workloads side by side (`flashtune compare`): how far apart the median
// times of the pairs both measured are, whether the two pick the same best config per workload,
// and where they do not, whether that is a tie. Used for the run-to-run stability of a sweep (two
// runs on the same GPU model) and for cross-GPU transfer (an H100 profile against an H200 one).
// Host-only. Relative differences are (B - A) / A: A is the reference.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "profile/profile.h"

namespace flashtune {

// The profiles cannot be compared (a workload name with other dimensions, no pair in common);
// what() is one line.
class CompareError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CompareOptions {
  double tolerance = 0.02;      // |relative difference| at or below this counts as "within"
  double long_kernel_ms = 0.05;  // the long-kernel subset: both medians at or above this
};

// Distribution of |(B - A) / A| over a set of pairs (0 for an empty set).
struct RelDiffStats {
  std::size_t pairs = 0;
  double median_abs = 0, p90_abs = 0, max_abs = 0;
  double median_signed = 0;    // a systematic shift shows here (B slower: > 0)
  std::size_t within = 0;      // pairs with |diff| <= tolerance
  double share_within = 0;     // within / pairs
  std::string max_workload, max_config;  // the pair of max_abs
};

// Pairs outside the tolerance, by workload: where the differences sit.
struct OutsideByWorkload {
  std::string workload;
  std::size_t outside = 0, pairs = 0;
  double median_diff_us = 0;  // median of (B - A) over the workload's pairs, microseconds
  double median_a_us = 0;     // median of A's medians over the workload's pairs
};

struct WorkloadBest {
  std::string workload;
  std::string best_a, best_b;
  double best_a_ms = 0, best_b_ms = 0;
  double best_rel_diff = 0;  // (best_b_ms - best_a_ms) / best_a_ms
  bool same = false;
  // Where the bests differ: A's median of B's best against A's best, (A[best_b] - A[best_a]) /
  // A[best_a]; nullopt when A has no ok measurement of B's best.
  std::optional<double> b_best_in_a;
  bool tie = false;  // differ, and b_best_in_a <= tolerance: A cannot tell the two apart
};

// The per-pair statistics of the pairs measured by one device of A and one of B.
struct DeviceBreakdown {
  int device_a = 0, device_b = 0;
  RelDiffStats all;
};

struct ProfileComparison {
  GpuIdentity gpu_a, gpu_b;
  bool same_gpu = false;           // same spec and name
  std::size_t ok_a = 0, ok_b = 0;  // measurements with status ok and timing
  std::size_t common = 0;          // pairs ok in both
  std::size_t only_a = 0, only_b = 0;  // pairs ok in one, absent or not ok in the other
  RelDiffStats all, long_kernels;
  std::vector<OutsideByWorkload> outside;  // workloads with pairs outside, most first
  std::size_t workloads = 0;       // workloads with a best in both, measured on the same configs
  std::size_t partial_workloads = 0;  // left out of the best comparison: ok configs differ (a partial run)
  std::size_t same_best = 0, ties = 0;
  RelDiffStats best;               // over the per-workload best medians
  std::vector<WorkloadBest> per_workload;  // A's workload order
  std::vector<DeviceBreakdown> devices;    // only when A or B used more than one device
  CompareOptions options;
};

// Throws CompareError when a workload name has other dimensions in B or no pair is ok in both.
ProfileComparison compare_profiles(const Profile& a, const Profile& b, const CompareOptions& options = {});

// Linear interpolation between order statistics (numpy's default); 0 for none. q in [0, 1].
double quantile_of(std::vector<double> values, double q);

}  // namespace flashtune
