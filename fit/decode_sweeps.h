// The decode family's measured split sweeps (benchmarks/decode_bench: one JSON object a line, per
// shape, config and split count, the median of L2-flushed calls; docs/results/h100-decode-bench-*.jsonl)
// as fit points, and the decode model scored against them: MAPE over every timing and, per swept
// shape, the measured time at the model's split against the best measured split. What `flashtune
// fit --decode` prints and tests/model_decode_test.cpp checks. Host-only.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fit/fit_dataset.h"
#include "model/coefficients.h"
#include "model/gpu_spec.h"

namespace flashtune::fit {

struct DecodeSweepPoint {
  std::string source;  // the file's name (without its folder)
  long long batch = 0;
  int q_heads = 0, kv_heads = 0;
  bool default_split = false;  // the launch's split was the traits' default, not a sweep's
  bool model_split = false;    // the launch's split was the model's pick (decode_bench times it beside the default)
  // The line says which combine ran ("cluster_combine"): the kernel had the cluster combine, and the
  // shape's split pick follows the traits' rule at every split; without it, the combine kernel.
  bool records_combine = false;
};

struct DecodeSweeps {
  FitDataset data;                     // points with FitPoint::splits set
  std::vector<DecodeSweepPoint> meta;  // beside data.points, index for index
};

// Reads every line that starts with '{' of each file. Throws FitInputError naming the file and
// line for a field missing, a config that does not parse or is not a decode config, or a point
// the model refuses.
DecodeSweeps load_decode_sweeps(const std::vector<std::string>& paths, const model::GpuSpec& gpu);

struct DecodeShapeScore {
  std::string label;  // "run1 1x32/8 heads Nq 1 keys 32768 d 128 decode/d128/..."
  std::string source, config;  // the file's name; the swept config
  long long batch = 0, nq = 0, keys = 0;
  int q_heads = 0, kv_heads = 0, d = 0;
  DType dtype = DType::Fp32;
  double bytes = 0;  // Q, K, V and O moved once (what the bandwidth line divides)
  int model_splits = 0, measured_at = 0, best_splits = 0;
  double best_ms = 0, at_ms = 0;
  double model_ms = 0;  // the model's time at its split
  double regret = 0;    // at_ms / best_ms - 1
};

struct DecodeScore {
  int timings = 0;
  double mape = 0;
  std::vector<std::pair<std::string, double>> mape_by_dtype;  // ("bf16", 0.039), ...
  // Per swept shape (one config, one file, the non-default splits): the measured time at the
  // model's split (pick_decode_splits), or at the nearest measured split above it, against the best.
  std::vector<DecodeShapeScore> shapes;
  int within5 = 0, within10 = 0;
  double worst = 0;
};

DecodeScore score_decode(const DecodeSweeps& s, const model::GpuSpec& gpu, const model::Coefficients& k);
// Lines: one per shape (with `per_shape`), then "decode model on N timings: MAPE ...; split ...".
std::string render_decode_score(const DecodeScore& r, bool per_shape);
// The same as JSON (`flashtune fit --decode --json`): timings, mape and mape_by_dtype (fractions),
// within5, within10, worst, and per shape its label, model_splits, measured_at, best_splits, at_ms,
// best_ms and regret.
nlohmann::ordered_json decode_score_json(const DecodeScore& r);

// One CSV row per timing (`flashtune fit --decode --residuals`): its file and line, shape, config,
// split count, combine, measured and predicted times: where the model misses, timing by timing.
std::string decode_residuals_csv(const DecodeSweeps& s, const model::GpuSpec& gpu, const model::Coefficients& k);

// The decode coefficients that `flashtune fit --decode` moves by default.
std::vector<std::string> default_decode_free_coefficients();

}  // namespace flashtune::fit
