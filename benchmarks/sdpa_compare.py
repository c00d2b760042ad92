#!/usr/bin/env python3
"""flashtune's best kernel per case against PyTorch scaled_dot_product_attention, same GPU, same run.

Needs a CUDA GPU, PyTorch, and a built `flashtune` binary; nothing else. For each case it times
SDPA's back ends (inputs [1, B, N, d]: one batch of B heads, TF32 off, L2 flushed before every
sample, CUDA events, warm-up, median; the same method as flashtune's harness,
docs/measurement.md), then runs `flashtune run --all-configs --check --json --dtype T` to check
and time every compiled config of the case's d and dtype in one process, and keeps the fastest
config that passed the check. Prints a Markdown table and writes the raw rows as JSON (--out).

fp32 (default): SDPA EFFICIENT and MATH (FLASH and CUDNN refuse fp32). --dtype bf16 / fp16: SDPA
FLASH, CUDNN and EFFICIENT in that dtype; beside the times, the relative L2 error of SDPA-FLASH and
of flashtune's best config against a float64 reference computed on the same inputs (uniform in
[-1, 1], rounded to the dtype; flashtune's output through the Python module's
attention(config=best) where it imports, else `flashtune run --config best --q/--k/--v --out` on
.npy copies), and the fraction of the measured mma.sync peak (--mma-peak-tflops: a number, or a
file holding benchmarks/mma_sync_peak's output or JSON with "tflops").

    python3 benchmarks/sdpa_compare.py --flashtune build/app/flashtune --out sdpa.json
    python3 benchmarks/sdpa_compare.py --cases t10,t30 --configs row_reg/d64/br128xbc32/plain
    python3 benchmarks/sdpa_compare.py --best-only sdpa.json    # re-time only the winners
    PYTHONPATH=build/python python3 benchmarks/sdpa_compare.py --dtype bf16 --mma-peak-tflops 643 \
        --out 'benchmarks/results/{gpu}-sdpa-compare-{dtype}.json'
"""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
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
TF32_ONLY = ("mma_1xtf32", "wgmma_1xtf32")

# The element types: torch's name of each (--dtype takes flashtune's).
TORCH_DTYPE = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
# The correctness bar for a 16-bit result: flashtune's rel L2 error at most this times
# SDPA-FLASH's on the same inputs, both against the float64 reference on the rounded inputs.
ERROR_RATIO_BAR = 1.25


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

# GPU cycles of the spin kernel queued before each sample's start event (about 0.3 ms at 2 GHz): the
# CPU's launch of the SDPA call (Python, the back end's dispatch, cuDNN's plan lookup) happens while
# it runs, so the start event fires right before SDPA's kernels. Without it the launch latency
# counted in every sample once the flush had drained: 0.03-0.05 ms on the H100, a third to a half of
# a 0.06 ms bf16 call (SDPA-CUDNN t10 measured 0.089 ms median against 0.044 in ../shared/anchors).
LAUNCH_COVER_CYCLES = 600_000


def time_sdpa(torch, backend, q, k, v, time_cap_s, rel_stdev_target=0.01, min_samples=10, max_samples=2000,
              causal=False, flush_kind="write"):
    """Median ms of one SDPA call, cold L2, or (None, reason) when the back end refuses the inputs.

    flush_kind "write" zeroes 2x the L2 before each sample (its lines stay dirty and are written back
    during the call); "read" sums it instead, leaving clean lines (tuner/timing_harness.h, L2Flush)."""
    from torch.nn.attention import sdpa_kernel
    import torch.nn.functional as F

    l2 = getattr(torch.cuda.get_device_properties(q.device), "L2_cache_size", 0) or (64 << 20)
    flush = torch.zeros(2 * l2, dtype=torch.uint8, device=q.device)
    flush_words = flush.view(torch.float32)

    def empty_l2():
        if flush_kind == "read":
            flush_words.sum()
        else:
            flush.zero_()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    try:
        with sdpa_kernel(backend):
            t0 = time.perf_counter()
            warm = 0
            while warm < 3 or time.perf_counter() - t0 < 0.05:
                empty_l2()
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                torch.cuda.synchronize()
                warm += 1
            samples = []
            t0 = time.perf_counter()
            while True:
                empty_l2()
                torch.cuda._sleep(LAUNCH_COVER_CYCLES)  # the GPU is busy while the CPU launches the call
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
        del flush, flush_words
    return {
        "median_ms": statistics.median(samples),
        "min_ms": min(samples),
        "rel_stdev": statistics.stdev(samples) / statistics.fmean(samples),
        "samples": len(samples),
    }, None


