#!/usr/bin/env bash
# ncu on the unseen sets' worst top-1 regrets (issue 24, docs/fit.md "What ncu says about the worst
# picks"): per workload the model's pick, the measured best and a neighbour, one launch each under
# ncu (its default cache and clock control: times are ncu's, for comparing configs with each other),
# with DRAM and L2 bytes, executed instructions, active warps, issue and tensor-pipe activity.
# One JSON object a line in $OUT/ncu.jsonl (each metric "value unit"); $OUT/summary.txt.
# Usage: OUT=dir bash scripts/ncu_unseen_regrets.sh   (on a GPU machine with ncu; builds the app)
cd "$(dirname "$0")/.."
source scripts/ncu_build.sh  # OUT, summary S, build, F
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,smsp__inst_executed.sum,sm__warps_active.avg.per_cycle_active,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__occupancy_limit_registers,sm__cycles_active.avg
run() {  # workload-name B N d causal dtype config
  local name=$1 B=$2 N=$3 d=$4 causal=$5 dt=$6 cfg=$7
  local c=""; [ "$causal" = 1 ] && c=--causal
  v=$(timeout 60 ncu --kernel-name regex:"mma_tf32_kernel|mma16_kernel" --launch-count 1 --metrics $M \
      $F run --config $cfg --dtype $dt --B $B --N $N --d $d $c --no-time 2>&1 | grep -E "^ +[a-z_]+__" | awk '{u = NF >= 3 ? " " $(NF-1) : ""; printf "\"%s\": \"%s%s\", ", $1, $NF, u}')
  echo "{\"workload\": \"$name\", \"config\": \"$cfg\", $v \"end\": 0}" >> $OUT/ncu.jsonl
}
for cfg in br32xbc64 br64xbc32 br64xbc64 br128xbc32; do run u21 5926 134 32 1 fp32 mma_3xtf32/d32/$cfg/swizzled; done
for cfg in br64xbc32 br64xbc64 br32xbc64; do run u23 45 862 32 1 fp32 mma_3xtf32/d32/$cfg/swizzled; done
for cfg in br32xbc64 br128xbc128 br64xbc64; do run u12 1 10972 32 0 fp32 mma_3xtf32/d32/$cfg/swizzled; done
for cfg in br64xbc32/swizzled/bf16/s2/qsmem br128xbc32/swizzled/bf16/s2/qsmem br128xbc64/swizzled/bf16/s2/qsmem; do run u13 11 539 128 1 bf16 mma16/d128/$cfg; done
for cfg in br64xbc64/swizzled/bf16/s2 br128xbc32/swizzled/bf16/s2 br128xbc128/swizzled/bf16/s2; do run u08 594 336 32 1 bf16 mma16/d32/$cfg; done
echo "total $(( $(date +%s) - T0 )) s; $(wc -l < $OUT/ncu.jsonl) rows" >> $S
head -c 600 $OUT/ncu.jsonl >> $S
