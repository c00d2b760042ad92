#!/usr/bin/env bash
# One device-tool call of a long `flashtune tune`: build the full kernel set, run the tune until a
# wall-clock deadline (SIGINT then, which finishes the pair in flight and keeps everything), and
# copy the profile and the log to $OUT. Run the same command again (with the profile carried back
# into the tree) and the tune resumes where it stopped; the sweep may span several calls.
#
# Usage: OUT=dir bash scripts/sweep_session.sh --profile P [--deadline S] [--commit HASH]
#                                              [--gpu-tests] [-- <flashtune tune arguments>]
#   --deadline S   seconds from the start of this script after which the tune is interrupted
#                  (default 540, under the device tool's 600 s per call)
#   --commit HASH  the git commit recorded in the profile (the device's copy has no .git)
#   --gpu-tests    after the tune, if time is left, run the GPU test binaries (ctest -j1: the
#                  CUPTI tests cannot share the device)
# Results in $OUT: tune.log (stderr of the tune: one progress line per pair), tune.json (its --json
# summary), the profile (same file name), build.log, ctest.log with --gpu-tests.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$root/sweep-out}"; mkdir -p "$OUT"
profile="" deadline=540 commit="" gpu_tests=0
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile="$2"; shift 2 ;;
    --deadline) deadline="$2"; shift 2 ;;
    --commit) commit="$2"; shift 2 ;;
    --gpu-tests) gpu_tests=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n 2,16p "$0"; exit 0 ;;
    *) echo "sweep_session.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$profile" ] || { echo "sweep_session.sh: --profile is required" >&2; exit 2; }
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
build=/tmp/flashtune-sweep

nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/build.log" 2>&1
extra=()
[ -n "$commit" ] && extra+=("-DFLASHTUNE_GIT_COMMIT=$commit")
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLASHTUNE_SMALL_KERNEL_SET=OFF \
  -DFLASHTUNE_BUILD_BENCH=OFF -DFLASHTUNE_BUILD_TESTS=$([ $gpu_tests = 1 ] && echo ON || echo OFF) \
  "${extra[@]}" >> "$OUT/build.log" 2>&1 &&
  cmake --build "$build" -j"$(nproc)" >> "$OUT/build.log" 2>&1 || { echo "build failed"; tail -30 "$OUT/build.log"; exit 2; }
echo "build: $(elapsed) s"

left=$(( deadline - $(elapsed) ))
if [ "$left" -gt 20 ]; then
  [ -f "$profile" ] && echo "resuming $profile: $(python3 -c "import json,sys;print(len(json.load(open(sys.argv[1]))['measurements']))" "$profile") pairs"
  timeout -s INT -k 60 "$left" "$build/app/flashtune" tune --profile "$profile" --json "$@" \
    > "$OUT/tune.json" 2> "$OUT/tune.log"
  echo "tune rc=$? after $(elapsed) s (130: interrupted at the deadline, rerun to resume)"
  tail -3 "$OUT/tune.log"
  [ -f "$profile" ] && cp "$profile" "$OUT/"
fi

if [ $gpu_tests = 1 ]; then
  left=$(( deadline + 50 - $(elapsed) ))
  if [ "$left" -gt 30 ]; then
    (cd "$build" && timeout "$left" ctest --output-on-failure -j1 > "$OUT/ctest.log" 2>&1)
    echo "ctest rc=$? $(grep -E 'tests passed|tests failed' "$OUT/ctest.log" | tail -1)"
  else
    echo "no time left for the GPU tests"
  fi
fi
echo "total: $(elapsed) s"
