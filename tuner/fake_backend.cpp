#include "tuner/fake_backend.h"

#include <chrono>
#include <stdexcept>
#include <thread>

namespace flashtune {

WorkloadSetup FakeBackend::begin_workload(const NamedWorkload&) {
  ++workloads_;
  return {};
}

double FakeBackend::fake_time_ms(const Workload& w, const TileConfig& c) {
  const double work = double(w.B) * double(w.N) * double(w.keys()) * double(w.d) * (w.causal ? 0.5 : 1.0);
  const double tile = 1.0 + 0.1 * double(int(c.variant)) + 0.02 * double(c.Br / 16) + 0.03 * double(c.Bc / 16) +
                      0.05 * double(int(c.layout));
  return 1e-3 + work / 2e10 * tile;
}

bool FakeBackend::fake_wrong(const TileConfig& c) { return c.layout == Layout::Plain && c.Br == 64 && c.Bc == 64; }

Measurement FakeBackend::measure(const NamedWorkload& w, const TileConfig& c) {
  ++calls_;
  if (options_.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(options_.delay_ms));
  if (options_.fail_after >= 0 && returned_.load() >= options_.fail_after)
    throw std::runtime_error("fake backend: simulated crash while measuring " + w.name + " " + c.name());
  Measurement m;
  m.workload = w.name;
  m.config = c.name();
  m.device_index = options_.device_index;
  m.resources = ResourceUsage{64 + 8 * int(c.variant), 0, 4 * (c.Br + c.Bc) * c.d, 0, c.Br};
  if (fake_wrong(c)) {
    m.status = status::kWrongResult;
    m.reason = "rel_l2 0.5 (tolerance 0.0001), 0 non-finite";
    m.verify = VerifyResult{0.5, 1.0};
    m.counters_status = "unavailable: config not timed";
  } else {
    m.verify = VerifyResult{2e-7, 1e-6};
    TimingSummary t;
    t.median_ms = fake_time_ms(w.workload, c);
    t.min_ms = t.max_ms = t.mean_ms = t.median_ms;
    t.stdev_ms = t.rel_stdev = 0.0;
    t.samples = 10;
    t.dropped = 0;
    t.stop = "converged";
    t.sm_clock_mhz = 1980;
    t.samples_ms.assign(10, t.median_ms);
    m.timing = t;
    if (options_.counters) {
      m.counters["dram__bytes_read.sum"] = 3.0 * 4.0 * double(w.workload.B * w.workload.N * w.workload.d);
      m.counters_status = "ok";
    } else {
      m.counters_status = "unavailable: fake backend without counters";
    }
  }
  m.timestamp = utc_timestamp();
  ++returned_;
  return m;
}

GpuIdentity fake_gpu_identity() {
  GpuIdentity g;
  g.name = "Fake GPU";
  g.spec = "fake-gpu";
  g.sm_count = 132;
  g.cc = "9.0";
  return g;
}

}  // namespace flashtune
