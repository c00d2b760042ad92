#!/usr/bin/env bash
# Registers and spills of every compiled kernel, from ptxas -v. Builds the kernels library in its
# own build directory with FLASHTUNE_PTXAS_VERBOSE=ON and prints one line per kernel:
#   variant d Br Bc layout registers spill_stores spill_loads stack
# Exits 1 when any kernel spills. Usage: scripts/ptxas_report.sh [build-dir] [extra cmake args...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-ptxas}"
shift || true
cmake -S "$root" -B "$build" -G Ninja -DFLASHTUNE_PTXAS_VERBOSE=ON "$@" > /dev/null
# Touch nothing: force the kernel objects to recompile so that ptxas prints again.
find "$build" -path '*flashtune_kernels.dir*' -name '*.cu.o' -delete 2> /dev/null || true
log="$build/ptxas.log"
cmake --build "$build" --target flashtune_kernels -j"$(nproc)" > "$log" 2>&1 || { cat "$log"; exit 2; }

awk '
  /Compiling entry function/ {
    name = $0; sub(/.*function \047/, "", name); sub(/\047.*/, "", name); next
  }
  /bytes stack frame/ { stack = $1; st = $5; ld = $9; next }
  /Used [0-9]+ registers/ {
    regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
    label = name
    # _ZN9flashtune7kernels15row_smem_kernelILi64ELi64ELi32ELNS_6LayoutE1EEEv... -> row_smem 64 64 32 1
    if (match(name, /kernels[0-9]+[a-z_0-9]+_kernelILi[0-9]+ELi[0-9]+ELi[0-9]+ELNS_6LayoutE[0-9]/)) {
      s = substr(name, RSTART, RLENGTH); sub(/^kernels[0-9]+/, "", s)
      gsub(/_kernelILi|ELi|ELNS_6LayoutE/, " ", s)
      split(s, f, " "); lay = (f[5] == 0 ? "plain" : (f[5] == 1 ? "padded" : "swizzled"))
      label = sprintf("%-12s d%-4s br%-4s bc%-4s %-8s", f[1], f[2], f[3], f[4], lay)
    } else if (match(name, /mma_tf32_kernelILNS_6traits12MmaPrecisionE[0-9]ELi[0-9]+ELi[0-9]+ELi[0-9]+ELNS_6LayoutE[0-9]/)) {
      # _ZN9flashtune7kernels15mma_tf32_kernelILNS_6traits12MmaPrecisionE0ELi64ELi64ELi32ELNS_6LayoutE2EEEv...
      #   -> mma_3xtf32 64 64 32 2 (MmaPrecision 0 = Tf32x3, 1 = Tf32x1)
      s = substr(name, RSTART, RLENGTH); sub(/^mma_tf32_kernelILNS_6traits12MmaPrecisionE/, "", s)
      gsub(/ELi|ELNS_6LayoutE/, " ", s)
      split(s, f, " "); lay = (f[5] == 0 ? "plain" : (f[5] == 1 ? "padded" : "swizzled"))
      label = sprintf("%-12s d%-4s br%-4s bc%-4s %-8s", f[1] == 0 ? "mma_3xtf32" : "mma_1xtf32", f[2], f[3], f[4], lay)
    }
    printf "%-48s regs %3s  spill_st %4s  spill_ld %4s  stack %4s\n", label, regs, st, ld, stack
    if (st + 0 > 0 || ld + 0 > 0) spills++
    n++
  }
  END {
    printf "%d kernels, %d with spills\n", n, spills
    exit(spills > 0 ? 1 : 0)
  }' "$log"
