#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) and runs each for a bounded
# time: tests/fuzz/run.sh [SECONDS per target, default 30].
# Exit status is non-zero when a target finds a crash; the input that crashed
# is left in $BUILD/artifacts/.
set -euo pipefail

seconds="${1:-30}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${XFT_FUZZ_BUILD_DIR:-$root/build-fuzz}"
cxx="${CXX_FUZZ:-clang++}"
mkdir -p "$build/obj" "$build/artifacts"

flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -fno-omit-frame-pointer -I"$root")
# The code under test, compiled once with coverage instrumentation for both targets.
sources=(engine/checkpoint/config.cpp engine/checkpoint/layout.cpp engine/checkpoint/safetensors.cpp
         engine/checkpoint/slicing.cpp common/atomic_file.cpp)

objects=()
for source in "${sources[@]}"; do
  object="$build/obj/$(echo "$source" | tr / _).o"
  if [[ ! -f "$object" || "$root/$source" -nt "$object" ]]; then
    "$cxx" "${flags[@]/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,}" -c "$root/$source" -o "$object"
  fi
  objects+=("$object")
done

status=0
for target in safetensors_header config; do
  binary="$build/${target}_fuzz"
  "$cxx" "${flags[@]}" "$here/${target}_fuzz.cpp" "${objects[@]}" -o "$binary"
  seeds="$here/corpus/${target%_header}"
  work="$build/corpus/$target"  # new inputs go here, never into the committed seeds
  mkdir -p "$work"
  echo "== fuzzing $target for ${seconds}s"
  log="$build/$target.log"
  rc=0
  "$binary" "$work" "$seeds" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/artifacts/${target}-" >"$log" 2>&1 || rc=$?
  grep -E "^(#[0-9]+ *DONE|==[0-9]+==ERROR|SUMMARY)|stat::number_of_executed_units|Test unit written" "$log" || true
  if [[ "$rc" -ne 0 ]]; then
    tail -n 40 "$log" >&2
    echo "FAIL: $target exited $rc; reproducer in $build/artifacts/, log $log" >&2
    status=1
  else
    echo "ok: $target"
  fi
done
exit "$status"