def sdpa_backends(torch, dtype):
    """(name, SDPBackend) timed for the dtype: fp32 EFFICIENT and MATH; 16-bit FLASH, CUDNN, EFFICIENT."""
    from torch.nn.attention import SDPBackend

    if dtype == "fp32":
        return (("efficient", SDPBackend.EFFICIENT_ATTENTION), ("math", SDPBackend.MATH))
    return (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
            ("efficient", SDPBackend.EFFICIENT_ATTENTION))


def sdpa_rows(torch, B, N, d, seed, time_cap_s, causal=False, dtype="fp32"):
    """SDPA's back ends for the dtype on [1, B, N, d] (B heads); [B, 1, N, d] when a back end refuses that shape."""
    out = {}
    tdtype = getattr(torch, TORCH_DTYPE[dtype])
    for name, backend in sdpa_backends(torch, dtype):
        errors = []
        for shape in ((1, B, N, d), (B, 1, N, d)):
            g = torch.Generator(device="cuda").manual_seed(seed)
            q, k, v = ((torch.rand(shape, generator=g, device="cuda", dtype=torch.float32) * 2 - 1).to(tdtype)
                       for _ in range(3))
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
    """'row_reg/d64/br128xbc32/plain' (or 'mma16/d64/br128xbc64/swizzled/bf16/s2') -> run options, d, dtype."""
    parts = name.split("/")
    if len(parts) < 4 or not parts[1][1:].isdigit():
        return [], 0, None
    dtype = next((p for p in parts[4:] if p in ("bf16", "fp16")), "fp32")
    return ["--config", name], int(parts[1][1:]), dtype


def flashtune_rows(binary, B, N, d, configs, time_cap_s, check, timeout_s, causal=False, dtype="fp32"):
    """Every result row flashtune reports for the case: one process for all configs of d and dtype, or one per given config."""
    base = [binary, "run", "--B", str(B), "--N", str(N), "--d", str(d), "--json", "--time-cap", str(time_cap_s)]
    if causal:
        base.append("--causal")
    if dtype != "fp32":
        base += ["--dtype", dtype]
    if check:
        base.append("--check")
    if configs:
        runs = [(c, base + parse_config_name(c)[0]) for c in configs
                if parse_config_name(c)[1:] == (d, dtype)]
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


def best_of(rows, precision="fp32", dtype="fp32"):
    ok = [r for r in rows if r.get("status") == "ok" and "time" in r
          and parse_config_name(r.get("config", ""))[2] == dtype
          and (precision == "tf32" or not r.get("config", "").startswith(TF32_ONLY))]
    return min(ok, key=lambda r: r["time"]["median_ms"]) if ok else None


# ---- accuracy of a 16-bit case: one input set, SDPA-FLASH and flashtune's best against float64 ----

