#!/usr/bin/env bash
# Writes tests/data/ptxas_registers_sm90.json: the registers per thread ptxas gave every compiled
# kernel (scripts/ptxas_report.sh on the full kernel set), the table tests/kernels_registers_test.cpp
# holds the traits' registers_estimate against. Rerun after changing a kernel or its traits.
# Usage: scripts/ptxas_registers_json.sh [build-dir] [report]   (report: reuse a saved
# ptxas_report.sh output instead of rebuilding)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-ptxas}"
report="${2:-}"
out="$root/tests/data/ptxas_registers_sm90.json"
if [ -z "$report" ]; then
  report="$(mktemp)"
  trap 'rm -f "$report"' EXIT
  "$root/scripts/ptxas_report.sh" "$build" -DFLASHTUNE_SMALL_KERNEL_SET=OFF > "$report"
fi
nvcc="$(grep '^CMAKE_CUDA_COMPILER:' "$build/CMakeCache.txt" 2> /dev/null | cut -d= -f2 || true)"
compiler="$("${nvcc:-nvcc}" --version 2> /dev/null | grep -o 'release [0-9.]*' | sed 's/release /nvcc /' || echo unknown)"
awk -v compiler="$compiler" '
  $1 ~ /^(row_smem|row_reg|warp_groups|regtile_2d|mma_3xtf32|mma_1xtf32)$/ && $6 == "regs" {
    name = sprintf("%s/%s/%sx%s/%s", $1, $2, $3, $4, $5)
    regs[name] = $7; names[n++] = name
  }
  END {
    if (n == 0) { print "ptxas_registers_json: no kernels in the report" > "/dev/stderr"; exit 1 }
    printf "{\n  \"what\": \"registers per thread of every compiled kernel, ptxas -v (scripts/ptxas_report.sh)\",\n"
    printf "  \"generated_by\": \"scripts/ptxas_registers_json.sh\",\n"
    printf "  \"compiler\": \"%s\",\n  \"arch\": \"sm_90\",\n  \"kernel_set\": \"full\",\n  \"registers\": {\n", compiler
    for (i = 0; i < n; ++i) printf "    \"%s\": %d%s\n", names[i], regs[names[i]], i + 1 < n ? "," : ""
    printf "  }\n}\n"
  }' <(sort "$report") > "$out"
echo "wrote $out ($(grep -c '/d' "$out") kernels)"
