#!/usr/bin/env bash
# Installs the packages, builds, and runs the whole test suite: unit and
# integration tests (ctest), the unit tests again under ASan+UBSan, bounded
# fuzzing; ends with the wall time of every stage (scripts/stages.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stages.sh
source scripts/compiler_cache.sh
jobs=$(nproc)

# Each stage runs where `set -e` does not reach (stages.sh records its status),
# so every step inside one is chained with &&.
unit_tests() { (cd build && ctest -L unit --output-on-failure -j"$jobs"); }
# Integration tests mostly wait on sshd, mpirun and sockets, and each runs its
# own test hosts (own names and subnet), so one more than the cores run side by side.
integration_tests() { (cd build && ctest -L integration --output-on-failure -j$((jobs + 1))); }
# Sanitizer build of the libraries and unit tests: -O1 (ASan's advice: the
# tests run several times faster than at -O0) with line tables only.
asan_build() {
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DXFT_SANITIZE=ON -DXFT_UNIT_TESTS_ONLY=ON \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" "${compiler_cache_flags[@]}" >/dev/null &&
    cmake --build build-asan -j"$jobs"
}
# The sanitizer build runs beside the ctest stages at the lowest CPU priority
# (nice 19: it gets the cycles the tests leave while they wait on sshd, mpirun
# and sockets), into a log; its wall time is a row of its own.
asan_build_log=build-asan.log
start_asan_build() {
  set -m  # its own process group, so one kill stops cmake, ninja and the compilers
  (
    renice -n 19 -p "$BASHPID" >/dev/null
    start=$(date +%s)
    rc=0
    asan_build >"$asan_build_log" 2>&1 || rc=$?
    echo "$rc $(($(date +%s) - start))" >"$asan_build_log.status"
  ) &
  asan_build_pid=$!
  set +m
  stage_on_exit "kill -- -$asan_build_pid 2>/dev/null"
}
finish_asan_build() {
  local rc seconds
  wait "$asan_build_pid" || true
  read -r rc seconds <"$asan_build_log.status"
  stage_record "asan build (beside the tests)" "$seconds"
  ((rc == 0)) || { tail -n 60 "$asan_build_log"; echo "asan build failed ($asan_build_log)"; }
  return "$rc"
}
asan_unit_tests() {
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest -L unit --output-on-failure -j"$jobs")
}

stage install bash scripts/install-deps.sh
stage build bash scripts/build.sh --all
rm -f "$asan_build_log.status"
start_asan_build
stage "ctest unit" unit_tests
stage "ctest integration" integration_tests
stage "asan build, left after the tests" finish_asan_build
stage "asan ctest unit" asan_unit_tests
# Bounded fuzzing of the safetensors header and config.json parsers.
stage fuzz bash tests/fuzz/run.sh 15
