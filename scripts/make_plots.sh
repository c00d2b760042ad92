#!/usr/bin/env bash
# Regenerates the shipped plots and report (plots/h200/) from the shipped profile
# (profiles/nvidia-h200.json) with the profile's fitted "coefficients" (defaults when it has none).
# Idempotent: the same profile and code give the same files; rerun it after refitting.
#
# Usage: scripts/make_plots.sh [profile] [out_dir]
#        scripts/make_plots.sh --decode   the decode plots instead (issue 26: time against the K/V
#                                         length with the copy-bandwidth floor) from the latest bf16 and
#                                         fp32 split sweeps of each GPU: plots/decode-h200/, plots/decode-h100/
#   FLASHTUNE=path/to/flashtune  use that binary (default: build the `small` preset's flashtune;
#                                plots need no kernels, so the small kernel set is enough)
#   HEATMAPS=a,b,c | all         workloads that get a heatmap (default: the seed cases t10 t11 t22
#                                t29 t30 n1k_d128, a causal and an odd-N grid workload)
#   JOBS=n                       parallel build jobs (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-profiles/nvidia-h200.json}
out=${2:-plots/h200}
heatmaps=${HEATMAPS-t10,t11,t22,t29,t30,n1k_d128,g_n2048_b64_d64_causal,g_n777_b96_d32}

if ! command -v gnuplot >/dev/null; then
  echo "gnuplot not found: install it with \`apt-get install gnuplot-nox\` (or run scripts/install-deps.sh)" >&2
  exit 2
fi
if [ -z "${FLASHTUNE:-}" ]; then
  export PATH=/usr/local/cuda/bin:$PATH
  cmake --preset small -G Ninja >/dev/null
  cmake --build --preset small -j "${JOBS:-$(nproc)}" --target flashtune
  FLASHTUNE=build-small/app/flashtune
fi

if [ "${1:-}" = "--decode" ]; then
  r=docs/results
  "$FLASHTUNE" plot --gpu h200 --out plots/decode-h200 \
    --decode "$r/h200-decode-sweep-bf16-write-80da91a.jsonl" "$r/h200-decode-sweep-fp32-write-80da91a.jsonl"
  "$FLASHTUNE" plot --gpu h100 --out plots/decode-h100 \
    --decode "$r/h100-decode-sweep-bf16-write-d8fa166.jsonl" "$r/h100-decode-sweep-fp32-write-d8fa166.jsonl"
  exit 0
fi

# Only the files a report writes are replaced: heatmaps of workloads no longer selected go too.
mkdir -p "$out"
rm -f "$out"/*.svg "$out"/*.png "$out"/*.dat "$out"/report.md
"$FLASHTUNE" report --profile "$profile" --out "$out" --heatmaps "$heatmaps"
du -sh "$out"