def reference_f64(torch, q, k, v, causal, max_elements=1 << 27):
    """softmax(q k^T / sqrt(d) [causal]) v in float64 on [heads, N, d] inputs, in blocks of query rows
    (and heads) so that no block's scores exceed max_elements (1 GiB)."""
    H, N, d = q.shape
    out = torch.empty(H, N, d, dtype=torch.float64, device=q.device)
    rows = max(1, min(N, max_elements // N))
    heads = max(1, min(H, max_elements // (rows * N)))
    scale = 1.0 / math.sqrt(d)
    for h0 in range(0, H, heads):
        kh = k[h0:h0 + heads].double()
        vh = v[h0:h0 + heads].double()
        for r0 in range(0, N, rows):
            s = torch.matmul(q[h0:h0 + heads, r0:r0 + rows].double(), kh.transpose(1, 2)) * scale
            if causal:
                i = torch.arange(r0, min(N, r0 + rows), device=q.device).view(-1, 1)
                s.masked_fill_(torch.arange(N, device=q.device).view(1, -1) > i, float("-inf"))
            out[h0:h0 + heads, r0:r0 + rows] = torch.matmul(torch.softmax(s, dim=-1), vh)
            del s
    return out


def rel_l2(torch, x, ref):
    """||x - ref|| / ||ref||, summed in float64 over head chunks (no full float64 copy of x)."""
    num = den = 0.0
    for h0 in range(0, x.shape[0], 64):
        r = ref[h0:h0 + 64]
        num += float(((x[h0:h0 + 64].double() - r) ** 2).sum())
        den += float((r ** 2).sum())
    return math.sqrt(num / den)


def flashtune_output(torch, binary, config, q, k, v, causal, timeout_s):
    """O of `config` on q, k, v ([heads, N, d], 16-bit): through the Python module (attention(config=)),
    else through `flashtune run --config --q --k --v --out` on float32 .npy copies (exact: a 16-bit
    value is a float32 value). Returns (O as a tensor of q's dtype or float32, how)."""
    try:
        import flashtune
        out = flashtune.attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), causal=causal, config=config)
        torch.cuda.synchronize()
        return out[0], "python module (flashtune.attention, config=best)"
    except ImportError:
        pass
    import numpy as np
    dtype = parse_config_name(config)[2]
    with tempfile.TemporaryDirectory() as tmp:
        paths = {n: os.path.join(tmp, n + ".npy") for n in ("q", "k", "v", "o")}
        for n, t in (("q", q), ("k", k), ("v", v)):
            np.save(paths[n], t.float().cpu().numpy())
        cmd = [binary, "run", "--config", config, "--dtype", dtype, "--q", paths["q"], "--k", paths["k"], "--v",
               paths["v"], "--out", paths["o"], "--json", "--time-cap", "0.01"] + (["--causal"] if causal else [])
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        if p.returncode not in (0, 1) or not os.path.exists(paths["o"]):
            raise RuntimeError("flashtune run --out: " + (p.stderr.strip() or p.stdout.strip())[:300])
        return torch.from_numpy(np.load(paths["o"])).to(q.device), "flashtune run --q/--k/--v --out (.npy)"


def error_rows(torch, binary, B, N, d, causal, dtype, config, seed, timeout_s):
    """rel L2 of SDPA-FLASH and of flashtune's config against float64 on the same rounded inputs."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    tdtype = getattr(torch, TORCH_DTYPE[dtype])
    g = torch.Generator(device="cuda").manual_seed(seed + 1)
    q, k, v = ((torch.rand((B, N, d), generator=g, device="cuda", dtype=torch.float32) * 2 - 1).to(tdtype)
               for _ in range(3))
    ref = reference_f64(torch, q, k, v, causal)
    row = {"inputs": "uniform [-1, 1] rounded to %s, seed %d, [B, N, d] = [%d, %d, %d]" % (dtype, seed + 1, B, N, d),
           "reference": "float64 on the rounded inputs"}
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            y = F.scaled_dot_product_attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), is_causal=causal)[0]
        row["sdpa_flash"] = rel_l2(torch, y, ref)
        del y
    except RuntimeError as e:
        row["sdpa_flash_error"] = str(e).splitlines()[0][:200]
    if config:
        try:
            o, how = flashtune_output(torch, binary, config, q, k, v, causal, timeout_s)
            row["flashtune"] = rel_l2(torch, o, ref)
            row["flashtune_nonfinite"] = int((~torch.isfinite(o)).sum())
            row["flashtune_via"] = how
            row["config"] = config
            del o
        except (RuntimeError, ValueError, TypeError, OSError, subprocess.TimeoutExpired) as e:
            row["flashtune_error"] = str(e).splitlines()[0][:300]
    if "flashtune" in row and "sdpa_flash" in row:
        row["ratio_to_flash"] = row["flashtune"] / row["sdpa_flash"]
        row["within_bar"] = row["flashtune"] <= ERROR_RATIO_BAR * row["sdpa_flash"]
        row["bar"] = ERROR_RATIO_BAR
    del q, k, v, ref
    torch.cuda.empty_cache()
    return row


def read_mma_peak(arg):
    """--mma-peak-tflops: a number, or a file: JSON with "tflops" (or "peak_tflops"), or the text
    benchmarks/mma_sync_peak prints (the highest "N TFLOP/s" on a line naming bf16 / m16n8k16 when
    there is one, else on any line). Returns (TFLOP/s, source) or (None, None)."""
    if arg is None:
        return None, None
    try:
        return float(arg), "--mma-peak-tflops"
    except ValueError:
        pass
    with open(arg) as f:
        text = f.read()
    try:
        doc = json.loads(text)
        docs = doc if isinstance(doc, list) else [doc]
        vals = [float(x.get("peak_tflops", x.get("tflops"))) for x in docs
                if isinstance(x, dict) and ("peak_tflops" in x or "tflops" in x)]
        if vals:
            return max(vals), arg
    except ValueError:
        pass
    lines = text.splitlines()
    wanted = [l for l in lines if re.search(r"bf16|m16n8k16", l, re.I)] or lines
    vals = [float(m) for l in wanted for m in re.findall(r"([0-9]+(?:\.[0-9]+)?)\s*TFLOP/s", l)]
    if not vals:
        sys.exit("sdpa_compare: no 'TFLOP/s' figure in %s" % arg)
    return max(vals), arg


def gpu_slug(name):
    """'NVIDIA H100 80GB HBM3' -> 'h100', 'NVIDIA H200' -> 'h200'."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", name or "") if w and w.upper() != "NVIDIA"]
    return words[0].lower() if words else "gpu"


