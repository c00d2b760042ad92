#!/usr/bin/env python3
"""How well the model ranks the wgmma16 knobs of one tile, from `flashtune fit --residuals` output.

Per (workload, tile) of the fitted profiles (rows whose set is "fit"), with the leave-one-workload-out
prediction (held_out_ms; --cv workload or all):
  * the stage pick: between the plain s2 and s3 configs, the measured time of the one the model ranks
    first over the faster one (issue 25: within 3% on at least 90% of the pairs);
  * the knob pick: the same among every knob variant of the tile (stages, /ov, /pp, /pe);
and per tile and knob, the mean measured and predicted time against the tile's plain s2 config, for
the fitted and the unseen workloads (the unseen rows use the fitted model's prediction).

Usage: flashtune fit ... --cv workload --unseen U --residuals R.csv; python3 scripts/wgmma16_knob_residuals.py R.csv
"""
import collections
import csv
import sys


def knob_of(config):
    parts = config.split("/")  # wgmma16/d128/br128xbc128/swizzled/bf16/s3/ov/pp
    return "/".join(parts[1:3]), "/".join(parts[5:])


def main(path):
    rows = [r for r in csv.DictReader(open(path)) if r["config"].startswith("wgmma16/")]
    by_tile = collections.defaultdict(dict)
    for r in rows:
        tile, knob = knob_of(r["config"])
        predicted = float(r["held_out_ms"] or r["predicted_ms"])
        by_tile[(r["workload"], tile, r["set"])][knob] = (float(r["measured_ms"]), predicted)

    def pick_regret(variants):
        best = min(m for m, _ in variants.values())
        pick = min(variants, key=lambda k: variants[k][1])
        return variants[pick][0] / best - 1.0

    stage = [pick_regret({k: v[k] for k in ("s2", "s3")})
             for (w, t, s), v in by_tile.items() if s == "fit" and "s2" in v and "s3" in v]
    knobs = [pick_regret(v) for (w, t, s), v in by_tile.items() if s == "fit" and len(v) > 1]
    print(f"stage pick (s2 or s3) within 3% of the faster: {sum(r <= 0.03 for r in stage)} of {len(stage)}")
    print(f"knob pick (every variant of the tile) within 3% of the best: {sum(r <= 0.03 for r in knobs)} of {len(knobs)}")

    ratios = collections.defaultdict(list)
    for (w, tile, s), v in by_tile.items():
        if "s2" not in v:
            continue
        m0, p0 = v["s2"]
        for knob, (m, p) in v.items():
            if knob != "s2":
                ratios[(tile, knob, s)].append((m / m0, p / p0))
    print("tile             knob         set     n  measured/s2  predicted/s2  mean |error| of the ratio")
    for (tile, knob, s), v in sorted(ratios.items()):
        n = len(v)
        meas = sum(a for a, _ in v) / n
        pred = sum(b for _, b in v) / n
        err = sum(abs(b / a - 1.0) for a, b in v) / n
        print(f"{tile:16s} {knob:12s} {s:6s} {n:3d}  {meas:11.3f}  {pred:12.3f}  {100 * err:6.1f}%")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: wgmma16_knob_residuals.py RESIDUALS.csv (from flashtune fit --residuals)")
    main(sys.argv[1])
