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
# own test hosts (own names and subnet), so twice as many run side by side.
integration_tests() { (cd build && ctest -L integration --output-on-failure -j$((2 * jobs))); }
# Sanitizer build of the libraries and unit tests: -O1 (ASan's advice: the
# tests run several times faster than at -O0) with line tables only.
asan_build() {
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DXFT_SANITIZE=ON -DXFT_UNIT_TESTS_ONLY=ON \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" "${compiler_cache_flags[@]}" >/dev/null &&
    cmake --build build-asan -j"$jobs"
}
asan_unit_tests() {
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest -L unit --output-on-failure -j"$jobs")
}

stage install bash scripts/install-deps.sh
stage build bash scripts/build.sh --all
stage "ctest unit" unit_tests
stage "ctest integration" integration_tests
stage "asan build" asan_build
stage "asan ctest unit" asan_unit_tests
# Bounded fuzzing of the safetensors header and config.json parsers.
stage fuzz bash tests/fuzz/run.sh 15
