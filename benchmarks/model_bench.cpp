// Single-config predictions per second on one core: the geometry analysis is cached per config
// (as `predict --all` and the tuner do), so each iteration is counts + occupancy + DRAM rule +
// waves + per-pipe times for one (workload, config) on the H200 spec.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <string>
#include <vector>

#include "kernels/traits/variants.h"
#include "model/baselines.h"
#include "model/config_catalog.h"
#include "model/gpu_spec.h"
#include "model/predict.h"

namespace {

using namespace flashtune;

model::GpuSpec h200() { return model::find_gpu_spec("h200", model::default_gpu_spec_dir()); }

// The seed cases (t10, t11, t22, t29, t30), causal and not, against every compiled config of
// their d: the mix `predict --all` and the tuner's ranking evaluate.
struct Case {
  Workload w;
  const model::GeometryAnalysis* g;
};

std::vector<Case> seed_cases(model::ConfigCatalog& catalog) {
  const Workload seeds[] = {{10, 2048, 64, false, 0}, {13600, 128, 32, false, 0}, {500, 2048, 64, false, 0},
                            {4, 32768, 32, false, 0}, {2, 32768, 64, false, 0}};
  std::vector<Case> cases;
  for (Workload w : seeds)
    for (bool causal : {false, true}) {
      w.causal = causal;
      for (const TileConfig& c : compiled_configs())
        if (!model::config_rejection(c, w)) cases.push_back({w, &catalog.analysis(c)});
    }
  return cases;
}

void BM_PredictSingleConfig(benchmark::State& state) {
  const model::GpuSpec gpu = h200();
  model::ConfigCatalog catalog;
  const std::vector<Case> cases = seed_cases(catalog);
  if (cases.empty()) {
    state.SkipWithError("no compiled config matches the seed cases' d");
    return;
  }
  const model::Coefficients k;
  std::size_t i = 0;
  for (auto _ : state) {
    const Case& c = cases[i];
    i = i + 1 == cases.size() ? 0 : i + 1;
    model::Prediction p = model::predict(c.w, *c.g, gpu, k);
    benchmark::DoNotOptimize(p.time_s);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["configs"] = double(cases.size());
}
BENCHMARK(BM_PredictSingleConfig);

// The same plus both baselines, as `predict` prints them.
void BM_PredictWithBaselines(benchmark::State& state) {
  const model::GpuSpec gpu = h200();
  model::ConfigCatalog catalog;
  const std::vector<Case> cases = seed_cases(catalog);
  if (cases.empty()) {
    state.SkipWithError("no compiled config matches the seed cases' d");
    return;
  }
  const model::Coefficients k;
  std::size_t i = 0;
  for (auto _ : state) {
    const Case& c = cases[i];
    i = i + 1 == cases.size() ? 0 : i + 1;
    const double t = model::predict(c.w, *c.g, gpu, k).time_s + model::roofline_time(c.w, gpu).time_s +
                     model::seed_model_time(c.w, c.g->config, gpu).time_s;
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PredictWithBaselines);

// Cold: the per-config geometry analysis (simulating every shared access site) that the cache
// saves; paid once per config per process.
void BM_GeometryAnalysis(benchmark::State& state) {
  const std::vector<TileConfig>& configs = compiled_configs();
  std::size_t i = 0;
  for (auto _ : state) {
    model::GeometryAnalysis a = model::analyse_geometry(make_geometry(configs[i]));
    benchmark::DoNotOptimize(a.wavefronts_per_kv_tile);
    i = i + 1 == configs.size() ? 0 : i + 1;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GeometryAnalysis);

// `predict --causal --all` at huge grids (issue 27, item 8): every compiled config of d = 64 on one
// causal workload, cold (each iteration a new B, so the shared-SM schedule's cache never hits).
// Arg 0: B = 10^9, N = 128 (2 x 10^9 blocks and more per config; the per-block schedule took
// 8.5 GB, then bad_alloc); arg 1: B = 1, N = 2^31 - 1 (one entry, 3.4 x 10^7 query tiles at
// Br = 64; 10 s per config before). Reports the process's peak RSS in MB.
void BM_PredictCausalAllHuge(benchmark::State& state) {
  const model::GpuSpec gpu = h200();
  model::ConfigCatalog catalog;
  const bool long_row = state.range(0) == 1;
  Workload w{long_row ? 1LL : 1000000000LL, long_row ? 2147483647LL : 128LL, 64, true, 0};
  std::vector<const model::GeometryAnalysis*> configs;
  for (const TileConfig& c : compiled_configs())
    if (!model::config_rejection(c, w)) configs.push_back(&catalog.analysis(c));
  if (configs.empty()) {
    state.SkipWithError("no compiled config of d = 64");
    return;
  }
  const model::Coefficients k;
  long long iteration = 0;
  for (auto _ : state) {
    // A new grid each iteration (the schedule is cached per grid): B + i, or N - i.
    if (long_row)
      w.N = 2147483647LL - iteration++;
    else
      w.B = 1000000000LL + iteration++;
    double sum = 0;
    for (const model::GeometryAnalysis* g : configs) sum += model::predict(w, *g, gpu, k).time_s;
    benchmark::DoNotOptimize(sum);
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  state.counters["configs"] = double(configs.size());
  state.counters["max_rss_MB"] = double(u.ru_maxrss) / 1024.0;
}
BENCHMARK(BM_PredictCausalAllHuge)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
