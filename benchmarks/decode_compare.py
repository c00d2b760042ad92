#!/usr/bin/env python3
"""flashtune's decode family against PyTorch SDPA's back ends on decode shapes, same GPU, same run.

SDPA is timed here (q [b, Hq, Nq, d], k/v [b, Hkv, keys, d], enable_gqa where Hq != Hkv, L2 flushed
before every sample, CUDA events, warm-up, median: sdpa_compare.py's time_sdpa); flashtune's
decode configs by build/benchmarks/decode_bench on the same shapes (the tuner's harness, every
compiled decode config of the dtype at its default split; the fastest is reported). Bytes are Q, K,
V and O moved once; the bandwidth fraction is against --copy-gbps (default: the anchors'
device-to-device copy of this GPU, 3022 GB/s on the H100 and 4233 GB/s on the H200). Prints a Markdown table, writes the rows as JSON (--out).

    python3 benchmarks/decode_compare.py --bench build/benchmarks/decode_bench --dtype bf16 --out d.json
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_compare import time_sdpa  # noqa: E402

# (batch, Hq, Hkv, Nq, keys, d): the anchors' decode cases first, then keys x batch x grouping x Nq.
ANCHOR_SHAPES = [(1, 32, 32, 1, 8192, 128), (8, 32, 32, 1, 4096, 128), (1, 32, 8, 1, 32768, 128),
                 (16, 32, 8, 1, 8192, 128), (64, 12, 12, 1, 1024, 64), (4, 32, 8, 4, 16384, 128),
                 (1, 12, 12, 1, 65536, 64)]
SWEEP_SHAPES = [(b, 32, kvh, nq, keys, 128) for b in (1, 8) for kvh in (8, 32) for nq in (1, 4)
                for keys in (4096, 16384, 65536)]
TORCH_DTYPE = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def sdpa_backends(dtype):
    from torch.nn.attention import SDPBackend
    if dtype == "fp32":
        return (("efficient", SDPBackend.EFFICIENT_ATTENTION), ("math", SDPBackend.MATH))
    return (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
            ("efficient", SDPBackend.EFFICIENT_ATTENTION))


def time_sdpa_gqa(torch, backend, q, k, v, gqa, time_cap_s, flush_kind):
    """time_sdpa with enable_gqa: SDPA's call with the grouped heads, same method."""
    import torch.nn.functional as F
    if not gqa:
        return time_sdpa(torch, backend, q, k, v, time_cap_s, flush_kind=flush_kind)
    original = F.scaled_dot_product_attention

    def with_gqa(*args, **kwargs):
        return original(*args, enable_gqa=True, **kwargs)
    F.scaled_dot_product_attention = with_gqa
    try:
        return time_sdpa(torch, backend, q, k, v, time_cap_s, flush_kind=flush_kind)
    finally:
        F.scaled_dot_product_attention = original


def shape_bytes(shape, eb):
    b, hq, hkv, nq, keys, d = shape
    return eb * (2 * b * hq * nq * d + 2 * b * hkv * keys * d)


