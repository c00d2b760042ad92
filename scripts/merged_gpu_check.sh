#!/usr/bin/env bash
# One device call over the whole tree: the full kernel set built with the Python module and ptxas
# verbose (spills counted), the whole ctest for real (GPU and Python tests included), the bf16 SDPA
# comparison over every compiled family (mma16 and wgmma16), and the decode anchors beside SDPA.
# Results in $OUT (8 files at most): summary.txt, build.log.gz, ctest.log, sdpa-bf16.{json,md},
# decode-bf16-<flush>.json (its table in the summary), and with --decode-sweep
# decode-sweep-<dtype>.jsonl for each of SWEEP_DTYPES (default bf16; "bf16 fp32" for both) (decode_bench
# --sweep over the batch-1 shapes, where the split matters: the model's split check, `flashtune fit --decode`).
# DECODE_FLUSHES: the L2 flushes the decode anchors are timed after, both sides (default "write";
# "write read" for both: tuner/timing_harness.h, L2Flush); SWEEP_FLUSH: the sweep's (default write).
# CTEST_ARGS: extra ctest arguments (e.g. "-R Wgmma16" for a part of the suite).
# Exit 3 when the suite runs out of time (a kernel that does not return), before the steps that
# would launch it again. Usage: [SANITIZE="config ..."] [SASS_KERNELS="fragment ..."] [CTEST_ARGS=...] OUT=dir bash scripts/merged_gpu_check.sh [--no-sdpa] [--no-decode] [--decode-sweep]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$root/device-out}"; mkdir -p "$OUT"
b="${BUILD:-/tmp/flashtune-merged}"
summary="$OUT/summary.txt"
say() { echo "$*" | tee -a "$summary"; }
start=$(date +%s)
since() { echo "$(( $(date +%s) - start )) s"; }
gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
say "== $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader) commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null) =="
py="$(command -v python3)"
{ cmake -S "$root" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DFLASHTUNE_PTXAS_VERBOSE=ON -DPython3_EXECUTABLE="$py" &&
  cmake --build "$b" -j"$(nproc)"; } > "$OUT/build.log" 2>&1
rc=$?
say "build rc=$rc ($(since)); ptxas nonzero spill lines: $(grep -cE '[1-9][0-9]* bytes spill (stores|loads)' "$OUT/build.log")"
if [ $rc -ne 0 ]; then grep -E "error" "$OUT/build.log" | head -30 | tee -a "$summary"; gzip "$OUT/build.log"; exit 2; fi
# SASS_KERNELS="fragment ...": for each wgmma16 kernel whose mangled name holds the fragment, its
# tensor-core issues, waits, barrier arrivals and exponentials in program order (run-length), in the
# summary: where ptxas put each wait against the softmax (the /ov loop's overlap).
if [ -n "${SASS_KERNELS:-}" ]; then
  cuobjdump -sass "$b/app/flashtune" 2> /dev/null | awk '/Function :/ { f = $3 } { print f "\t" $0 }' \
    | grep wgmma16_kernel > /tmp/wgmma16-sass.txt
  for k in $SASS_KERNELS; do
    say "SASS $k ($(grep -c "$k" /tmp/wgmma16-sass.txt) lines):"
    grep "$k" /tmp/wgmma16-sass.txt | cut -f2 | grep -E "HGMMA|WARPGROUP|DEPBAR|SYNCS|MUFU.EX2|BAR\.|BRA" \
      | sed -E 's@/\*[0-9a-f]+\*/@@; s/ +/ /g' \
      | awk '{ k = $0; sub(/HGMMA.*/, "HGMMA", k); sub(/MUFU.EX2.*/, "MUFU.EX2", k); if (k == last) n++; else { if (last != "") print n "x " last; last = k; n = 1 } } END { print n "x " last }' \
      | head -${SASS_LINES:-45} | tee -a "$summary"
  done
fi
(cd "$b" && timeout "${CTEST_TIMEOUT:-260}" ctest -j8 --timeout 200 --output-on-failure ${CTEST_ARGS:-} > "$OUT/ctest.log" 2>&1)
say "ctest rc=$? ($(since)): $(grep -E 'tests passed|tests failed' "$OUT/ctest.log" | tail -1)"
say "skipped on the GPU machine: $(grep -c '(Skipped)' "$OUT/ctest.log")"
grep -A40 'The following tests FAILED' "$OUT/ctest.log" | head -40 | tee -a "$summary"
# A suite that ran out of time has a kernel that does not return: the steps below would launch it
# again and each wait out its own limit, spending the device budget on nothing.
if grep -qE '\*\*\*Timeout' "$OUT/ctest.log" || ! grep -qE 'tests passed|tests failed' "$OUT/ctest.log"; then
  say "ctest timed out (a kernel that does not return?): these did not finish:"
  python3 - "$OUT/ctest.log" << 'PY' | tee -a "$summary"
