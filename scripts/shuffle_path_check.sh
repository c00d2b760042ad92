#!/usr/bin/env bash
# One device call: what does the SM's shared-memory data pipe serve besides loads and stores?
# ncu reads its wavefronts in all (l1tex__data_pipe_lsu_wavefronts_mem_shared) and by op (ld, st,
# ldgsts = cp.async) on kernels with many warp shuffles per shared request (warp_groups: about one),
# few (regtile_2d) and none (row_reg), and on padded and swizzled cp.async tiles (regtile_2d,
# mma_3xtf32), one workload (B=4 N=4096 d=64). all - ld - st - ldgsts is what no op names: it
# equals the shuffle count. A second pass reads the MIO queue and the warps' stall reasons.
# Usage: OUT=dir bash scripts/shuffle_path_check.sh   (results: $OUT/shuffle-path.txt)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$root/device-out}"; mkdir -p "$OUT"
build="${BUILD:-/tmp/flashtune-shuffle}"
log="$OUT/shuffle-path.txt"
say() { echo "$*" | tee -a "$log"; }
say "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), commit ${COMMIT:-unknown}"
cmake -S "$root" -B "$build" -G Ninja -DFLASHTUNE_BUILD_BENCH=OFF -DFLASHTUNE_GIT_COMMIT="${COMMIT:-unknown}" \
  > "$OUT/build.log" 2>&1 && cmake --build "$build" -j"$(nproc)" --target flashtune >> "$OUT/build.log" 2>&1 ||
  { say "build failed"; tail -30 "$OUT/build.log"; exit 2; }
say "## shuffle-related metrics this ncu knows"
ncu --query-metrics 2>/dev/null | grep -i -E 'shfl|shuffle|lsu_wavefronts|mio' | awk '{print $1}' | tee -a "$log"
extra=$(ncu --query-metrics 2>/dev/null | awk '{print $1}' | grep -E '^smsp__(sass_)?inst_executed_op_shfl$|^smsp__sass_inst_executed_op_shared_ld$' |
        sed 's/$/.sum/' | paste -sd, -)
metrics=gpu__time_duration.sum,smsp__cycles_active.avg,smsp__inst_executed.sum,smsp__inst_executed_pipe_lsu.sum
metrics+=,l1tex__data_pipe_lsu_wavefronts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
metrics+=,l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed
metrics+=,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed
metrics+=,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
metrics+=,sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum
[ -n "$extra" ] && metrics+=",$extra"
# Second pass: the MIO queue and its register write-back (shared by LDS and SHFL results), and
# why warps wait.
mio=sm__mio_inst_issued.sum,sm__mio_inst_issued.avg.pct_of_peak_sustained_elapsed
mio+=,sm__mio_pq_read_cycles_active_pipe_lsu.avg.pct_of_peak_sustained_elapsed
mio+=,smsp__mio2rf_writeback_active_pipe_lsu.avg.pct_of_peak_sustained_elapsed,smsp__mio2rf_writeback_active_pipe_lsu.sum
for r in short_scoreboard mio_throttle long_scoreboard barrier wait math_pipe_throttle not_selected lg_throttle; do
  mio+=,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
done
for cfg in "warp_groups 64 32 16 plain" "warp_groups 32 32 16 plain" "warp_groups 64 128 64 plain" \
           "regtile_2d 64 16 64 swizzled" "row_reg 64 32 32 plain" "regtile_2d 64 64 64 padded" \
           "regtile_2d 64 64 64 swizzled" "mma_3xtf32 64 64 64 padded" "mma_3xtf32 64 64 64 swizzled"; do
  set -- $cfg
  say "=== $1 d$2 $3x$4 $5, B=4 N=4096 non-causal"
  (cd "$root" && timeout 120 ncu --metrics "$metrics" --launch-count 1 -k regex:'warp_groups|regtile|row_reg|mma_tf32' \
     "$build/app/flashtune" run --variant "$1" --d "$2" --Br "$3" --Bc "$4" --layout "$5" --B 4 --N 4096 --check --no-time 2>&1) |
    grep -E '^\s+(gpu__|smsp__|l1tex__|sm__)|error|ERROR|rel' | tee -a "$log"
  (cd "$root" && timeout 120 ncu --metrics "$mio" --launch-count 1 -k regex:'warp_groups|regtile|row_reg|mma_tf32' \
     "$build/app/flashtune" run --variant "$1" --d "$2" --Br "$3" --Bc "$4" --layout "$5" --B 4 --N 4096 --no-time 2>&1) |
    grep -E '^\s+(smsp__|sm__)|error|ERROR' | tee -a "$log"
done