# Device-to-device copy bandwidth (bytes read + written), ../shared/anchors/README.md, by GPU name.
COPY_GBPS = {"H200": 4233.0, "H100": 3022.0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", required=True, help="path of the decode_bench binary")
    ap.add_argument("--dtype", default="bf16", choices=sorted(TORCH_DTYPE))
    ap.add_argument("--copy-gbps", type=float, help="copy bandwidth the fractions divide by (default: this GPU's in COPY_GBPS)")
    ap.add_argument("--time-cap", type=float, default=0.3)
    ap.add_argument("--anchors-only", action="store_true")
    ap.add_argument("--flush", choices=("write", "read"), default="write",
                    help="how the L2 is emptied before each sample of both sides: write (zeroes, left dirty: "
                         "the method of every profile) or read (clean lines, as after a decode step's "
                         "read-mostly work)")
    ap.add_argument("--out")
    a = ap.parse_args()
    import torch
    if a.copy_gbps is None:
        name = torch.cuda.get_device_name()
        known = [v for k, v in COPY_GBPS.items() if k in name]
        if not known:
            sys.exit(f"decode_compare: no copy bandwidth known for {name}: pass --copy-gbps")
        a.copy_gbps = known[0]
    shapes = ANCHOR_SHAPES + ([] if a.anchors_only else SWEEP_SHAPES)
    eb = 4 if a.dtype == "fp32" else 2
    spec = ";".join(",".join(str(x) for x in s) for s in shapes)
    out = subprocess.run([a.bench, "--dtype", a.dtype, "--shapes", spec, "--copy-gbps", str(a.copy_gbps),
                          "--flush", a.flush],
                         capture_output=True, text=True, timeout=1200)
    if out.returncode != 0:
        sys.exit("decode_bench failed: " + out.stderr[-2000:])
    ours = {}
    for line in out.stdout.splitlines():
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        key = (r["batch"], r["q_heads"], r["kv_heads"], r["nq"], r["keys"], r["d"])
        if key not in ours or r["median_ms"] < ours[key]["median_ms"]:
            ours[key] = r
    tdt = getattr(torch, TORCH_DTYPE[a.dtype])
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for s in shapes:
        b, hq, hkv, nq, keys, d = s
        g = torch.Generator(device="cuda").manual_seed(0)
        q = torch.rand(b, hq, nq, d, device="cuda", generator=g).to(tdt)
        k = torch.rand(b, hkv, keys, d, device="cuda", generator=g).to(tdt)
        v = torch.rand(b, hkv, keys, d, device="cuda", generator=g).to(tdt)
        row = {"batch": b, "q_heads": hq, "kv_heads": hkv, "nq": nq, "keys": keys, "d": d, "dtype": a.dtype,
               "bytes": shape_bytes(s, eb), "sdpa": {}}
        for name, backend in sdpa_backends(a.dtype):
            t, why = time_sdpa_gqa(torch, backend, q, k, v, hq != hkv, a.time_cap, a.flush)
            row["sdpa"][name] = t if t else {"refused": why}
        del q, k, v
        torch.cuda.empty_cache()
        timed = {n: r["median_ms"] for n, r in row["sdpa"].items() if "median_ms" in r}
        if timed:
            best = min(timed, key=timed.get)
            row["sdpa_best"] = {"backend": best, "median_ms": timed[best]}
        if s in ours:
            row["flashtune"] = ours[s]
        rows.append(row)

    def frac(ms, nbytes):
        return nbytes / (ms * 1e-3) / 1e9 / a.copy_gbps
    print(f"L2 flushed before each sample by {'reading' if a.flush == 'read' else 'writing'} 2x the L2 "
          f"(--flush {a.flush}); bandwidth against {a.copy_gbps:.0f} GB/s.\n")
    print(f"| B | Hq | Hkv | Nq | keys | d | MB | SDPA best ms (bw) | flashtune ms (bw) | config, splits | speed-up |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        sb, ft = r.get("sdpa_best"), r.get("flashtune")
        sdpa_cell = f"{sb['backend']} {sb['median_ms']:.4f} ({frac(sb['median_ms'], r['bytes']):.0%})" if sb else "-"
        ft_cell = f"{ft['median_ms']:.4f} ({frac(ft['median_ms'], r['bytes']):.0%})" if ft else "-"
        cfg = f"{ft['config']}, {ft['splits']}" if ft else "-"
        up = f"{sb['median_ms'] / ft['median_ms']:.2f}x" if sb and ft else "-"
        print(f"| {r['batch']} | {r['q_heads']} | {r['kv_heads']} | {r['nq']} | {r['keys']} | {r['d']} | "
              f"{r['bytes'] / 1e6:.0f} | {sdpa_cell} | {ft_cell} | {cfg} | {up} |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "dtype": a.dtype,
                       "copy_gbps": a.copy_gbps, "flush": a.flush, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
