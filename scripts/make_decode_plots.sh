#!/usr/bin/env bash
# Regenerates the shipped decode plots (issue 26: decode time against the K/V length with the
# copy-bandwidth floor, the model's line and the measured times at its split) from the latest bf16
# and fp32 split sweeps of each GPU: plots/decode-h200/ and plots/decode-h100/.
# Idempotent: the same sweeps and code give the same files; rerun it after the decode model changes.
#
# Usage: scripts/make_decode_plots.sh
#   FLASHTUNE=path/to/flashtune  use that binary (default: build the `small` preset's flashtune)
set -euo pipefail
cd "$(dirname "$0")/.."
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
r=docs/results
"$FLASHTUNE" plot --gpu h200 --out plots/decode-h200 \
  --decode "$r/h200-decode-sweep-bf16-write-80da91a.jsonl" "$r/h200-decode-sweep-fp32-write-80da91a.jsonl"
"$FLASHTUNE" plot --gpu h100 --out plots/decode-h100 \
  --decode "$r/h100-decode-sweep-bf16-write-d8fa166.jsonl" "$r/h100-decode-sweep-fp32-write-d8fa166.jsonl"
