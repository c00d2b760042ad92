#!/usr/bin/env bash
# Runs every libFuzzer target (fuzz/) for a bounded time, seeded from the shipped files, and prints
# the executions per target. CI runs it for a few seconds per target (scripts/sanitize_host.sh);
# run it longer on demand. A crash leaves its input in $BUILD/fuzz-artifacts/ and fails the run:
# copy it to fuzz/regressions/<target>/ (ctest replays those) and add a unit test for the defect.
# Usage: scripts/fuzz.sh [seconds per target] [target...]      (default 20 s, every target)
#        BUILD=dir (default build-asan, configured by scripts/sanitize_host.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${1:-20}
shift || true
build=${BUILD:-$root/build-asan}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gpu_spec profile journal workload_file npy config_name cli_numbers)
work=$build/fuzz-work
mkdir -p "$work" "$build/fuzz-artifacts"

# Seeds: the shipped files of each kind (small ones: libFuzzer's max input length follows the
# largest seed, and a 1.5 MB profile would slow every execution), plus hand-made edge cases.
seed() {
  local t=$1
  mkdir -p "$work/$t"
  case $t in
    gpu_spec) cp configs/gpus/*.json "$work/$t/" ;;
    profile) cp tests/data/*profile*.json "$work/$t/" ;;
    workload_file) cp configs/workloads/seed_cases.json configs/workloads/grid.json "$work/$t/" ;;
    journal) # a header and measurement lines of the fuzz target's profile (GPU "Fuzz GPU", workload w, d=64)
      local h='{"kind": "flashtune-profile-journal", "schema_version": 1, "gpu": {"name": "Fuzz GPU", "spec": "fuzz-gpu"}}'
      local m='{"workload": "w", "config": "row_smem/d64/br64xbc32/plain", "status": "ok", "timing": {"median_ms": 1.5, "min_ms": 1.4, "max_ms": 1.6}}'
      printf '%s\n%s\n' "$h" "$m" > "$work/$t/one"
      printf '%s\n%s\n%s' "$h" "$m" '{"workload": "w", "con' > "$work/$t/torn"
      printf '%s\n%s\n' "$h" "${m/1.5/-1.5}" > "$work/$t/negative"
      printf '%s\n%s\n' "$h" "$(printf '[%.0s' $(seq 1 3000))" > "$work/$t/deep" ;;
    npy) python3 - "$work/$t" <<'PY'
import struct, sys
def npy(shape, n_floats, version=1):
    d = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % (str(tuple(shape)),)
    pre = 6 + 2 + (2 if version == 1 else 4)
    pad = (64 - (pre + len(d) + 1) % 64) % 64
    d = d + " " * pad + "\n"
    head = b"\x93NUMPY" + bytes([version, 0]) + (struct.pack("<H", len(d)) if version == 1 else struct.pack("<I", len(d)))
    return head + d.encode() + struct.pack("<%df" % n_floats, *([0.5] * n_floats))
for name, data in {"b2n3d4": npy((2, 3, 4), 24), "v2": npy((1, 2, 2), 4, 2), "empty": npy((0, 4, 4), 0),
                   "short": npy((2, 3, 4), 5)}.items():
    open(sys.argv[1] + "/" + name + ".npy", "wb").write(data)
PY
    ;;
    config_name) printf 'regtile_2d/d64/br64xbc32/swizzled' > "$work/$t/a"; printf 'mma_3xtf32/d128/br64xbc64/padded' > "$work/$t/b"
                 printf 'row_smem/d32/br16xbc16/plain' > "$work/$t/c" ;;
    cli_numbers) for v in 1 -1 2048 9223372036854775807 1e-3 0.125 3.4e38 '' nan 0x10; do printf '%s' "$v" > "$work/$t/$(echo -n "$v" | md5sum | cut -c1-8)"; done ;;
  esac
  if [ -d "fuzz/regressions/$t" ]; then cp fuzz/regressions/$t/* "$work/$t/" 2>/dev/null || true; fi
}

# The targets run side by side, FUZZ_JOBS at a time (default: one per core; each is one process,
# so on the 2-core CI machine two targets take the time of one), then report in order.
run_one() {
  local t=$1 log=$build/fuzz-$1.log
  # -rss_limit_mb / -malloc_limit_mb: a loader that allocates what a tiny input claims is a bug.
  if "$build/fuzz/fuzz_$t" "$work/$t" -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=1024 \
       -malloc_limit_mb=256 -timeout=10 -artifact_prefix="$build/fuzz-artifacts/$t-" > "$log" 2>&1; then
    echo ok > "$log.result"
  else
    echo "CRASH (see $log and $build/fuzz-artifacts/)" > "$log.result"
  fi
}
jobs=${FUZZ_JOBS:-$(nproc)}
for t in "${targets[@]}"; do
  seed "$t"
  rm -f "$build/fuzz-$t.log.result"
  run_one "$t" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
done
wait

status=0
for t in "${targets[@]}"; do
  log=$build/fuzz-$t.log
  result=$(cat "$log.result" 2>/dev/null || echo "no result (see $log)")
  [ "$result" = ok ] || status=1
  execs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo "?")
  echo "fuzz_$t: $execs executions in ${seconds} s, coverage $cov edges: $result"
  [ "$result" = ok ] || tail -30 "$log"
done
exit $status
