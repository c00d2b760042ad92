// `flashtune tune --shard I/N`: which part of a plan one of N independent tunes (a Slurm array
// task, one GPU each) measures. Deterministic (every shard computes the same split from the same
// command) and balanced by predicted tuning time, so the shards finish together: the plan's
// pairs, in plan order, are cut into N consecutive runs of equal predicted cost (McNaughton's
// wrap-around rule), so a shard's cost is within one pair of the mean and a workload spans one
// shard, or two where a cut falls inside it (its inputs and reference are then prepared twice).
// Host-only.
#pragma once

#include <string>
#include <vector>

#include "model/gpu_spec.h"
#include "tuner/tune_plan.h"

namespace flashtune {

struct Shard {
  int index = 0, count = 1;  // 0 <= index < count
  bool whole() const { return count == 1; }
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// "2/8" -> {2, 8}. Throws PlanError("shard '8/8': want I/N with 0 <= I < N, e.g. 0/4").
Shard parse_shard(const std::string& text);

// What balancing predicts each pair of the plan costs to tune, in seconds, plan order: a fixed
// 0.25 s (verify, warm-up, L2 flushes, process overhead; docs/tuning.md's measured 0.23-0.34 s per
// pair) plus 20 launches of the kernel time the model predicts on `spec` with its default
// coefficients (never a profile's fit: each shard has its own profile, and all must agree). A
// config the model refuses, or no spec (nullptr), costs the fixed part plus 20 launches of the
// workload's nominal FLOPs at 10 TFLOP/s.
std::vector<double> tune_cost_s(const TunePlan& plan, const model::GpuSpec* spec);

// Which of `count` shards each pair belongs to (plan order); `cost` as tune_cost_s gives it.
std::vector<int> shard_owners(const std::vector<double>& cost, int count);

// The pairs of shard `index` (plan order kept); the workloads stay the plan's.
TunePlan shard_of(const TunePlan& plan, const std::vector<int>& owners, int index);

}  // namespace flashtune
