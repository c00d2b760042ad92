#!/usr/bin/env bash
# The installed flashtune from the outside, without GPU (tests/install/CMakeLists.txt runs it):
#   install    cmake --install of the build tree into WORK/prefix (the other two's fixture)
#   consumer   tests/consumer configured and built against WORK/prefix (find_package(flashtune),
#              flashtune::model); its time for one (workload, config) on the H200 spec must equal
#              `flashtune predict --json`'s from the installed binary, both from the shipped profile;
#              its flashtune::attention program chooses a config with the shipped profile; and
#              configured again with the CUDA toolkit hidden, flashtune::model alone builds and agrees
#   relocated  WORK/prefix copied to a temporary folder and run from there, outside every tree, with
#              no FLASHTUNE_* variable set: `predict --gpu h200` reads the spec and the shipped
#              profile of the new place and names the profile; --data-dir and FLASHTUNE_DATA_DIR
#              override it; --spec-only reads no profile
# Usage: install_test.sh MODE WORK BUILD_DIR SOURCE_DIR CMAKE GENERATOR MAKE_PROGRAM CXX
set -euo pipefail
mode=$1 work=$2 build=$3 source=$4 cmake=$5 generator=$6 make_program=$7 cxx=$8
prefix=$work/prefix
workload=(--B 10 --N 2048 --d 64)
config=mma_3xtf32/d64/br64xbc64/swizzled
config_args=(--variant mma_3xtf32 --Br 64 --Bc 64 --layout swizzled)
unset FLASHTUNE_DATA_DIR FLASHTUNE_PROFILE_DIR FLASHTUNE_PLOT_TEMPLATE_DIR

fail() { echo "FAIL: $*" >&2; exit 1; }
json_field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

case $mode in
install)
  rm -rf "$prefix"
  "$cmake" --install "$build" --prefix "$prefix" >"$work/install.log"
  for f in bin/flashtune lib/cmake/flashtune/flashtune-config.cmake lib/cmake/flashtune/flashtune-config-version.cmake \
           include/flashtune/model/predict.h include/flashtune/dispatch/attention_forward.h \
           share/flashtune/configs/gpus/nvidia-h200.json share/flashtune/configs/workloads/grid.json \
           share/flashtune/profiles/nvidia-h200.json share/flashtune/profiles/unseen/nvidia-h200.json \
           share/flashtune/plots/templates/common.gp; do
    [ -e "$prefix/$f" ] || fail "not installed: $f"
  done
  if find "$prefix/share" -name '*.lock' -o -name '*.journal' | grep -q .; then fail "a writer's lock or journal was installed"; fi
  echo "installed into $prefix: $(find "$prefix" -type f | wc -l) files"
  ;;
consumer)
  rm -rf "$work/consumer-build"
  "$cmake" -S "$source/tests/consumer" -B "$work/consumer-build" -G "$generator" -DCMAKE_MAKE_PROGRAM="$make_program" \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >"$work/consumer-configure.log" ||
    { cat "$work/consumer-configure.log"; fail "consumer configure"; }
  "$cmake" --build "$work/consumer-build" >"$work/consumer-build.log" || { cat "$work/consumer-build.log"; fail "consumer build"; }
  cd "$work"
  lib=$("$work/consumer-build/consumer" h200 10 2048 64 "$config")
  echo "consumer: ${lib//$'\n'/, }"
  cli=$("$prefix/bin/flashtune" predict --gpu h200 "${workload[@]}" "${config_args[@]}" --json)
  cli_time=$(json_field 'repr(d["results"][0]["time_s"])' <<<"$cli")
  cli_profile=$(json_field 'd["profile"]' <<<"$cli")
  lib_time=$(sed -n 's/^time_s //p' <<<"$lib")
  lib_profile=$(sed -n 's/^profile //p' <<<"$lib")
  echo "flashtune predict --json: time_s $cli_time, profile $cli_profile"
  # flashtune::attention (built where the package found CUDA, as on every machine that built flashtune).
  [ -x "$work/consumer-build/consumer_dispatch" ] || fail "flashtune::attention not found by the consumer"
  chosen=$("$work/consumer-build/consumer_dispatch" h200 10 2048 64)
  echo "consumer_dispatch: $chosen"
  [[ $chosen == *"(profile $prefix/share/flashtune/profiles/nvidia-h200.json)" ]] || fail "dispatcher's profile: $chosen"
  [ "$lib_profile" = "$prefix/share/flashtune/profiles/nvidia-h200.json" ] || fail "consumer read profile '$lib_profile'"
  [ "$cli_profile" = "$lib_profile" ] || fail "CLI read '$cli_profile', consumer '$lib_profile'"
  python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if a == b else 1)' "$lib_time" "$cli_time" ||
    fail "consumer time $lib_time != CLI time $cli_time"
  # flashtune::model needs no CUDA: the same project where the CUDA toolkit cannot be found.
  rm -rf "$work/consumer-nocuda"
  "$cmake" -S "$source/tests/consumer" -B "$work/consumer-nocuda" -G "$generator" -DCMAKE_MAKE_PROGRAM="$make_program" \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON >"$work/consumer-nocuda.log" || { cat "$work/consumer-nocuda.log"; fail "no-CUDA configure"; }
  "$cmake" --build "$work/consumer-nocuda" >>"$work/consumer-nocuda.log" || { cat "$work/consumer-nocuda.log"; fail "no-CUDA build"; }
  [ ! -e "$work/consumer-nocuda/consumer_dispatch" ] || fail "flashtune::attention defined without CUDA"
  nocuda=$("$work/consumer-nocuda/consumer" h200 10 2048 64 "$config")
  [ "$nocuda" = "$lib" ] || fail "without CUDA: $nocuda"
  echo "without the CUDA toolkit: flashtune::model alone, same output"
  ;;
