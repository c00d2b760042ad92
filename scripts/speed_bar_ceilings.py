#!/usr/bin/env python3
"""What issue 25's open bf16 speed bars (>= 1.5x SDPA FLASH, >= 0.9x CUDNN on every case) ask of an SM.

Per case of a committed wgmma comparison (benchmarks/results/<gpu>-sdpa-compare-wgmma.json) and its
GPU's spec (configs/gpus/*.json): the scores (query-key pairs the softmax exponentiates: B N kv_len,
causal B sum_i (i + 1)) per SM and clock that our best config sustains and that each bar needs, beside
the pipes they run on:
  * MUFU: one EX2 per score, sfu_ops_per_clock_per_sm of them per clock (16 on Hopper);
  * tensor: 4 d FLOPs per score (S = Q K^T and O += P V) at the spec's dense 16-bit rate (wgmma's),
    and at the measured mma.sync peak (the comparison's meta.mma_peak_tflops, 643 on the H100);
  * memory: Q, K, V and O once over the spec's measured copy bandwidth (dram_bandwidth_measured_gbs),
    as a time floor.
The clock is the one the comparison recorded for the best config (NVML median); SDPA ran beside it.

Usage: python3 scripts/speed_bar_ceilings.py benchmarks/results/h100-sdpa-compare-wgmma.json configs/gpus/nvidia-h100-sxm.json
"""
import json
import sys


def spec_value(spec, key):
    v = spec[key]
    return v["value"] if isinstance(v, dict) else v


def scores_of(case):
    b, n = case["B"], case["N"]
    return b * n * (n + 1) // 2 if case["causal"] else b * n * n


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"speed_bar_ceilings: {path}: {e}")


def main(compare_path, spec_path):
    compare = load(compare_path)
    spec = load(spec_path)
    sms = spec_value(spec, "sm_count")
    mufu = spec_value(spec, "sfu_ops_per_clock_per_sm")
    tensor_flops = spec_value(spec, "bf16_tensor_flops_per_clock_per_sm")
    copy_gbs = spec_value(spec, "dram_bandwidth_measured_gbs")
    mma_peak = compare["meta"].get("mma_peak_tflops")
    print(f"{compare['meta']['device']['name']}: {sms} SMs, MUFU {mufu} EX2 per clock per SM, dense 16-bit tensor "
          f"{tensor_flops} FLOP per clock per SM, copy {copy_gbs} GB/s, mma.sync peak {mma_peak} TFLOP/s")
    print("scores per SM per clock (s/clk): ours = the best config's; FLASH x1.5 and CUDNN x0.9 = what the bars need;")
    print("tensor = the dense rate's ceiling (wgmma) and the mma.sync peak's; MUFU = one EX2 per score")
    print(f"{'case':16s} {'d':>3s} {'clk':>5s} {'ours':>6s} {'FLASHx1.5':>9s} {'CUDNNx0.9':>9s} {'MUFU':>5s} "
          f"{'tensor':>6s} {'mma.sync':>8s} {'need/MUFU':>9s} {'mem floor/bar':>13s}  best config")
    for case in compare["cases"]:
        best = case["best"]
        clock_hz = best.get("sm_clock_mhz", {}).get("median", spec_value(spec, "sm_clock_boost_mhz")) * 1e6
        per_clock = lambda ms: scores_of(case) / (ms * 1e-3) / (sms * clock_hz)
        ours = per_clock(best["time"]["median_ms"])
        flash_bar = per_clock(case["sdpa"]["flash"]["median_ms"] / 1.5)
        cudnn_bar = per_clock(case["sdpa"]["cudnn"]["median_ms"] / 0.9)
        need = max(flash_bar, cudnn_bar)
        d = case["d"]
        tensor = tensor_flops / (4 * d)
        mma_sync = mma_peak * 1e12 / (sms * clock_hz) / (4 * d) if mma_peak else float("nan")
        # Memory floor: Q, K, V and O once (2 bytes an element), against the stricter bar's time.
        bytes_moved = 4 * case["B"] * case["N"] * d * 2
        floor_ms = bytes_moved / (copy_gbs * 1e9) * 1e3
        bar_ms = min(case["sdpa"]["flash"]["median_ms"] / 1.5, case["sdpa"]["cudnn"]["median_ms"] / 0.9)
        print(f"{case['case']:16s} {d:3d} {clock_hz / 1e6:5.0f} {ours:6.2f} {flash_bar:9.2f} {cudnn_bar:9.2f} {mufu:5.1f} "
              f"{tensor:6.1f} {mma_sync:8.1f} {need / mufu:9.0%} {floor_ms / bar_ms:13.0%}  {best['config']}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: speed_bar_ceilings.py COMPARE.json SPEC.json")
    main(sys.argv[1], sys.argv[2])
