#!/usr/bin/env python3
"""Host cost of one attention call, flashtune against SDPA, on decode and prefill shapes.

A decode step of a small model is bound by the CPU issuing kernels, not by the GPU: there the
time the host spends per attention call decides the tokens per second. For each shape this prints
  issue us   host time per call, 200 calls back to back without synchronizing (perf_counter);
  gpu us     time per call on the GPU stream, the same 200 calls between CUDA events;
for flashtune.attention (the dispatcher's choice, then the same config named), the extension's
call alone with precomputed arguments, and SDPA's best back end; and a cProfile of the Python
layer's share. Usage: PYTHONPATH=build/python python3 benchmarks/call_overhead.py [--json out]
"""
import argparse
import cProfile
import io
import json
import pstats
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import flashtune

SHAPES = {  # name: batch, Hq, Hkv, Nq, Nkv, d, causal
    "decode_gqa": (1, 16, 4, 1, 544, 128, True),
    "decode_mha": (1, 12, 12, 1, 544, 64, True),
    "prefill_gqa": (1, 16, 4, 512, 512, 128, True),
}
CALLS = 200


def timed(fn):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    t0 = time.perf_counter()
    for _ in range(CALLS):
        fn()
    issue = (time.perf_counter() - t0) / CALLS * 1e6
    end.record()
    end.synchronize()
    return dict(issue_us=issue, gpu_us=start.elapsed_time(end) / CALLS * 1e3)


def in_sequence(attend, x, w, layers=8, reps=30):
    """ms per pass of `layers` x (a one-token projection, then attention): the attention call
    inside a queue of other GPU work, as in a decode step, where a call that makes the host wait
    for the GPU costs the whole queue's time and a call that does not costs its own."""
    def one():
        for _ in range(layers):
            x2 = x @ w
            attend()
        return x2
    for _ in range(3):
        one()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        one()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


def runtime_calls(fn, calls=20):
    """The CUDA runtime and driver calls of `calls` calls of fn (torch.profiler), counted by name:
    a synchronizing call (cudaStreamSynchronize, cudaDeviceSynchronize, a blocking copy) shows."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return {e.key: dict(count=e.count, cpu_us=round(e.cpu_time_total, 1))
            for e in prof.key_averages() if e.key.startswith(("cuda", "cu")) and e.count}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for name, (b, hq, hkv, nq, nkv, d, causal) in SHAPES.items():
        g = torch.Generator(device="cuda").manual_seed(0)
        q = torch.randn(b, hq, nq, d, device="cuda", generator=g).bfloat16()
        cache = [torch.randn(b, hkv, nkv + 64, d, device="cuda", generator=g).bfloat16() for _ in range(2)]
        k, v = cache[0][:, :, :nkv], cache[1][:, :, :nkv]
        flashtune.attention(q, k, v, causal=causal)
        config = flashtune.last_launch()["config"]
        out = torch.empty_like(q)
        row = dict(shape=name, config=config)
        row["flashtune"] = timed(lambda: flashtune.attention(q, k, v, causal=causal))
        row["flashtune_out_given"] = timed(lambda: flashtune.attention(q, k, v, causal=causal, out=out))
        row["flashtune_named"] = timed(lambda: flashtune.attention(q, k, v, causal=causal, config=config))
        # The extension alone, its arguments computed once (what the Python layer adds is the rest).
        from flashtune import _flashtune as ext
        stream = torch.cuda.current_stream().cuda_stream
        st = lambda t: list(t.stride())[:3]
        call = lambda: ext.attention(q.data_ptr(), st(q), k.data_ptr(), st(k), v.data_ptr(), st(v), out.data_ptr(),
                                     st(out), b, hq, nq, d, causal, None, stream, "fp32", "bf16", None, hkv, nkv)
        try:
            call()
            row["extension_only"] = timed(call)
        except Exception as e:  # the extension's signature moved: say so, keep the rest
            row["extension_only"] = dict(error=str(e).split("\n")[0])
        row["stream_lookup"] = timed(lambda: torch.cuda.current_stream(q.device).cuda_stream)
        best = None
        for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
            def sdpa():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=nq == nkv, enable_gqa=hkv != hq)
            try:
                r = timed(sdpa)
            except RuntimeError:
                continue
            r["backend"] = str(backend).split(".")[-1].lower()
            if best is None or r["gpu_us"] < best["gpu_us"]:
                best = r
        row["sdpa_best"] = best
        x = torch.randn(1, 2048, device="cuda").bfloat16()
        wt = torch.randn(2048, 2048, device="cuda").bfloat16()
        row["sequence_ms"] = dict(
            none=in_sequence(lambda: None, x, wt),
            flashtune=in_sequence(lambda: flashtune.attention(q, k, v, causal=causal), x, wt),
            sdpa=in_sequence(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=nq == nkv, enable_gqa=hkv != hq),
                             x, wt))
        others = [c for c in flashtune.configs(dtype="bf16") if f"/d{d}/" in c and c != config]
        for other in [c for c in others if c.split("/")[0] != config.split("/")[0]][:3]:
            try:
                flashtune.attention(q, k, v, causal=causal, config=other)
            except ValueError:
                continue
            row["sequence_ms"][other] = in_sequence(lambda: flashtune.attention(q, k, v, causal=causal, config=other),
                                                    x, wt)
        row["runtime_calls"] = runtime_calls(lambda: flashtune.attention(q, k, v, causal=causal))
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(CALLS):
            flashtune.attention(q, k, v, causal=causal)
        prof.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(8)
        row["profile"] = s.getvalue()
        rows.append(row)
        print(f"## {name}: {config}")
        for key in ("flashtune", "flashtune_out_given", "flashtune_named", "extension_only", "stream_lookup", "sdpa_best",
                    "sequence_ms", "runtime_calls"):
            print(f"  {key:22s} {row[key]}")
        print(row["profile"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
