#!/usr/bin/env python3
"""Draws the unseen-workload set: workloads the fit never sees, measured into their own profile.

N log-uniform in [100, 65536] (any integer, so most are not multiples of a tile), d in {32, 64, 128}
(balanced), causal on half of them (balanced), and B so that the grid at Br = 64 holds between
about a third of a wave and many waves of an H200 (40 to 40000 blocks, log-uniform), capped so
that one run stays under about 2 TFLOP. Fixed seed: the same file every time. None is in the
shipped grid or the seed cases (checked).

Usage: scripts/make_unseen_workloads.py [--seed S] [--count K] [--out FILE]
"""
import argparse
import json
import math
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def shipped_shapes():
    shapes = set()
    for name in ("grid.json", "seed_cases.json"):
        for w in json.loads((ROOT / "configs" / "workloads" / name).read_text())["workloads"]:
            shapes.add((w["B"], w["N"], w["d"], bool(w.get("causal", False))))
    return shapes


def draw(seed, count):
    rng = random.Random(seed)
    taken = shipped_shapes()
    ds = [32, 64, 128] * ((count + 2) // 3)
    causal = [False, True] * ((count + 1) // 2)
    rng.shuffle(ds)
    rng.shuffle(causal)
    out = []
    for i in range(count):
        while True:
            n = int(round(math.exp(rng.uniform(math.log(100), math.log(65536)))))
            blocks = math.exp(rng.uniform(math.log(40), math.log(40000)))
            b = max(1, int(round(blocks * 64 / n)))
            d = ds[i]
            flops = 4.0 * b * n * n * d / (2 if causal[i] else 1)
            b = max(1, min(b, int(2e12 / (flops / b))))
            key = (b, n, d, causal[i])
            if key not in taken:
                taken.add(key)
                break
        name = f"u{i:02d}_n{n}_b{b}_d{d}" + ("_causal" if causal[i] else "")
        out.append({"name": name, "B": b, "N": n, "d": d, "causal": causal[i]})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=20261123)
    ap.add_argument("--count", type=int, default=24)
    ap.add_argument("--out", default=str(ROOT / "configs" / "workloads" / "unseen.json"))
    a = ap.parse_args()
    if a.count < 1:
        sys.exit("make_unseen_workloads.py: --count must be at least 1")
    doc = {
        "schema_version": 1,
        "name": "unseen",
        "description": f"Unseen-workload set (scripts/make_unseen_workloads.py --seed {a.seed} --count {a.count}): "
        "never in the fit; measured exhaustively into profiles/unseen/<gpu>.json and scored by `flashtune fit --unseen`.",
        "workloads": draw(a.seed, a.count),
    }
    Path(a.out).write_text(json.dumps(doc, indent=2) + "\n")
    for w in doc["workloads"]:
        print(w["name"])


if __name__ == "__main__":
    main()
