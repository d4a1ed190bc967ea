#!/usr/bin/env bash
# `run qwen` shows how far a model load is on stderr: a bar redrawn in place
# on a terminal, a line every XFTCTL_PROGRESS_INTERVAL_MS elsewhere (0 here, so
# no test waits on a clock), nothing under -q, and only rank 0's.
set -euo pipefail
: "${XFTCTL:?path of the xftctl binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The benchmark needs no tokenizer; one short iteration after the load.
bench=(run qwen --fake-model qwen2.5-0.5b --threads 2 --bench --input-tokens 1 --output-tokens 1 --iters 1 --warmup 0)
final_bar='loading qwen2.5-0.5b: 1201/1201 MiB [##########] 100%'
final_line='loading qwen2.5-0.5b: 1201/1201 MiB (100%)'

# 1. A terminal (script gives the command one): the bar is redrawn with \r,
#    each drawing ended by erase-line, and the last drawing is the finished
#    bar, ended by a newline.
script -qec "$(printf '%q ' "$XFTCTL" "${bench[@]}") >/dev/null" /dev/null >"$tmp/tty" ||
  fail "run qwen under a terminal failed: $(cat "$tmp/tty")"
python3 - "$tmp/tty" "$final_bar" <<'PY' || fail "terminal progress: $(cat -v "$tmp/tty")"
import re, sys
text = open(sys.argv[1], "rb").read().decode()
drawings = re.findall(r"\r([^\r\x1b]*)\x1b\[K", text)
assert len(drawings) >= 2, drawings
for d in drawings[:-1]:
    assert re.fullmatch(r"loading qwen2\.5-0\.5b: \d+/1201 MiB \[#* *\] \d{1,2}%", d), repr(d)
    assert len(re.search(r"\[(.*)\]", d).group(1)) == 10, repr(d)
assert drawings[-1] == sys.argv[2], repr(drawings[-1])
assert "\r" + sys.argv[2] + "\x1b[K\r\n" in text, repr(text[-200:])
PY

# 2. Not a terminal: lines, the last one the finished load, said once.
XFTCTL_PROGRESS_INTERVAL_MS=0 "$XFTCTL" "${bench[@]}" >/dev/null 2>"$tmp/file"
[ "$(grep -c '^loading qwen2.5-0.5b: ' "$tmp/file")" -ge 2 ] || fail "no progress lines: $(cat "$tmp/file")"
[ "$(grep -v '^loading qwen2.5-0.5b: [0-9]*/1201 MiB ([0-9]*%)$' "$tmp/file" | grep -c loading)" = 0 ] ||
  fail "malformed progress lines: $(cat "$tmp/file")"
[ "$(grep '^loading' "$tmp/file" | tail -1)" = "$final_line" ] || fail "last progress line: $(cat "$tmp/file")"
[ "$(grep -cF "$final_line" "$tmp/file")" = 1 ] || fail "finished line not once: $(cat "$tmp/file")"
[ "$(grep -c '\[#' "$tmp/file")" = 0 ] || fail "a bar off a terminal: $(cat "$tmp/file")"

# 3. -q: no progress, on a terminal or not.
XFTCTL_PROGRESS_INTERVAL_MS=0 "$XFTCTL" -q "${bench[@]}" >/dev/null 2>"$tmp/quiet"
[ ! -s "$tmp/quiet" ] || fail "-q printed: $(cat "$tmp/quiet")"
script -qec "$(printf '%q ' "$XFTCTL" -q "${bench[@]}") >/dev/null" /dev/null >"$tmp/quiet_tty"
! grep -q loading "$tmp/quiet_tty" || fail "-q on a terminal printed: $(cat -v "$tmp/quiet_tty")"

# 4. Two ranks: only rank 0 tells (the ranks' stderr is relayed to this one).
XFTCTL_PROGRESS_INTERVAL_MS=0 "$XFTCTL" "${bench[@]}" --local 2 >/dev/null 2>"$tmp/ranks"
[ "$(grep -c 'loading qwen2.5-0.5b: .*(100%)' "$tmp/ranks")" = 1 ] || fail "ranks: $(cat "$tmp/ranks")"
echo "load progress ok"
