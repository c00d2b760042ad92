#!/usr/bin/env bash
# ncu on the best configs of each SDPA-comparison case whose bf16 speed bar is open (issue 25:
# >= 1.5x FLASH, >= 0.9x CUDNN; docs/kernels.md "What the open speed bars ask of the SM"): how
# busy each pipe the softmax and the products run on is, one launch per case under ncu's own clock
# and cache control (percentages of the pipe's peak over the active cycles: they compare kernels with
# each other), and how many MUFU (XU) instructions the launch issues per score. One JSON object a line in
# $OUT/ncu-pipes.jsonl (each metric "value unit"); $OUT/summary.txt.
# Usage: OUT=dir bash scripts/ncu_pipe_ceilings.sh   (on a GPU machine with ncu; builds the app)
cd "$(dirname "$0")/.."
source scripts/ncu_build.sh  # OUT, summary S, build, F
# Pipes of the SM (percent of peak over active cycles), issue slots, resident warps, and the MUFU
# instruction count (one EX2 per score and thread-lane: warp instructions x 32 / scores).
M=gpu__time_duration.sum,sm__cycles_active.avg,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,smsp__inst_executed_pipe_xu.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed
# wgmma's own pipe counter, asked apart: a name this ncu does not know must not lose the others.
G=sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active
metrics() {  # metric-list args...
  local list=$1; shift
  timeout 120 ncu --kernel-name regex:"mma16_kernel|wgmma16_kernel" --launch-count 1 --metrics $list "$@" 2>&1 |
    grep -E "^ +[a-z_]+__" | awk '{u = NF >= 3 ? " " $(NF-1) : ""; printf "\"%s\": \"%s%s\", ", $1, $NF, u}'
}
run() {  # case B N d causal config
  local name=$1 B=$2 N=$3 d=$4 causal=$5 cfg=$6
  local c=""; [ "$causal" = 1 ] && c=--causal
  local args=($F run --config $cfg --dtype bf16 --B $B --N $N --d $d $c --no-time)
  echo "{\"case\": \"$name\", \"B\": $B, \"N\": $N, \"d\": $d, \"causal\": $causal, \"config\": \"$cfg\", $(metrics $M "${args[@]}") $(metrics $G "${args[@]}") \"end\": 0}" >> $OUT/ncu-pipes.jsonl
}
run t11 13600 128 32 0 mma16/d32/br64xbc128/swizzled/bf16/s2
run t11 13600 128 32 0 mma16/d32/br128xbc32/swizzled/bf16/s2
run t11 13600 128 32 0 wgmma16/d32/br128xbc128/swizzled/bf16/s2/pe
run t29 4 32768 32 0 mma16/d32/br128xbc128/swizzled/bf16/s2
run t29 4 32768 32 0 wgmma16/d32/br192xbc128/swizzled/bf16/s2
run t30 2 32768 64 0 wgmma16/d64/br192xbc128/swizzled/bf16/s2
run h16k 16 4096 64 0 wgmma16/d64/br192xbc128/swizzled/bf16/s2
run t22 500 2048 64 0 wgmma16/d64/br192xbc128/swizzled/bf16/s2/pe
run n1k_d128 64 1024 128 0 wgmma16/d128/br128xbc128/swizzled/bf16/s2/pe
run n1k_d128_causal 64 1024 128 1 wgmma16/d128/br128xbc64/swizzled/bf16/s3
run n1k_d128_causal 64 1024 128 1 wgmma16/d128/br128xbc128/swizzled/bf16/s2/pp
run n1k_d128_causal 64 1024 128 1 wgmma16/d128/br128xbc128/swizzled/bf16/s3/ov/pp
echo "total $(( $(date +%s) - T0 )) s; $(wc -l < $OUT/ncu-pipes.jsonl) rows" >> $S
head -c 1500 $OUT/ncu-pipes.jsonl >> $S