# ---- report ------------------------------------------------------------------------------------

def fmt(x, spec):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def markdown16(results, peak_tflops):
    lines = [
        "| case | B | N | d | best flashtune config | flashtune ms | TFLOP/s | of mma.sync peak | FLASH TFLOP/s | "
        "CUDNN TFLOP/s | EFFICIENT TFLOP/s | speed vs FLASH | vs CUDNN | rel L2 flashtune | rel L2 FLASH | "
        "<= %.2fx FLASH |" % ERROR_RATIO_BAR,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        B, N, d, causal = r["B"], r["N"], r["d"], r.get("causal", False)
        best = r.get("best")
        ft = best["time"]["median_ms"] if best else None
        tf = lambda ms: nominal_flops(B, N, d, causal) / (ms * 1e-3) / 1e12 if ms else None
        ms = {k: r["sdpa"].get(k, {}).get("median_ms") for k in ("flash", "cudnn", "efficient")}
        err = r.get("errors", {})
        ok = err.get("within_bar")
        lines.append("| %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["case"] + (" (causal)" if causal else ""), B, N, d, best["config"] if best else "(none passed)",
            fmt(ft, ".3f"), fmt(tf(ft), ".1f"),
            fmt(100 * tf(ft) / peak_tflops if ft and peak_tflops else None, ".0f") + ("%" if ft and peak_tflops else ""),
            fmt(tf(ms["flash"]), ".1f"), fmt(tf(ms["cudnn"]), ".1f"), fmt(tf(ms["efficient"]), ".1f"),
            fmt(ms["flash"] / ft if ft and ms["flash"] else None, ".2f"),
            fmt(ms["cudnn"] / ft if ft and ms["cudnn"] else None, ".2f"),
            fmt(err.get("flashtune"), ".2e"), fmt(err.get("sdpa_flash"), ".2e"),
            "-" if ok is None else ("yes" if ok else "NO")))
    return "\n".join(lines)


