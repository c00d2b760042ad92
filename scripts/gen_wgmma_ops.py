#!/usr/bin/env python3
"""Writes kernels/wgmma_ops.cuh: the wgmma.mma_async shapes the wgmma16 kernel issues, as inline PTX.

Each shape needs its N / 2 accumulator registers spelled out as asm operands, which C++ cannot
generate; this script writes them once. Run: python3 scripts/gen_wgmma_ops.py > kernels/wgmma_ops.cuh
"""

TYPES = {"Bf16": "bf16", "Fp16": "f16"}
SS_SHAPES = (64, 128)      # S = Q K^T: N = Bc
RS_SHAPES = (32, 64, 128)  # O += P V: N = d


def regs(first, count):
    return ", ".join(f"%{first + i}" for i in range(count))


def acc_operands(count):
    return ",\n          ".join(", ".join(f'"+f"(d[{i + j}])' for j in range(8)) for i in range(0, count, 8))


def ss(ptx_type, n):
    m = n // 2
    return f"""  // D (+)= A B, A and B from shared memory (descriptors), B K-major; scale_d = 0 overwrites D.
  static __device__ __forceinline__ void ss_n{n}(float (&d)[{m}], uint64_t a, uint64_t b, int scale_d) {{
    asm volatile(
        "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{m + 2}, 0;\\n"
        "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ptx_type}.{ptx_type} "
        "{{{regs(0, m)}}}, "
        "%{m}, %{m + 1}, p, 1, 1, 0, 0;\\n}}\\n"
        : {acc_operands(m)}
        : "l"(a), "l"(b), "r"(scale_d));
  }}"""


def rs(ptx_type, n):
    m = n // 2
    return f"""  // D += A B, A from registers (4 per thread, the m64k16 fragment), B from shared memory MN-major
  // (the transpose bit set).
  static __device__ __forceinline__ void rs_n{n}(float (&d)[{m}], const uint32_t (&a)[4], uint64_t b) {{
    asm volatile(
        "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{m + 5}, 0;\\n"
        "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ptx_type}.{ptx_type} "
        "{{{regs(0, m)}}}, "
        "{{%{m}, %{m + 1}, %{m + 2}, %{m + 3}}}, %{m + 4}, p, 1, 1, 1;\\n}}\\n"
        : {acc_operands(m)}
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
  }}"""


print("""// wgmma.mma_async m64nNk16 with fp32 accumulators for bf16 and fp16 (ss: N in {64, 128}; rs: N in
// {32, 64, 128}): the shapes
// kernels/wgmma16.cuh issues. Written by scripts/gen_wgmma_ops.py (the accumulator operand lists);
// edit the script, not this file. sm_90a only.
#pragma once

#include <cstdint>

#include "kernels/traits/tile_config.h"

namespace flashtune::kernels::wgmma {

template <int DT>
struct Ops;
""")
for enum, t in TYPES.items():
    print(f"template <>\nstruct Ops<static_cast<int>(DType::{enum})> {{")
    for n in SS_SHAPES:
        print(ss(t, n))
    for n in RS_SHAPES:
        print(rs(t, n))
    print("};\n")
print("}  // namespace flashtune::kernels::wgmma")
