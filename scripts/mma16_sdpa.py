#!/usr/bin/env python3
"""PyTorch SDPA's FLASH back end (FlashAttention-2) in bf16 on the mma16 seed cases: median time of
15 launches after 3 warm-ups, L2 flushed before each (the method of the mma16 timing test), and its
relative L2 error against a float64 reference computed on the same bf16 / fp16 inputs (the issue's
correctness bar is relative to it). Prints one line per case; scripts/mma16_check.sh runs it."""
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

CASES = [("t10", 10, 2048, 64, False), ("t11", 13600, 128, 32, False), ("t22", 500, 2048, 64, False),
         ("t29", 4, 32768, 32, False), ("t30", 2, 32768, 64, False), ("n1k_d128", 64, 1024, 128, False),
         ("n1k_d128_causal", 64, 1024, 128, True), ("n4k_d128", 16, 4096, 128, False)]


def main():
    dev = torch.device("cuda")
    print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    for name, B, N, d, causal in CASES:
        q, k, v = (torch.rand(B, 1, N, d, device=dev, dtype=torch.bfloat16) * 2 - 1 for _ in range(3))
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            for _ in range(3):
                torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            ms = []
            for i in range(15):
                flush.fill_(i)
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                e.record()
                e.synchronize()
                ms.append(s.elapsed_time(e))
        ms.sort()
        med = ms[len(ms) // 2]
        flops = 4.0 * B * N * N * d * (0.5 if causal else 1.0)
        print(f"SDPA_FLASH {name:16s} {med:9.4f} ms {flops / med / 1e9:7.1f} TFLOP/s")
    # Errors on the correctness test's inputs: q in [-15, 15] (scores past +-50), k and v in [-3, 3].
    torch.manual_seed(0)
    for dt in (torch.bfloat16, torch.float16):
        for d in (32, 64, 128):
            for causal in (False, True):
                B, N = 2, 1000
                q = ((torch.rand(B, 1, N, d, device=dev) * 2 - 1) * 15).to(dt)
                k = ((torch.rand(B, 1, N, d, device=dev) * 2 - 1) * 3).to(dt)
                v = ((torch.rand(B, 1, N, d, device=dev) * 2 - 1) * 3).to(dt)
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                                       is_causal=causal)
                err = ((o.double() - ref).norm() / ref.norm()).item()
                print(f"SDPA_FLASH_ERR {str(dt).split('.')[-1]:8s} d={d:3d} causal={int(causal)} rel_l2 {err:.3e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
