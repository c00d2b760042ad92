#!/usr/bin/env bash
# ncu on pairs of tiles the model ranks apart from the measurement (docs/fit.md): per line of
# PAIRS (name B N d causal dtype config) one launch under ncu (its cache and clock control: compare
# configs with each other) with the pipes' activity, the shared-memory wavefronts and the warps'
# stall reasons per issued instruction, then the same config timed by `flashtune run` at the GPU's
# own clock (the tuner's harness: L2 flushed by writes, median). One JSON object a line in
# $OUT/ncu.jsonl (each metric "value unit"), the run's JSON lines in $OUT/run.jsonl; $OUT/summary.txt.
# Usage: OUT=dir [PAIRS=file] bash scripts/ncu_tile_pairs.sh   (on a GPU machine with ncu; builds the app)
cd "$(dirname "$0")/.."
source scripts/ncu_build.sh  # OUT, summary S, build, F
STALL=smsp__average_warps_issue_stalled
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.per_cycle_active,sm__cycles_active.avg
M=$M,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem
for r in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle wait not_selected dispatch_stall lg_throttle selected; do
  M=$M,${STALL}_${r}_per_issue_active.ratio
done
default_pairs() {
  for c in br128xbc32/swizzled/bf16/s3/qsmem br128xbc32/swizzled/bf16/s2/qsmem br128xbc64/swizzled/bf16/s2/qsmem; do
    echo "u18 320 334 128 0 bf16 mma16/d128/$c"; echo "g_n4096_b4_d128 4 4096 128 0 bf16 mma16/d128/$c"
    echo "g_n1024_b256_d128 256 1024 128 0 bf16 mma16/d128/$c"
  done
  for c in br128xbc32/swizzled/bf16/s2 br128xbc64/swizzled/bf16/s2; do echo "g_n8192_b16_d64 16 8192 64 0 bf16 mma16/d64/$c"; done
}
if [ -n "${PAIRS:-}" ]; then cat "$PAIRS"; else default_pairs; fi > $OUT/pairs.txt
while read -r name B N d causal dt cfg; do
  c=""; [ "$causal" = 1 ] && c=--causal
  case "$cfg" in *1xtf32*) c="$c --precision tf32" ;; esac  # a named 1xTF32 config is opt-in
  v=$(timeout 90 ncu --kernel-name regex:"mma16_kernel|mma_tf32_kernel|wgmma16_kernel|decode_split_kernel" --launch-count 1 --metrics $M \
      $F run --config $cfg --dtype $dt --B $B --N $N --d $d $c --no-time 2>&1 | grep -E "^ +[a-z_]+__" | awk '{u = NF >= 3 ? " " $(NF-1) : ""; printf "\"%s\": \"%s%s\", ", $1, $NF, u}')
  echo "{\"workload\": \"$name\", \"config\": \"$cfg\", $v \"end\": 0}" >> $OUT/ncu.jsonl
  timeout 120 $F run --config $cfg --dtype $dt --B $B --N $N --d $d $c --json 2>/dev/null | tr -d '\n' | sed "s/^/{\"workload\": \"$name\", \"run\": /; s/\$/}\n/" >> $OUT/run.jsonl
done < $OUT/pairs.txt
echo "total $(( $(date +%s) - T0 )) s; $(wc -l < $OUT/ncu.jsonl) rows" >> $S
