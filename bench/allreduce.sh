#!/usr/bin/env bash
# Allreduce benchmark on this host: every algorithm against Open MPI's
# MPI_Allreduce (2 ranks by default), then the targets of the shm backend and
# of --algo auto as ratios. Prints numbers; never fails on timings.
#
#   bench/allreduce.sh [XFTCTL] [RANKS] [MAXBYTES]
#
# Targets (2 ranks): shm >= 2x faster than MPI_Allreduce from 4 KiB to 64 KiB,
# within 10% of it below 4 KiB, never slower above 64 KiB; auto never slower
# than mpi by more than noise (5%).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
xftctl=${1:-$here/build/cli/xftctl}
ranks=${2:-2}
max=${3:-64M}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tune="$work/tune.json"

echo "== every algorithm vs MPI_Allreduce, float32, $ranks ranks"
"$xftctl" bench allreduce --local "$ranks" -b 8 -e "$max" --compare --format oneccl
echo
echo "== bfloat16 (engine activations as bf16 payload)"
"$xftctl" bench allreduce --local "$ranks" -b 1K -e 1M -f 4 --dtype bfloat16 --algo mpi,shm,ring --compare \
  --format nccl

echo
echo "== tune, then auto vs mpi"
"$xftctl" bench allreduce --local "$ranks" -b 8 -e "$max" --tune --tune-file "$tune" --format json >"$work/tune.json.out"
"$xftctl" bench allreduce --local "$ranks" -b 8 -e "$max" --algo mpi,shm,auto --tune-file "$tune" --format json \
  >"$work/run.json"
jq -r '
  (map(select(.algorithm == "mpi") | {key: (.bytes | tostring), value: .t_avg_us}) | from_entries) as $mpi
  | ["bytes", "mpi_us", "shm_us", "auto_us", "shm_speedup", "auto/mpi", "target"],
    (group_by(.bytes)[] as $g
     | ($g[0].bytes) as $b
     | ($g | map(select(.algorithm == "shm"))[0].t_avg_us) as $shm
     | ($g | map(select(.algorithm == "auto"))[0].t_avg_us) as $auto
     | ($mpi[$b | tostring]) as $m
     | [$b, $m, $shm, $auto, ($m / $shm), ($auto / $m),
        (if $b < 4096 then (if $shm <= $m * 1.10 then "ok(<=1.10x)" else "MISS(<=1.10x)" end)
         elif $b <= 65536 then (if $m / $shm >= 2 then "ok(>=2x)" else "MISS(>=2x)" end)
         else (if $shm <= $m then "ok(<=mpi)" else "MISS(<=mpi)" end) end)
        + (if $auto <= $m * 1.05 then " auto-ok" else " auto-MISS" end)])
  | @tsv' "$work/run.json" | awk -F'\t' 'NR == 1 { printf "%10s %10s %10s %10s %12s %9s  %s\n", $1, $2, $3, $4, $5, $6, $7; next }
    { printf "%10d %10.2f %10.2f %10.2f %11.2fx %9.2f  %s\n", $1, $2, $3, $4, $5, $6, $7 }'
