#!/usr/bin/env bash
# Registers and spills of every compiled kernel, from ptxas -v. Builds the kernels library in its
# own build directory with FLASHTUNE_PTXAS_VERBOSE=ON and prints one line per kernel:
#   variant d Br Bc layout registers spill_stores spill_loads stack
# (the fp32 variants), or for mma16, wgmma16 and decode the kernel's full config name in place of the
# five fields (decode's combine kernels under their mangled names):
#   mma16/d128/br128xbc64/swizzled/bf16/s2/qsmem registers spill_stores spill_loads stack
# and "ptxas -O1" at the end of the line of a kernel from an -O1 instance file (<stem>_d<D>_o1.cu).
# Exits 1 when any kernel spills. Usage: scripts/ptxas_report.sh [build-dir] [extra cmake args...]
# ONLY=<stem>[,<stem>...] (instance file stems of kernels/CMakeLists.txt: row_smem, row_reg,
# warp_groups, regtile_2d, mma_3xtf32, mma_1xtf32, mma16, wgmma16, decode) compiles and reports those variants'
# instance files only (build/kernels/CMakeFiles/flashtune_kernels.dir/instances/<stem>_d*[_o1].cu.o, the
# sm_90a ones under flashtune_kernels_sm90a.dir), not
# the whole library: e.g. ONLY=mma16 scripts/ptxas_report.sh build-ptxas -DFLASHTUNE_SMALL_KERNEL_SET=OFF
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-ptxas}"
shift || true
cmake -S "$root" -B "$build" -G Ninja -DFLASHTUNE_PTXAS_VERBOSE=ON "$@" > /dev/null
log="$build/ptxas.log"
if [ -n "${ONLY:-}" ]; then
  objdir='kernels/CMakeFiles/flashtune_kernels(_sm90a)?\.dir/instances'
  targets=()
  for stem in ${ONLY//,/ }; do
    found="$(ninja -C "$build" -t targets all | grep -oE "^$objdir/${stem}_d[0-9]*(_o1)?\.cu\.o" | sort -u)"
    [ -n "$found" ] || { echo "ptxas_report: no instance objects for '$stem' in $build" >&2; exit 2; }
    for t in $found; do targets+=("$t"); rm -f "$build/$t"; done
  done
  ninja -C "$build" -j"$(nproc)" "${targets[@]}" > "$log" 2>&1 || { cat "$log"; exit 2; }
else
  # Touch nothing: force the kernel objects to recompile so that ptxas prints again.
  find "$build" \( -path '*flashtune_kernels.dir*' -o -path '*flashtune_kernels_sm90a.dir*' \) -name '*.cu.o' -delete 2> /dev/null || true
  cmake --build "$build" --target flashtune_kernels -j"$(nproc)" > "$log" 2>&1 || { cat "$log"; exit 2; }
fi

awk '
  # ninja prints the description of each step (the object it built) right before its output.
  /Building CUDA object/ { o1 = ($0 ~ /_o1\.cu\.o/); next }
  /Compiling entry function/ {
    name = $0; sub(/.*function \047/, "", name); sub(/\047.*/, "", name); next
  }
  /bytes stack frame/ { stack = $1; st = $5; ld = $9; next }
  /Used [0-9]+ registers/ {
    regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
    label = name
    # _ZN9flashtune7kernels12mma16_kernelILi128ELi128ELi64ELNS_6LayoutE2ELi1ELi2ELi1EEEv...
    #   (D, BR, BC, Layout, DType 1 = bf16 / 2 = fp16, stages, q_smem)
    #   -> mma16/d128/br128xbc64/swizzled/bf16/s2/qsmem, TileConfig::name(). Before the generic
    #   pattern below, which matches their first five fields too.
    if (match(name, /kernels14wgmma16_kernelILi[0-9]+ELi[0-9]+ELi[0-9]+ELNS_6LayoutE[0-9]ELi[0-9]+ELi[0-9]+ELi[0-9]+ELi[0-9]+ELi[0-9]+ELi[0-9]+E/)) {
      # wgmma16_kernel's ten (D, BR, BC, Layout, DType, stages, q_smem, overlap, ping_pong,
      #   persistent) -> wgmma16/d64/br192xbc128/swizzled/bf16/s2/pe: the knobs in name() order.
      s = substr(name, RSTART, RLENGTH); sub(/^kernels14wgmma16_kernelILi/, "", s); sub(/E$/, "", s)
      gsub(/ELi|ELNS_6LayoutE/, " ", s)
      split(s, f, " ")
      dt = (f[5] == 1 ? "bf16" : (f[5] == 2 ? "fp16" : "dtype" f[5]))
      label = sprintf("wgmma16/d%s/br%sxbc%s/swizzled/%s/s%s%s%s%s", f[1], f[2], f[3], dt, f[6],
                      f[8] != 0 ? "/ov" : "", f[9] != 0 ? "/pp" : "", f[10] != 0 ? "/pe" : "")
    } else if (match(name, /kernels12mma16_kernelILi[0-9]+ELi[0-9]+ELi[0-9]+ELNS_6LayoutE[0-9]ELi[0-9]+ELi[0-9]+ELi[0-9]+E/)) {
      s = substr(name, RSTART, RLENGTH); sub(/^kernels[0-9]+/, "", s); sub(/E$/, "", s)
      v = s; sub(/_kernelILi.*/, "", v); sub(/^[a-z0-9]+_kernelILi/, "", s)
      gsub(/ELi|ELNS_6LayoutE/, " ", s)
      split(s, f, " "); lay = (f[4] == 0 ? "plain" : (f[4] == 1 ? "padded" : "swizzled"))
      dt = (f[5] == 1 ? "bf16" : (f[5] == 2 ? "fp16" : "dtype" f[5]))
      label = sprintf("%s/d%s/br%sxbc%s/%s/%s/s%s%s", v, f[1], f[2], f[3], lay, dt, f[6], f[7] != 0 ? "/qsmem" : "")
    } else if (match(name, /kernels19decode_split_kernelILi[0-9]+ELi[0-9]+ELi[0-9]+ELi[0-9]+ELi[0-9]+E/)) {
      # _ZN9flashtune7kernels19decode_split_kernelILi128ELi16ELi32ELi1ELi2EEEv... (D, BR, BC, DType
      #   0 = fp32 / 1 = bf16 / 2 = fp16, stages) -> decode/d128/br16xbc32/swizzled/bf16/s2
      s = substr(name, RSTART, RLENGTH); sub(/^kernels19decode_split_kernelILi/, "", s); sub(/E$/, "", s)
      gsub(/ELi/, " ", s)
      split(s, f, " ")
      dt = (f[4] == 0 ? "" : (f[4] == 1 ? "/bf16" : (f[4] == 2 ? "/fp16" : "/dtype" f[4])))
      label = sprintf("decode/d%s/br%sxbc%s/swizzled%s/s%s", f[1], f[2], f[3], dt, f[5])
    } else if (match(name, /kernels[0-9]+[a-z_0-9]+_kernelILi[0-9]+ELi[0-9]+ELi[0-9]+ELNS_6LayoutE[0-9]/)) {
      # _ZN9flashtune7kernels15row_smem_kernelILi64ELi64ELi32ELNS_6LayoutE1EEEv... -> row_smem 64 64 32 1
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
    printf "%-48s regs %3s  spill_st %4s  spill_ld %4s  stack %4s%s\n", label, regs, st, ld, stack, o1 ? "  ptxas -O1" : ""
    if (st + 0 > 0 || ld + 0 > 0) spills++
    n++
  }
  END {
    printf "%d kernels, %d with spills\n", n, spills
    exit(spills > 0 ? 1 : 0)
  }' "$log"
