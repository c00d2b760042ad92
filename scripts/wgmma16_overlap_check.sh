#!/usr/bin/env bash
# On an H100/H200: the wgmma16 intra-warpgroup overlap (/ov) beside the serial loop. Builds the
# wgmma16 family (sm_90a, full list) with the full mma16 list and the small fp32 set, then by STEPS
# (comma list; default all): ptxas (registers, spills, wgmma serialization warnings) and SASS (the
# overlap's loop issues S_j's HGMMA before it waits for P V), test (kernels_wgmma16_test and the
# wgmma16 rows of kernels_inference_test), sdpa (benchmarks/sdpa_compare.py --dtype bf16 on the
# d = 64 and 128 cases: every wgmma16 config, on and off, beside SDPA), sanitize (memcheck,
# racecheck, synccheck on one /ov config per d, causal grouped KV-cache shape). Logs under $OUT.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-/tmp/wgmma16-overlap}"
build="${BUILD:-/tmp/wg-b}"
steps="${STEPS:-ptxas,test,sdpa,sanitize}"
mkdir -p "$out"
blog="${BUILD_LOG:-/tmp/wgmma16-overlap-build.log}"
cd "$root"
nvidia-smi -L
{ time cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DFLASHTUNE_PYTHON=OFF \
    -DFLASHTUNE_PTXAS_VERBOSE=ON -DFLASHTUNE_SMALL_KERNEL_SET=ON -DFLASHTUNE_BUILD_BENCH=OFF \
    -DCMAKE_CXX_FLAGS=-DFLASHTUNE_MMA16_FULL_SET=1 -DCMAKE_CUDA_FLAGS=-DFLASHTUNE_MMA16_FULL_SET=1 &&
  time cmake --build "$build" -j16 --target kernels_wgmma16_test kernels_inference_test flashtune; } \
  > "$blog" 2>&1 || { grep -E "error" "$blog" | head -20; tail -30 "$blog"; exit 2; }
grep real "$blog" | tail -1
t="$build/tests"
if [[ ",$steps," == *",ptxas,"* ]]; then
  grep -E "spill|Used [0-9]+ registers|Compiling entry" "$blog" | grep -A2 wgmma16_kernel > "$out/ptxas.txt"
  echo "wgmma16 ptxas: $(grep -c 'Compiling entry' "$out/ptxas.txt") kernels, nonzero spills: $(grep -cE '[1-9][0-9]* bytes spill stores' "$out/ptxas.txt")"
  { echo "serialization warnings: $(grep -ciE 'C75|serializ' "$blog")"; grep -iE "C75|serializ" "$blog" | sort | uniq -c | head -5; } | tee -a "$out/ptxas.txt"
  cuobjdump -sass "$t/kernels_wgmma16_test" 2> /dev/null | awk '/Function :/ { f = $3 } { print f "\t" $0 }' \
    | grep wgmma16_kernel > /tmp/wgmma16_sass.txt
  echo "HGMMA: $(grep -c HGMMA /tmp/wgmma16_sass.txt)  UTMALDG: $(grep -c UTMALDG /tmp/wgmma16_sass.txt)  LDL/STL: $(grep -cE '\b(LDL|STL)\b' /tmp/wgmma16_sass.txt)"
  # d128 br128xbc128 s3 with and without /ov: the consumer loop's HGMMA, waits (WARPGROUP.DEPBAR),
  # arrives (SYNCS) and exponentials, in program order.
  for ov in 1 0; do
    grep "Li128ELi128ELi128ELNS_6LayoutE2ELi1ELi3ELi0ELi${ov}E" /tmp/wgmma16_sass.txt | cut -f2 \
      | grep -E "HGMMA|WARPGROUP|DEPBAR|SYNCS|MUFU.EX2|BRA" | sed -E 's@/\*[0-9a-f]+\*/@@; s/ +/ /g' \
      | awk '{ k = $0; sub(/HGMMA.*/, "HGMMA", k); sub(/MUFU.EX2.*/, "MUFU.EX2", k); if (k == last) n++; else { if (last != "") print n "x " last; last = k; n = 1 } } END { print n "x " last }' \
      > "$out/sass-d128-s3-ov$ov.txt"
  done
  head -60 "$out/sass-d128-s3-ov1.txt"
fi
if [[ ",$steps," == *",test,"* ]]; then
  timeout "${TEST_TIMEOUT:-120}" "$t/kernels_wgmma16_test" > "$out/test.log" 2>&1
  echo "wgmma16 test rc=$?"; grep -E "worst rel|FAILED|PASSED|Failure|rel_l2|differ|regs" "$out/test.log" | head -40
  FLASHTUNE_KERNEL_FILTER=wgmma16 timeout "${INF_TIMEOUT:-60}" "$t/kernels_inference_test" > "$out/inference.log" 2>&1
  echo "inference (wgmma16) rc=$?"; grep -E "worst rel|FAILED|PASSED|Failure" "$out/inference.log" | head -12
fi
if [[ ",$steps," == *",sdpa,"* ]]; then
  configs="${SDPA_CONFIGS:-$("$build/app/flashtune" list --json 2> /dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); rows=d if isinstance(d,list) else d.get("configs",d.get("kernels",[])); print(",".join(r["name"] for r in rows if r["name"].startswith("wgmma16/") and "/bf16" in r["name"]))')}"
  echo "configs: $configs"
  PYTHONUNBUFFERED=1 timeout "${SDPA_TIMEOUT:-170}" python3 benchmarks/sdpa_compare.py --flashtune "$build/app/flashtune" \
    --dtype bf16 --time-cap "${TIME_CAP:-0.15}" --cases "${CASES:-t10,t22,t30,h16k,n1k_d128,n1k_d128_causal,n1999_d64_causal}" \
    ${configs:+--configs "$configs"} ${SDPA_EXTRA:-} --out "$out/sdpa-bf16.json" > "$out/sdpa.log" 2>&1
  echo "sdpa rc=$?"; grep -E "^\| |speed vs|error within" "$out/sdpa.log" | tail -16
fi
if [[ ",$steps," == *",sanitize,"* ]]; then
  for cfg in "${SAN_D64:-wgmma16/d64/br128xbc128/swizzled/bf16/s3/ov}" "${SAN_D128:-wgmma16/d128/br128xbc128/swizzled/bf16/s3/ov}"; do
    for tool in memcheck racecheck synccheck; do
      log="$out/san-$tool-$(echo $cfg | cut -d/ -f2).log"
      FLASHTUNE_TEST_QUICK=1 FLASHTUNE_KERNEL_FILTER="$cfg" timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 \
        "$t/kernels_wgmma16_test" --gtest_filter='KernelsWgmma16.Overlap*' > "$log" 2>&1
      echo "sanitizer $tool $cfg rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | head -1)"
    done
  done
fi
