#!/usr/bin/env bash
# The main job on a machine without GPU: install dependencies, build, predict every compiled
# config for the seed workloads on the shipped H200 spec and fitted profile, then, from the shipped
# measured profile, the model's held-out accuracy (`flashtune fit --no-write`) and the plots and
# report (`flashtune report`, into out/report-<gpu>/; the committed ones are plots/h200/).
# Usage: scripts/main.sh [gpu]     (gpu: a name or alias from configs/gpus/, default nvidia-h200)
set -euo pipefail
cd "$(dirname "$0")/.."
gpu=${1:-nvidia-h200}
scripts/install-deps.sh
export PATH=/usr/local/cuda/bin:$PATH
cmake --preset default -G Ninja >/dev/null
cmake --build --preset default -j "$(nproc)" --target flashtune
# The seed reports' test cases: name B N d.
while read -r name B N d; do
  echo "== $name: B=$B N=$N d=$d on $gpu =="
  # The GPU's shipped profile (its fitted coefficients) by default; the first line names it.
  ./build/app/flashtune predict --gpu "$gpu" --B "$B" --N "$N" --d "$d" --all | awk 'NR <= 12'  # header + the 10 best
done <<'CASES'
t10 10 2048 64
t11 13600 128 32
t22 500 2048 64
t29 4 32768 32
t30 2 32768 64
n1k_d128 64 1024 128
CASES

if [ -f "profiles/$gpu.json" ]; then
  echo "== model against measurement: flashtune fit --profile profiles/$gpu.json --no-write =="
  ./build/app/flashtune fit --profile "profiles/$gpu.json" --no-write --quiet | awk '/^accuracy/,/^$/'
  echo "== plots and report: out/report-$gpu/report.md =="
  ./build/app/flashtune report --profile "profiles/$gpu.json" --out "out/report-$gpu"
fi
