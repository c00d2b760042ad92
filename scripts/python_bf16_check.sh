#!/usr/bin/env bash
# One call on a GPU machine (the device tool): the Python module and the 16-bit benchmarks.
#   1. configure and build the small kernel set with the Python module for the machine's python3
#      (the one holding PyTorch), targets flashtune and flashtune_python only;
#   2. build benchmarks/mma_sync_peak and measure the mma.sync m16n8k16 bf16 peak (beside the build);
#   3. python/tests under pytest (host and GPU tests: bf16 / fp16 against float64, mixed dtypes,
#      torch.compile in bf16);
#   4. benchmarks/sdpa_compare.py --dtype bf16 on a few cases (CASES=..., default t10 and the odd-N
#      causal case) as a smoke test, with the measured peak;
#   5. benchmarks/gpt2_e2e.py --dtype bf16 at GPT2_N (default 1024; a list: GPT2_N="1024 2048"; 0 skips it).
# Logs and results under $OUT (at most 8 files): summary.txt, build.log, mma_peak.txt, pytest.log,
# sdpa-bf16.md, <gpu>-sdpa-compare-bf16.json, gpt2-bf16.json.
# GPT2_REPS and GPT2_GEN set gpt2_e2e's --reps and --gen-tokens (default 10 and 4).
# Usage: OUT=dir bash scripts/python_bf16_check.sh        (BUILD=dir to build elsewhere than build-py)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-/tmp/python-bf16-check}"
build="${BUILD:-$root/build-py}"
cases="${CASES:-t10,n1999_d64_causal}"
gpt2_n="${GPT2_N:-1024}"
mkdir -p "$out"
cd "$root"
summary="$out/summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
t0=$(date +%s)
since() { echo "$(( $(date +%s) - t0 )) s"; }

say "== $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1) =="
say "git HEAD of the copy: $(git rev-parse --short HEAD 2>/dev/null || echo unknown) (the working tree is what was sent), $(git status --short | wc -l) changed paths"
py="$(command -v python3)"
say "python $("$py" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)' 2>&1)"

# mma.sync bf16 peak, compiled in the background while the project builds
( nvcc -O3 -arch=sm_90 -o /tmp/mma_sync_peak benchmarks/mma_sync_peak.cu > "$out/mma_peak.txt" 2>&1 ) &
nvcc_pid=$!

{ cmake -S . -B "$build" -G Ninja -DFLASHTUNE_SMALL_KERNEL_SET=ON -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DFLASHTUNE_BUILD_TESTS=OFF -DFLASHTUNE_BUILD_BENCH=OFF \
    -DPython3_EXECUTABLE="$py" &&
  cmake --build "$build" -j16 --target flashtune flashtune_python; } > "$out/build.log" 2>&1
rc=$?
say "build rc=$rc ($(since))"
if [ $rc -ne 0 ]; then grep -E "error|Error" "$out/build.log" | head -30 | tee -a "$summary"; exit 2; fi
"$build/app/flashtune" list --dtype bf16 2>&1 | tee -a "$summary" | head -8

wait "$nvcc_pid"
peak_arg=()
if [ -x /tmp/mma_sync_peak ]; then
  timeout 60 /tmp/mma_sync_peak bf16 >> "$out/mma_peak.txt" 2>&1
  say "mma.sync bf16 peak rc=$?: $(grep -E '^bf16 m16n8k16' "$out/mma_peak.txt" | sort -k9 -n -r | head -1)"
  grep -q '^bf16 m16n8k16' "$out/mma_peak.txt" && peak_arg=(--mma-peak-tflops "$out/mma_peak.txt")
fi

export PYTHONPATH="$build/python" PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
(FLASHTUNE_BINARY="$build/app/flashtune" timeout "${PYTEST_TIMEOUT:-150}" "$py" -m pytest -q -rs -p no:cacheprovider \
   python/tests > "$out/pytest.log" 2>&1)
say "pytest rc=$? ($(since)): $(tail -1 "$out/pytest.log")"
grep -E "^(FAILED|ERROR)" "$out/pytest.log" | head -20 | tee -a "$summary"

timeout "${SDPA_TIMEOUT:-120}" "$py" benchmarks/sdpa_compare.py --flashtune "$build/app/flashtune" --dtype bf16 \
  --cases "$cases" --time-cap 0.1 "${peak_arg[@]}" --out "$out/{gpu}-sdpa-compare-bf16.json" > "$out/sdpa-bf16.md" 2>&1
say "sdpa_compare bf16 rc=$? ($(since))"
tee -a "$summary" < "$out/sdpa-bf16.md" | tail -16

if [ "$gpt2_n" != 0 ]; then
  timeout "${GPT2_TIMEOUT:-60}" "$py" benchmarks/gpt2_e2e.py --dtype bf16 --n $gpt2_n --reps "${GPT2_REPS:-10}" --gen-tokens "${GPT2_GEN:-4}" \
    --json "$out/gpt2-bf16.json" 2>&1 | tee -a "$summary"
  say "gpt2_e2e bf16 rc=${PIPESTATUS[0]} ($(since))"
fi
say "total $(since)"
