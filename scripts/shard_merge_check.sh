#!/usr/bin/env bash
# Shards tuned apart and merged against one `--devices all` tune of the same plan: the two
# profiles must hold the same pairs with the same statuses (issue 13's real-GPU check; with
# --backend fake it runs anywhere). On a machine of N GPUs, shard i runs on GPU i, all at once.
# Usage: scripts/shard_merge_check.sh [--bin build/app/flashtune] [--out DIR] [--gpus N]
#          -- TUNE ARGS (the plan and sampling options, e.g. --workloads configs/workloads/grid.json --no-counters)
set -euo pipefail
bin=build/app/flashtune out="" gpus=""
while (($#)); do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "shard_merge_check.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "shard_merge_check.sh: no flashtune binary at $bin (give --bin)" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d /tmp/flashtune-shard-check.XXXXXX)
mkdir -p "$out"
if [ -z "$gpus" ]; then gpus=$(nvidia-smi -L 2> /dev/null | wc -l); fi
((gpus >= 1)) || gpus=1
fake=0
for a in "$@"; do [ "$a" = fake ] && fake=1; done

pids=()
for ((i = 0; i < gpus; i++)); do
  dev=(--device "$i")
  ((fake)) && dev=()
  "$bin" tune "${dev[@]}" --shard "$i/$gpus" --profile "$out/shard-$i.json" "$@" > "$out/shard-$i.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || { echo "a shard failed: see $out/shard-*.log" >&2; exit 1; }; done
shards=()
for ((i = 0; i < gpus; i++)); do shards+=("$out/shard-$i.json"); done
# The plan options only (merge takes no sampling options): everything up to the first other option.
plan=()
keep=0
for a in "$@"; do
  case $a in
    --workloads | --B | --N | --d | --causal | --name | --strategy | --top-k | --precision) keep=1 ;;
    --*) keep=0 ;;
  esac
  ((keep)) && plan+=("$a")
done
"$bin" merge "${shards[@]}" --out "$out/merged.json" --require-complete "${plan[@]}" | tee "$out/merge.txt"
all=(--devices all)
((fake)) && all=()
"$bin" tune "${all[@]}" --profile "$out/all.json" "$@" > "$out/all.log" 2>&1
python3 - "$out/merged.json" "$out/all.json" << 'PY'
import json, sys
a, b = ({(m["workload"], m["config"]): m["status"] for m in json.load(open(p))["measurements"]} for p in sys.argv[1:3])
only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
differ = sorted(k for k in set(a) & set(b) if a[k] != b[k])
print("merged shards: %d pairs; --devices all: %d pairs; only in merged %d, only in devices-all %d, status differs %d"
      % (len(a), len(b), len(only_a), len(only_b), len(differ)))
for k in (only_a + only_b + differ)[:20]: print("  ", *k, a.get(k), b.get(k))
sys.exit(0 if not (only_a or only_b or differ) else 1)
PY
echo "PASS: the merged shards equal the --devices all tune (pairs and statuses); files in $out"