import re, sys
started, done = {}, set()
for line in open(sys.argv[1]):
    m = re.search(r"Start\s+(\d+): (\S+)", line)
    if m: started[m.group(1)] = m.group(2)
    m = re.search(r"Test\s+#(\d+): (\S+).*(Passed|Failed|Skipped|Not Run)", line)
    if m: done.add(m.group(1))
print(" ".join(sorted(v for k, v in started.items() if k not in done)))
PY
  say "skipping the sanitizers, the SDPA comparison and the decode steps; total $(since)"
  gzip -f "$OUT/build.log"
  exit 3
fi
# SANITIZE="config ...": compute-sanitizer memcheck, racecheck and synccheck on each, through
# `flashtune run --check` on a grouped KV-cache causal shape (odd Nq and keys; not causal for a
# persistent /pe config, which serves non-causal workloads only; Nq 4 and 10001 keys for a decode
# config), lines in the summary.
for cfg in ${SANITIZE:-}; do
  dt=fp32; case "$cfg" in */bf16*) dt=bf16 ;; */fp16*) dt=fp16 ;; esac
  dd="${cfg#*/d}"; dd="${dd%%/*}"
  causal=--causal; case "$cfg" in */pe) causal= ;; esac
  # The decode family serves N <= 64 query rows per head: four rows there, against 10001 keys (9
  # splits by default: on Hopper a non-portable cluster of 9 blocks merges them).
  nq=77 keys=1001; case "$cfg" in decode/*) nq=4 keys=10001 ;; esac
  for tool in memcheck racecheck synccheck; do
    extra=(); [ $tool = racecheck ] && extra=(--racecheck-report all)
    timeout 120 compute-sanitizer --tool $tool "${extra[@]}" --error-exitcode 9 "$b/app/flashtune" run --config "$cfg" \
      --dtype "$dt" --B 2 --heads 8 --kv-heads 2 --N $nq --kv-len $keys --d "$dd" $causal --check --no-time > /tmp/san.log 2>&1
    rc=$?
    # No sanitizer summary: the run never reached a kernel (an unknown config name, a refusal); its
    # first line of its own says why.
    verdict="$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san.log | tail -1)"
    [ -n "$verdict" ] || verdict="no sanitizer summary: $(grep -v '^=========' /tmp/san.log | head -1)"
    say "sanitize $tool $cfg (B 2, Hq 8, Hkv 2, Nq $nq, keys $keys${causal:+, causal}) rc=$rc | $verdict | $(grep -E '^check' /tmp/san.log | head -1)"
  done
done
if [[ " $* " != *" --no-sdpa "* ]]; then
  (cd "$root" && PYTHONPATH="$b/python" PYTHONUNBUFFERED=1 timeout "${SDPA_TIMEOUT:-200}" "$py" benchmarks/sdpa_compare.py \
     --flashtune "$b/app/flashtune" --dtype bf16 --time-cap 0.15 --mma-peak-tflops "${MMA_PEAK:-643}" \
     --out "$OUT/sdpa-bf16.json" > "$OUT/sdpa-bf16.md" 2>&1)
  say "sdpa bf16 rc=$? ($(since))"; grep -E "^\| |speed vs|error within" "$OUT/sdpa-bf16.md" | tail -16 | tee -a "$summary"
fi
if [[ " $* " != *" --no-decode "* ]] && [ -x "$b/benchmarks/decode_bench" ]; then
  for flush in ${DECODE_FLUSHES:-write}; do
    (cd "$root" && timeout "${DECODE_TIMEOUT:-120}" "$py" benchmarks/decode_compare.py --bench "$b/benchmarks/decode_bench" \
       --dtype bf16 --anchors-only --flush "$flush" --out "$OUT/decode-bf16-$flush.json" > /tmp/decode-$flush.md 2>> "$summary")
    say "decode bf16 --flush $flush rc=$? ($(since))"; tee -a "$summary" < /tmp/decode-$flush.md
  done
fi
if [[ " $* " == *" --decode-sweep "* ]] && [ -x "$b/benchmarks/decode_bench" ]; then
  shapes="1,32,32,1,8192,128;1,32,8,1,32768,128;1,12,12,1,65536,64"
  for kvh in 8 32; do for nq in 1 4; do for keys in 4096 16384 65536; do shapes="$shapes;1,32,$kvh,$nq,$keys,128"; done; done; done
  copy=3022; [[ "$gpu" == *H200* ]] && copy=4233
  for dt in ${SWEEP_DTYPES:-bf16}; do
    timeout "${SWEEP_TIMEOUT:-150}" "$b/benchmarks/decode_bench" --dtype "$dt" --sweep --copy-gbps $copy --shapes "$shapes" \
      --flush "${SWEEP_FLUSH:-write}" \
      > "$OUT/decode-sweep-$dt.jsonl" 2>> "$summary"
    say "decode sweep $dt rc=$? ($(since)): $(wc -l < "$OUT/decode-sweep-$dt.jsonl") timings"
  done
fi
gzip -f "$OUT/build.log"
say "gpu: $gpu; total $(since)"
