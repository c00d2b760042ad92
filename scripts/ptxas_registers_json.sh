#!/usr/bin/env bash
# Writes tests/data/ptxas_registers_sm90.json: the registers per thread ptxas gave every compiled
# kernel (scripts/ptxas_report.sh on the full kernel set), the table tests/kernels_registers_test.cpp
# holds the traits' registers_estimate against. Keys are TileConfig::name() (mma16's with dtype,
# stages and /qsmem), sorted bytewise. Rerun after changing a kernel or its traits.
# Usage: scripts/ptxas_registers_json.sh [build-dir] [report]   (report: reuse a saved
# ptxas_report.sh output instead of rebuilding)
#   The whole table (every kernel recompiled; long on a small machine):
#     scripts/ptxas_registers_json.sh
#   One family recompiled, merged into the table (ONLY as in ptxas_report.sh: the entries of the
#   variants the report holds replace theirs, every other entry is kept as it is):
#     ONLY=mma16 scripts/ptxas_registers_json.sh
#   The table's mma16 entries came from the second (nvcc 13.0, sm_90), its fp32 entries from the
#   first; a merge refuses a report from another compiler than the table's.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-ptxas}"
report="${2:-}"
out="$root/tests/data/ptxas_registers_sm90.json"
if [ -z "$report" ]; then
  report="$(mktemp)"
  trap 'rm -f "$report"' EXIT
  # ptxas_report.sh exits 1 when a kernel spills: the table is written all the same.
  "$root/scripts/ptxas_report.sh" "$build" -DFLASHTUNE_SMALL_KERNEL_SET=OFF > "$report" || [ $? -eq 1 ]
fi
nvcc="$(grep '^CMAKE_CUDA_COMPILER:' "$build/CMakeCache.txt" 2> /dev/null | cut -d= -f2 || true)"
compiler="$("${nvcc:-nvcc}" --version 2> /dev/null | grep -o 'release [0-9.]*' | sed 's/release /nvcc /' || echo unknown)"
# "name regs" per kernel of the report: the fp32 variants' five fields joined as their config name,
# mma16's and decode's names as they stand.
fresh="$(awk '
  $1 ~ /^(row_smem|row_reg|warp_groups|regtile_2d|mma_3xtf32|mma_1xtf32)$/ && $6 == "regs" {
    printf "%s/%s/%sx%s/%s %d\n", $1, $2, $3, $4, $5, $7
  }
  $1 ~ /^(mma16|wgmma16|decode)\// && $2 == "regs" { printf "%s %d\n", $1, $3 }' "$report")"
[ -n "$fresh" ] || { echo "ptxas_registers_json: no kernels in the report" >&2; exit 1; }
kept=""
if [ -n "${ONLY:-}" ]; then
  [ -f "$out" ] || { echo "ptxas_registers_json: ONLY merges into $out, which is missing" >&2; exit 1; }
  had="$(sed -n 's/^  "compiler": "\(.*\)",$/\1/p' "$out")"
  [ "$had" = "$compiler" ] || { echo "ptxas_registers_json: the table is from $had, this build's compiler is $compiler" >&2; exit 1; }
  # The table's entries of the variants the report does not hold.
  variants="$(echo "$fresh" | cut -d/ -f1 | sort -u | paste -sd'|')"
  kept="$(sed -n 's/^    "\([^"]*\)": \([0-9]*\),\{0,1\}$/\1 \2/p' "$out" | grep -Ev "^($variants)/" || true)"
fi
printf '%s\n%s\n' "$fresh" "$kept" | grep -v '^$' | LC_ALL=C sort -u -k1,1 | awk -v compiler="$compiler" '
  { names[n + 0] = $1; regs[n + 0] = $2; n++ }
  END {
    printf "{\n  \"what\": \"registers per thread of every compiled kernel, ptxas -v (scripts/ptxas_report.sh)\",\n"
    printf "  \"generated_by\": \"scripts/ptxas_registers_json.sh\",\n"
    printf "  \"compiler\": \"%s\",\n  \"arch\": \"sm_90\",\n  \"kernel_set\": \"full\",\n  \"registers\": {\n", compiler
    for (i = 0; i < n; ++i) printf "    \"%s\": %d%s\n", names[i], regs[i], i + 1 < n ? "," : ""
    printf "  }\n}\n"
  }' > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out ($(grep -c '/d' "$out") kernels)"