relocated)
  # Outside the source and build trees (the build folder may lie inside the source tree).
  outside=$(mktemp -d)
  trap 'rm -rf "$outside"' EXIT
  moved=$outside/opt/flashtune
  mkdir -p "$moved" "$outside/elsewhere"
  cp -a "$prefix/." "$moved/"
  cd "$outside/elsewhere"
  out=$("$moved/bin/flashtune" predict --gpu h200 "${workload[@]}" --all)
  first=$(head -n 1 <<<"$out")
  echo "first line: $first"
  share=$moved/share/flashtune
  [[ $first == *"($share/configs/gpus/nvidia-h200.json)"* ]] || fail "spec not read from $share"
  [[ $first == *"coefficients: $share/profiles/nvidia-h200.json"* ]] || fail "shipped profile of $share not named"
  [[ $out != *"$source"* ]] || fail "the output names the source tree $source"
  json=$("$moved/bin/flashtune" predict --gpu h200 "${workload[@]}" "${config_args[@]}" --json)
  [ "$(json_field 'd["profile"]' <<<"$json")" = "$share/profiles/nvidia-h200.json" ] || fail "--json profile"
  [ "$(json_field 'd["gpu"]["file"]' <<<"$json")" = "$share/configs/gpus/nvidia-h200.json" ] || fail "--json gpu.file"
  spec_only=$("$moved/bin/flashtune" predict --gpu h200 "${workload[@]}" "${config_args[@]}" --json --spec-only)
  [ "$(json_field 'd["profile"]' <<<"$spec_only")" = None ] || fail "--spec-only read a profile"
  # The override and the variable name the folder they were given (here the original prefix's).
  # The whole output is taken before its first line: `| head -n 1` under pipefail fails the script
  # whenever head closes the pipe before flashtune has written the rest (SIGPIPE, a timing race).
  out=$("$moved/bin/flashtune" --data-dir "$prefix/share/flashtune" predict --gpu h200 "${workload[@]}" --all)
  first=$(head -n 1 <<<"$out")
  [[ $first == *"coefficients: $prefix/share/flashtune/profiles/nvidia-h200.json"* ]] || fail "--data-dir: $first"
  out=$(FLASHTUNE_DATA_DIR="$prefix/share/flashtune" "$moved/bin/flashtune" predict --gpu h200 "${workload[@]}" --all)
  first=$(head -n 1 <<<"$out")
  [[ $first == *"coefficients: $prefix/share/flashtune/profiles/nvidia-h200.json"* ]] || fail "FLASHTUNE_DATA_DIR: $first"
  # A data folder that does not hold the data is named in the error.
  set +e
  err=$("$moved/bin/flashtune" --data-dir "$outside/elsewhere" predict --gpu h200 "${workload[@]}" --all 2>&1)
  code=$?
  set -e
  [ "$code" = 2 ] || fail "--data-dir without data: exit $code"
  [[ $err == *"$outside/elsewhere/configs/gpus"* ]] || fail "--data-dir without data: $err"
  echo "relocated prefix $moved: spec and shipped profile read from it"
  ;;
*)
  fail "unknown mode $mode"
  ;;
esac
