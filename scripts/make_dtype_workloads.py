#!/usr/bin/env python3
"""Writes a workload file's shapes again in another element type: the same (B, N, d, causal), each
name suffixed with _<dtype>, "dtype" set, schema 2. The 16-bit sweep measures the shapes the fp32
sweep measured, so the two families' errors and ratios compare workload by workload.

Usage: scripts/make_dtype_workloads.py IN.json DTYPE OUT.json
   e.g. scripts/make_dtype_workloads.py configs/workloads/grid.json bf16 configs/workloads/grid_bf16.json
"""
import json
import sys

DTYPES = ("fp32", "bf16", "fp16")


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__.strip().splitlines()[-2].strip())
    src, dtype, out = argv[1:]
    if dtype not in DTYPES:
        sys.exit(f"make_dtype_workloads: unknown dtype '{dtype}' (known: {', '.join(DTYPES)})")
    doc = json.load(open(src))
    ws = []
    for w in doc["workloads"]:
        w = dict(w)
        w["name"] = f"{w['name']}_{dtype}"
        w["dtype"] = dtype
        ws.append(w)
    res = {"schema_version": 2, "name": f"{doc.get('name', 'workloads')}_{dtype}",
           "description": f"{src} in {dtype} (scripts/make_dtype_workloads.py {src} {dtype} {out}): "
                          + doc.get("description", ""),
           "workloads": ws}
    with open(out, "w") as f:
        json.dump(res, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv)
