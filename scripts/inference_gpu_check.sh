#!/usr/bin/env bash
# One call on a GPU machine (the device tool) for issue 26's inference operands (Nq != Nkv with
# bottom-right causal, grouped heads): build the small kernel set with the tests and the Python
# module, run kernels_inference_test (every compiled instance against the double reference), the
# whole ctest, pytest, and a few `flashtune run --check` decode and GQA shapes with their time and
# the model's prediction beside it.
# Logs under $OUT (at most 8 files): summary.txt, build.log, inference.log, ctest.log, pytest.log,
# runs.log. Usage: OUT=dir bash scripts/inference_gpu_check.sh     (BUILD=dir to build elsewhere)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-/tmp/inference-gpu-check}"
build="${BUILD:-/tmp/flashtune-inference}"
mkdir -p "$out"
cd "$root"
summary="$out/summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
t0=$(date +%s)
since() { echo "$(( $(date +%s) - t0 )) s"; }

say "== $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1) =="
py="$(command -v python3)"
say "python $("$py" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)' 2>&1)"

{ cmake -S . -B "$build" -G Ninja -DFLASHTUNE_SMALL_KERNEL_SET=ON -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DFLASHTUNE_BUILD_BENCH=OFF -DPython3_EXECUTABLE="$py" &&
  cmake --build "$build" -j16 -- -k 0; } > "$out/build.log" 2>&1
rc=$?
say "build rc=$rc ($(since)); spills: $(grep -c 'bytes spill' "$out/build.log")"
grep "bytes spill" "$out/build.log" | sed 's/^/  /' | tee -a "$summary"
if [ $rc -ne 0 ]; then grep -E "error|Error" "$out/build.log" | head -30 | tee -a "$summary"; exit 2; fi

timeout 240 "$build/tests/kernels_inference_test" > "$out/inference.log" 2>&1
say "kernels_inference_test rc=$? ($(since))"
grep -E "^\[  (PASSED|FAILED) |worst rel L2|^device:" "$out/inference.log" | tee -a "$summary"

(cd "$build" && timeout 200 ctest -j8 --timeout 180 --output-on-failure > "$out/ctest.log" 2>&1)
say "ctest rc=$? ($(since)): $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -1)"
grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess)" "$out/ctest.log" | head -20 | tee -a "$summary"

export PYTHONPATH="$build/python" PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
(FLASHTUNE_BINARY="$build/app/flashtune" timeout 150 "$py" -m pytest -q -rs -p no:cacheprovider python/tests \
   > "$out/pytest.log" 2>&1)
say "pytest rc=$? ($(since)): $(tail -1 "$out/pytest.log")"
grep -E "^(FAILED|ERROR)" "$out/pytest.log" | head -20 | tee -a "$summary"

# Decode and GQA shapes through the CLI: the dispatcher's pick, checked, timed; the model's
# prediction of the same config beside it.
ft="$build/app/flashtune"
: > "$out/runs.log"
for args in "--dtype bf16 --B 8 --heads 32 --kv-heads 8 --N 1 --kv-len 4097 --d 128 --causal" \
            "--dtype bf16 --B 8 --heads 32 --kv-heads 8 --N 4 --kv-len 32768 --d 128 --causal" \
            "--dtype bf16 --B 4 --heads 32 --kv-heads 8 --N 64 --kv-len 8192 --d 64 --causal" \
            "--B 8 --heads 32 --kv-heads 8 --N 16 --kv-len 4097 --d 64 --causal" \
            "--B 2 --heads 8 --kv-heads 2 --N 16 --kv-len 1000 --d 64 --causal --qkv-layout bhnd"; do
  echo "## run --auto $args --check" >> "$out/runs.log"
  timeout 60 "$ft" run --auto $args --check --time-cap 0.5 >> "$out/runs.log" 2>&1
  echo "rc=$?" >> "$out/runs.log"
done
say "runs ($(since)):"
grep -E "^## |^config|^chosen|PASS|FAIL|median|rc=" "$out/runs.log" | tee -a "$summary"
say "total $(since)"