def summary16(results):
    """One line each: the speed ratio to FLASH and CUDNN over the cases, and the error bar."""
    flash = [r["sdpa"]["flash"]["median_ms"] / r["best"]["time"]["median_ms"] for r in results
             if r.get("best") and "median_ms" in r["sdpa"].get("flash", {})]
    cudnn = [r["sdpa"]["cudnn"]["median_ms"] / r["best"]["time"]["median_ms"] for r in results
             if r.get("best") and "median_ms" in r["sdpa"].get("cudnn", {})]
    bars = [r.get("errors", {}).get("within_bar") for r in results]
    out = []
    if flash:
        out.append("speed vs SDPA-FLASH: %.2fx to %.2fx over %d case(s); >= 1.0x on %d" % (
            min(flash), max(flash), len(flash), sum(f >= 1.0 for f in flash)))
    if cudnn:
        out.append("speed vs SDPA-CUDNN: %.2fx to %.2fx" % (min(cudnn), max(cudnn)))
    out.append("error within %.2fx SDPA-FLASH's: %d of %d case(s) (%d not measured)" % (
        ERROR_RATIO_BAR, sum(b is True for b in bars), len(bars), sum(b is None for b in bars)))
    return "\n".join(out)


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
                         "tf32: 1xTF32 configs may win too (fp32 data only)")
    ap.add_argument("--dtype", choices=tuple(TORCH_DTYPE), default="fp32",
                    help="element type of Q, K, V and O: fp32 (default; SDPA EFFICIENT and MATH), bf16 or fp16 "
                         "(SDPA FLASH, CUDNN and EFFICIENT in that dtype, flashtune's configs of that dtype, "
                         "and the rel L2 errors of SDPA-FLASH and flashtune's best)")
    ap.add_argument("--mma-peak-tflops", metavar="TFLOPS|FILE",
                    help="the measured mma.sync peak of the dtype (a number, or a file with benchmarks/mma_sync_peak's "
                         "output): the table gives each best config's fraction of it")
    ap.add_argument("--no-errors", action="store_true", help="16-bit: skip the rel L2 error measurement")
    args = ap.parse_args()
    sixteen = args.dtype != "fp32"
    peak_tflops, peak_source = read_mma_peak(args.mma_peak_tflops)

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
        rows, dev = flashtune_rows(binary, B, N, d, use, args.time_cap, not args.no_check, args.timeout, causal,
                                   args.dtype)
        device = dev or device
        best = best_of(rows, args.precision, args.dtype)
        sdpa = sdpa_rows(torch, B, N, d, args.seed, args.time_cap, causal, args.dtype) if torch else {}
        row = {"case": case, "B": B, "N": N, "d": d, "causal": causal, "dtype": args.dtype, "best": best,
               "flashtune": rows, "sdpa": sdpa}
        if sixteen and torch and not args.no_errors:
            row["errors"] = error_rows(torch, binary, B, N, d, causal, args.dtype, best["config"] if best else None,
                                       args.seed, args.timeout)
        if sixteen and best and peak_tflops:
            row["mma_peak_fraction"] = best["tflops"] / peak_tflops if "tflops" in best else (
                nominal_flops(B, N, d, causal) / (best["time"]["median_ms"] * 1e-3) / 1e12 / peak_tflops)
        row["seconds"] = time.perf_counter() - t0
        results.append(row)
        print("%s done in %.1f s: best %s" % (case, time.perf_counter() - t0, best["config"] if best else "(none)"),
              file=sys.stderr, flush=True)
        for r in rows:
            if r.get("status") not in ("ok", "compile", "resources"):
                print("  %s: %s: %s" % (r.get("config"), r.get("status"), r.get("reason", "")), file=sys.stderr)

    print(markdown16(results, peak_tflops) if sixteen else markdown(results))
    if sixteen:
        print()
        print(summary16(results))
    meta = {"device": device, "flashtune": binary, "seconds": time.perf_counter() - t_start, "time_cap_s": args.time_cap,
            "checked": not args.no_check, "precision": args.precision, "dtype": args.dtype}
    if sixteen:
        meta.update(mma_peak_tflops=peak_tflops, mma_peak_source=peak_source, error_bar=ERROR_RATIO_BAR,
                    sdpa_backends=[n for n, _ in sdpa_backends(torch, args.dtype)] if torch else [])
    if torch:
        meta.update(torch=torch.__version__, torch_device=torch.cuda.get_device_name(0), tf32=False)
    if args.out:
        name = (device or {}).get("name") or meta.get("torch_device")
        out = args.out.format(gpu=gpu_slug(name), dtype=args.dtype)
        with open(out, "w") as f:
            json.dump({"schema_version": 1, "meta": meta, "cases": results}, f, indent=2)
        print("rows written to %s" % out, file=sys.stderr)
    print("\n%d case(s) in %.1f s on %s" % (len(results), meta["seconds"], (device or {}).get("name", "?")))


if __name__ == "__main__":
    main()
