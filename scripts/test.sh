#!/usr/bin/env bash
# Installs the packages, builds, and runs the whole test suite: unit and
# integration tests (ctest), then the unit tests again under ASan+UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
(cd build && ctest --output-on-failure -j2)

cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DXFT_SANITIZE=ON \
  -DXFT_UNIT_TESTS_ONLY=ON >/dev/null
cmake --build build-asan -j"$(nproc)"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest -L unit --output-on-failure -j2)

# Bounded fuzzing of the safetensors header and config.json parsers.
bash tests/fuzz/run.sh 15
