#!/usr/bin/env python3
"""flashtune's best kernel per case against PyTorch scaled_dot_product_attention, fp32, same GPU, same run.

Needs a CUDA GPU, PyTorch, and a built `flashtune` binary; nothing else. For each case it times
SDPA with the EFFICIENT and MATH back ends (inputs [1, B, N, d]: one batch of B heads, TF32 off,
L2 flushed before every sample, CUDA events, warm-up, median; the same method as flashtune's
harness, docs/measurement.md), then runs `flashtune run --all-configs --check --json` to check and
time every compiled config of the case's d in one process, and keeps the fastest config that
passed the check. Prints a Markdown table and writes the raw rows as JSON (--out).

    python3 benchmarks/sdpa_compare.py --flashtune build/app/flashtune --out sdpa.json
    python3 benchmarks/sdpa_compare.py --cases t10,t30 --configs row_reg/d64/br128xbc32/plain
    python3 benchmarks/sdpa_compare.py --best-only sdpa.json    # re-time only the winners
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

CASES = {  # name: (B = batch x heads, N, d, causal); t* are the seed reports' test cases
    "t10": (10, 2048, 64, False),
    "t11": (13600, 128, 32, False),
    "t22": (500, 2048, 64, False),
    "t29": (4, 32768, 32, False),
    "t30": (2, 32768, 64, False),
    "h16k": (16, 4096, 64, False),
    "n1k_d128": (64, 1024, 128, False),
    "n1k_d128_causal": (64, 1024, 128, True),
    "n1999_d64_causal": (24, 1999, 64, True),  # odd N: every tile size leaves a tail
}

# Variants whose results are TF32-accurate only: never the "best" unless --precision tf32.
TF32_ONLY = ("mma_1xtf32",)


def nominal_flops(B, N, d, causal=False):
    f = 4.0 * B * N * N * d
    return f / 2 if causal else f


def find_flashtune(given):
    if given:
        return given
    here = os.path.dirname(os.path.abspath(__file__))
    for build in ("build", "build-small"):
        path = os.path.join(here, "..", build, "app", "flashtune")
        if os.path.exists(path):
            return os.path.normpath(path)
    return shutil.which("flashtune")


# ---- PyTorch SDPA ------------------------------------------------------------------------------

def time_sdpa(torch, backend, q, k, v, time_cap_s, rel_stdev_target=0.01, min_samples=10, max_samples=2000,
              causal=False):
    """Median ms of one SDPA call, cold L2, or (None, reason) when the back end refuses the inputs."""
    from torch.nn.attention import sdpa_kernel
    import torch.nn.functional as F

    l2 = getattr(torch.cuda.get_device_properties(q.device), "L2_cache_size", 0) or (64 << 20)
    flush = torch.empty(2 * l2, dtype=torch.uint8, device=q.device)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    try:
        with sdpa_kernel(backend):
            t0 = time.perf_counter()
            warm = 0
            while warm < 3 or time.perf_counter() - t0 < 0.05:
                flush.zero_()
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                torch.cuda.synchronize()
                warm += 1
            samples = []
            t0 = time.perf_counter()
            while True:
                flush.zero_()
                start.record()
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                stop.record()
                stop.synchronize()
                samples.append(start.elapsed_time(stop))
                n = len(samples)
                if n >= max_samples:
                    break
                if n >= min_samples:
                    rel = statistics.stdev(samples) / statistics.fmean(samples)
                    if rel < rel_stdev_target or time.perf_counter() - t0 >= time_cap_s:
                        break
    except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
        torch.cuda.empty_cache()
        return None, str(e).splitlines()[0][:200]
    finally:
        del flush
    return {
        "median_ms": statistics.median(samples),
        "min_ms": min(samples),
        "rel_stdev": statistics.stdev(samples) / statistics.fmean(samples),
        "samples": len(samples),
    }, None


def sdpa_rows(torch, B, N, d, seed, time_cap_s, causal=False):
    """SDPA EFFICIENT and MATH on [1, B, N, d] (B heads); [B, 1, N, d] when a back end refuses that shape."""
    from torch.nn.attention import SDPBackend

    out = {}
    for name, backend in (("efficient", SDPBackend.EFFICIENT_ATTENTION), ("math", SDPBackend.MATH)):
        errors = []
        for shape in ((1, B, N, d), (B, 1, N, d)):
            g = torch.Generator(device="cuda").manual_seed(seed)
            q, k, v = (torch.rand(shape, generator=g, device="cuda", dtype=torch.float32) * 2 - 1 for _ in range(3))
            stats, err = time_sdpa(torch, backend, q, k, v, time_cap_s, causal=causal)
            del q, k, v
            torch.cuda.empty_cache()
            if stats:
                out[name] = dict(stats, shape=list(shape))
                break
            errors.append("%s: %s" % (list(shape), err))
        else:
            out[name] = {"error": "; ".join(errors)}
    return out


# ---- flashtune ---------------------------------------------------------------------------------

def parse_config_name(name):
    """'row_reg/d64/br128xbc32/plain' -> run options."""
    variant, d, tile, layout = name.split("/")
    br, bc = tile[2:].split("xbc")
    return ["--variant", variant, "--Br", br, "--Bc", bc, "--layout", layout], int(d[1:])


def flashtune_rows(binary, B, N, d, configs, time_cap_s, check, timeout_s, causal=False):
    """Every result row flashtune reports for the case: one process for all configs of d, or one per given config."""
    base = [binary, "run", "--B", str(B), "--N", str(N), "--d", str(d), "--json", "--time-cap", str(time_cap_s)]
    if causal:
        base.append("--causal")
    if check:
        base.append("--check")
    if configs:
        runs = [(c, base + parse_config_name(c)[0]) for c in configs if parse_config_name(c)[1] == d]
    else:
        runs = [("all configs of d=%d" % d, base + ["--all-configs"])]
    rows, device = [], None
    for label, cmd in runs:
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            rows.append({"config": label, "status": "error", "reason": "timed out after %g s" % timeout_s})
            continue
        # Exit 1 still prints the JSON (a config failed its check); anything else is an error line.
        if p.returncode not in (0, 1) or not p.stdout.strip():
            reason = p.stderr.strip() or p.stdout.strip() or "exit %d" % p.returncode
            rows.append({"config": label, "status": "error", "reason": reason[:300]})
            continue
        doc = json.loads(p.stdout)
        device = doc.get("device", device)
        rows.extend(doc["results"])
    return rows, device


def best_of(rows, precision="fp32"):
    ok = [r for r in rows if r.get("status") == "ok" and "time" in r
          and (precision == "tf32" or not r.get("config", "").startswith(TF32_ONLY))]
    return min(ok, key=lambda r: r["time"]["median_ms"]) if ok else None


# ---- report ------------------------------------------------------------------------------------

def fmt(x, spec):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def markdown(results):
    lines = [
        "| case | B | N | d | best flashtune config | flashtune ms | TFLOP/s | SDPA-EFFICIENT ms | TFLOP/s | "
        "SDPA-MATH ms | ratio EFF/flashtune |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        B, N, d, causal = r["B"], r["N"], r["d"], r.get("causal", False)
        best = r.get("best")
        ft_ms = best["time"]["median_ms"] if best else None
        eff = r["sdpa"].get("efficient", {}).get("median_ms")
        mth = r["sdpa"].get("math", {}).get("median_ms")
        tf = lambda ms: nominal_flops(B, N, d, causal) / (ms * 1e-3) / 1e12 if ms else None
        ratio = eff / ft_ms if eff and ft_ms else None
        lines.append("| %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            r["case"] + (" (causal)" if causal else ""), B, N, d, best["config"] if best else "(none passed)", fmt(ft_ms, ".3f"), fmt(tf(ft_ms), ".1f"),
            fmt(eff, ".3f"), fmt(tf(eff), ".1f"), fmt(mth, ".3f"), fmt(ratio, ".2f")))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flashtune", help="path of the flashtune binary (default: build/app/flashtune)")
    ap.add_argument("--cases", default=",".join(CASES), help="comma list of: " + ", ".join(CASES))
    ap.add_argument("--configs", help="comma list of config names to time instead of every compiled one")
    ap.add_argument("--best-only", metavar="JSON", help="time only each case's best config from an earlier --out")
    ap.add_argument("--time-cap", type=float, default=0.5, help="sampling time cap per config and per SDPA back end, s")
    ap.add_argument("--no-check", action="store_true", help="skip flashtune's --check against the double reference")
    ap.add_argument("--skip-sdpa", action="store_true", help="time flashtune only")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=240, help="limit per flashtune process, s")
    ap.add_argument("--out", help="write the rows as JSON here")
    ap.add_argument("--precision", choices=("fp32", "tf32"), default="fp32",
                    help="fp32 (default): the best config among fp32-accurate ones (SIMT and 3xTF32); "
                         "tf32: 1xTF32 configs may win too")
    args = ap.parse_args()

    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        sys.exit("sdpa_compare: unknown case(s) %s (known: %s)" % (", ".join(unknown), ", ".join(CASES)))
    binary = find_flashtune(args.flashtune)
    if not binary or not os.path.exists(binary):
        sys.exit("sdpa_compare: flashtune binary not found (build it, or pass --flashtune PATH)")
    configs = [c.strip() for c in args.configs.split(",")] if args.configs else None
    prior_best = {}
    if args.best_only:
        with open(args.best_only) as f:
            prior_best = {r["case"]: r["best"]["config"] for r in json.load(f)["cases"] if r.get("best")}

    torch = None
    if not args.skip_sdpa:
        import torch  # noqa: F401  (imported late so --help works without PyTorch)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        if not torch.cuda.is_available():
            sys.exit("sdpa_compare: PyTorch sees no CUDA GPU")

    t_start = time.perf_counter()
    results, device = [], None
    for case in cases:
        B, N, d, causal = CASES[case]
        t0 = time.perf_counter()
        use = [prior_best[case]] if case in prior_best else configs
        rows, dev = flashtune_rows(binary, B, N, d, use, args.time_cap, not args.no_check, args.timeout, causal)
        device = dev or device
        best = best_of(rows, args.precision)
        sdpa = sdpa_rows(torch, B, N, d, args.seed, args.time_cap, causal) if torch else {}
        results.append({"case": case, "B": B, "N": N, "d": d, "causal": causal, "best": best, "flashtune": rows, "sdpa": sdpa,
                        "seconds": time.perf_counter() - t0})
        print("%s done in %.1f s: best %s" % (case, time.perf_counter() - t0, best["config"] if best else "(none)"),
              file=sys.stderr, flush=True)
        for r in rows:
            if r.get("status") not in ("ok", "compile", "resources"):
                print("  %s: %s: %s" % (r.get("config"), r.get("status"), r.get("reason", "")), file=sys.stderr)

    print(markdown(results))
    meta = {"device": device, "flashtune": binary, "seconds": time.perf_counter() - t_start, "time_cap_s": args.time_cap,
            "checked": not args.no_check, "precision": args.precision}
    if torch:
        meta.update(torch=torch.__version__, torch_device=torch.cuda.get_device_name(0), tf32=False)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"schema_version": 1, "meta": meta, "cases": results}, f, indent=2)
    print("\n%d case(s) in %.1f s on %s" % (len(results), meta["seconds"], (device or {}).get("name", "?")))


if __name__ == "__main__":
    main()
