#!/usr/bin/env python3
"""Writes kernels/wgmma_tf32_ops.cuh: the wgmma.mma_async m64nNk8 .tf32 shapes with fp32
accumulators that kernels/wgmma_tf32.cuh issues (the accumulator operand lists are long)."""
import pathlib

SS_N = (32, 64, 128)
RS_N = (64, 128)


def acc_list(n):
    regs = n // 2
    ops = ", ".join(f"%{i}" for i in range(regs))
    outs = []
    for i in range(0, regs, 8):
        outs.append("          " + ", ".join(f'"+f"(d[{j}])' for j in range(i, min(i + 8, regs))))
    return regs, ops, ",\n".join(outs).lstrip()


def ss(n):
    regs, ops, outs = acc_list(n)
    return f"""  // D (+)= A B, A and B from shared memory (descriptors), both K-major; scale_d = 0 overwrites D.
  static __device__ __forceinline__ void ss_n{n}(float (&d)[{regs}], uint64_t a, uint64_t b, int scale_d) {{
    asm volatile(
        "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 2}, 0;\\n"
        "wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32 "
        "{{{ops}}}, "
        "%{regs}, %{regs + 1}, p, 1, 1;\\n}}\\n"
        : {outs}
        : "l"(a), "l"(b), "r"(scale_d));
  }}
"""


def rs(n):
    regs, ops, outs = acc_list(n)
    return f"""  // D (+)= A B, A from registers (the m64k8 tf32 fragment: 4 per thread), B from shared memory
  // K-major; scale_d = 0 overwrites D.
  static __device__ __forceinline__ void rs_n{n}(float (&d)[{regs}], const uint32_t (&a)[4], uint64_t b, int scale_d) {{
    asm volatile(
        "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 5}, 0;\\n"
        "wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32 "
        "{{{ops}}}, "
        "{{%{regs}, %{regs + 1}, %{regs + 2}, %{regs + 3}}}, %{regs + 4}, p, 1, 1;\\n}}\\n"
        : {outs}
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
  }}
"""


def main():
    body = "".join(ss(n) for n in SS_N) + "".join(rs(n) for n in RS_N)
    text = f"""// wgmma.mma_async m64nNk8 .tf32 with fp32 accumulators, the shapes kernels/wgmma_tf32.cuh issues:
// S = Q K^T (both from shared memory, N = Bc) and O += P V (P from registers, N = d). Written by
// scripts/gen_wgmma_tf32_ops.py; edit the script, not this file. sm_90a only. The .tf32 form has no
// transpose immediates: both shared-memory operands are K-major.
#pragma once

#include <cstdint>

namespace flashtune::kernels::wgmma_tf32 {{

struct Ops {{
{body}}};

}}  // namespace flashtune::kernels::wgmma_tf32
"""
    out = pathlib.Path(__file__).resolve().parent.parent / "kernels" / "wgmma_tf32_ops.cuh"
    out.write_text(text)


if __name__ == "__main__":
    main()
