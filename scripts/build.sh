#!/usr/bin/env bash
# Configures and builds into build/ (Release with debug info).
#   scripts/build.sh          xftctl alone: what the main job runs
#   scripts/build.sh --all    also every test binary and benchmark (scripts/test.sh)
# With ccache installed, objects are cached outside the clone (compiler_cache.sh),
# so a build in another clone of the same sources on this machine reuses them.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/compiler_cache.sh
targets=(--target xftctl)
[[ ${1:-} == --all ]] && targets=()
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${compiler_cache_flags[@]}" >/dev/null
cmake --build build -j"$(nproc)" "${targets[@]}"
