#!/usr/bin/env python3
"""Writes the inference workload files (schema 3: "kv_len" keys per entry, "kv_group" query heads
per K/V head; B = batch x query heads, N = query rows per head):

  configs/workloads/decode_cases.json   the decode cases of ../shared/anchors (H100 table), in bf16
                                        and fp32: the comparison of record against SDPA;
  configs/workloads/decode_grid.json    a grid for the sweep and the fit: K/V length, query rows
                                        (1, 4, 16, 64), grouping (1, 4, 8), d (64, 128), batch;
  configs/workloads/unseen_decode.json  24 workloads drawn at random (seed 26) from wider ranges,
                                        for scoring a fit that never saw them.

Every workload is causal (bottom-right: query row i sees keys j <= i + kv_len - N), as generation
with a KV cache calls attention; at N = 1 that mask hides nothing. The files are written again
identically by the same command.

Usage: scripts/make_decode_workloads.py [OUT_DIR]     (default configs/workloads)
"""
import json
import os
import random
import sys

# (batch, query heads, K/V heads, Nq, Nkv, d): ../shared/anchors/README.md, "Decode".
ANCHOR_CASES = [
    (1, 32, 32, 1, 8192, 128),
    (8, 32, 32, 1, 4096, 128),
    (1, 32, 8, 1, 32768, 128),
    (16, 32, 8, 1, 8192, 128),
    (64, 12, 12, 1, 1024, 64),
    (4, 32, 8, 4, 16384, 128),
    (1, 12, 12, 1, 65536, 64),
]


def workload(batch, hq, hkv, nq, nkv, d, dtype, prefix):
    return {"name": f"{prefix}_b{batch}_h{hq}kv{hkv}_q{nq}_n{nkv}_d{d}_{dtype}",
            "B": batch * hq, "N": nq, "kv_len": nkv, "kv_group": hq // hkv, "d": d, "causal": True,
            "dtype": dtype}


def document(name, description, workloads):
    return {"schema_version": 3, "name": name, "description": description, "workloads": workloads}


def anchor_cases():
    ws = [workload(*c, dtype, "dec") for dtype in ("bf16", "fp32") for c in ANCHOR_CASES]
    return document("decode_cases",
                    "The decode cases of ../shared/anchors/README.md (H100, SDPA FLASH/CUDNN in bf16), in bf16 "
                    "and fp32 (scripts/make_decode_workloads.py); B = batch x query heads.", ws)


def grid():
    ws = []
    hkv = 8
    for d in (64, 128):
        for group in (1, 4, 8):
            for nkv in (1024, 8192, 65536, 131071):
                for nq in (1, 4, 16, 64):
                    ws.append(workload(1, hkv * group, hkv, nq, nkv, d, "bf16", "g"))
    # A serving batch: many blocks without splitting.
    for nkv in (1024, 8192):
        for nq in (1, 16):
            for group in (1, 8):
                ws.append(workload(8, hkv * group, hkv, nq, nkv, 128, "bf16", "g"))
    # fp32 and fp16 on a slice: the element size moves the bytes, not the structure.
    for dtype in ("fp32", "fp16"):
        for nkv in (4096, 65536):
            for group in (1, 8):
                ws.append(workload(1, hkv * group, hkv, 1, nkv, 128, dtype, "g"))
    return document("decode_grid",
                    "Decode and grouped-query workloads for the sweep and the fit: 8 K/V heads, K/V length 1k-128k "
                    "(odd 131071), query rows 1-64, 1/4/8 query heads per K/V head, d 64/128, batch 1 (and 8 on a "
                    "slice); mostly bf16 (scripts/make_decode_workloads.py).", ws)


def unseen():
    rng = random.Random(26)
    ws = []
    for i in range(24):
        d = rng.choice((64, 128))
        group = rng.choice((1, 2, 4, 8))
        hkv = rng.choice((1, 2, 4, 8))
        nq = rng.choice((1, 1, 1, 2, 4, 8, 16, 32, 64))
        nkv = max(nq, int(round(2 ** rng.uniform(9, 17))))
        batch = rng.choice((1, 2, 3, 5, 8, 16))
        dtype = rng.choice(("bf16", "bf16", "fp16", "fp32"))
        w = workload(batch, hkv * group, hkv, nq, nkv, d, dtype, f"ud{i:02d}")
        ws.append(w)
    return document("unseen_decode",
                    "24 decode workloads drawn at random (seed 26) for scoring a fit that never saw them "
                    "(scripts/make_decode_workloads.py).", ws)


def main(argv):
    out = argv[1] if len(argv) > 1 else "configs/workloads"
    if not os.path.isdir(out):
        sys.exit(f"make_decode_workloads: {out} is not a folder")
    for doc in (anchor_cases(), grid(), unseen()):
        path = os.path.join(out, doc["name"] + ".json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        print(f"{path}: {len(doc['workloads'])} workloads")


if __name__ == "__main__":
    main(sys.argv)
