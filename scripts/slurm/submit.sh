#!/usr/bin/env bash
# Submits a sharded flashtune tune to Slurm: a job array of N tasks (tune_array.sbatch, one GPU
# each) and a merge job that runs after every task has ended (merge.sbatch, afterany). Prints
# "array <id>" and "merge <id>".
# Usage:
#   scripts/slurm/submit.sh --shards N --dir DIR --out P.json [--bin FLASHTUNE] [--no-gpu]
#       [--tune-args "ARGS"] [--sbatch-args "ARGS"] -- PLAN ARGS...
#   PLAN ARGS: the plan as tune takes it (--workloads FILE..., --strategy, --top-k, --precision),
#   given to every task and to the merge (which reports the planned pairs missing).
#   --tune-args: options for the tunes only (--no-counters, --time-cap S, --backend fake, ...).
#   --sbatch-args: options for both sbatch calls (--partition, --account, --time, ...).
#   --no-gpu: request no GPU (a fake-backend run, as the CI test does).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shards="" dir="" out="" bin=${FLASHTUNE:-$PWD/build/app/flashtune} gpu=1 tune_args="" sbatch_args=""
while (($#)); do
  case $1 in
    --shards) shards=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --no-gpu) gpu=0; shift ;;
    --tune-args) tune_args=$2; shift 2 ;;
    --sbatch-args) sbatch_args=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "submit.sh: unknown option $1 (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done
[[ $shards =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: --shards N (N >= 1) is required, got '$shards'" >&2; exit 2; }
[ -n "$dir" ] && [ -n "$out" ] || { echo "submit.sh: --dir DIR and --out P.json are required" >&2; exit 2; }
[ -x "$bin" ] || { echo "submit.sh: no flashtune binary at $bin (give --bin)" >&2; exit 2; }
(($#)) || { echo "submit.sh: give the plan after --, e.g. -- --workloads configs/workloads/grid.json" >&2; exit 2; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
case $out in /*) ;; *) out=$PWD/$out ;; esac
export FLASHTUNE=$bin FLASHTUNE_SHARD_DIR=$dir FLASHTUNE_MERGED=$out
gres=()
((gpu)) && gres=(--gres=gpu:1)
# shellcheck disable=SC2086  # the *-args strings are word lists on purpose
array=$(sbatch --parsable $sbatch_args "${gres[@]}" --array="0-$((shards - 1))" -o "$dir/tune-%A_%a.log" \
  "$here/tune_array.sbatch" "$@" $tune_args)
array=${array%%;*}
# shellcheck disable=SC2086
merge=$(sbatch --parsable $sbatch_args --dependency="afterany:$array" -o "$dir/merge-%j.log" \
  "$here/merge.sbatch" "$@")
merge=${merge%%;*}
echo "array $array"
echo "merge $merge"
