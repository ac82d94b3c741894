#!/usr/bin/env bash
# Peak resident memory of a many-thread flood (bench/api_calls) bare, under the CUPTI floor and under one or more
# builds of the library, the runs interleaved, round after round (docs/performance.md): on a GPU machine.
# usage: scripts/flood-memory.sh BUILD_DIR ROUNDS CALLS_PER_THREAD THREADS [NAME=LIBRARY ...]
#   Each round runs, in order: bare, floor (BUILD_DIR/bench/libcupti_floor.so), then each NAME=LIBRARY preloaded
#   with ASYNCCHECK_OPTIONS=stats=1 (default: asynccheck=BUILD_DIR/lib/libasynccheck.so).
# Prints one line a run: `FLOOD name=... round=... peak_kb=... shed=...`: the peak is VmHWM read every 10 ms while
# the program runs (the exit's analysis included, but for its last 10 ms), `shed` the calls the library's stats
# line says it shed and the peak it says at the report (getrusage; - for bare and the floor).
set -euo pipefail
build=$(cd "${1:?usage: flood-memory.sh BUILD_DIR ROUNDS CALLS_PER_THREAD THREADS [NAME=LIBRARY ...]}" && pwd)
rounds=${2:?rounds}
calls=${3:?calls per thread}
threads=${4:?threads}
shift 4
libs=("$@")
[ ${#libs[@]} -eq 0 ] && libs=("asynccheck=$build/lib/libasynccheck.so")
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run() {  # run NAME PRELOAD
  local name=$1 preload=$2 peak=0 hwm pid
  if [ -n "$preload" ]; then
    LD_PRELOAD=$preload ASYNCCHECK_OPTIONS=stats=1 "$build/bench/api_calls" "$calls" "$threads" >"$log" 2>&1 &
  else
    "$build/bench/api_calls" "$calls" "$threads" >"$log" 2>&1 &
  fi
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    [ -n "$hwm" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
    sleep 0.01
  done
  wait "$pid" || { echo "FLOOD name=$name round=$r failed:"; cat "$log"; return 1; }
  local shed
  shed=$(sed -n 's/.* \([0-9,]*\) calls\{0,1\} shed at the compact_backlog limit.*/\1/p' "$log" | tr -d ,)
  local stats_mib
  stats_mib=$(sed -n 's/.*peak RSS of the process \([0-9]*\) MiB.*/\1/p' "$log")
  echo "FLOOD name=$name round=$r peak_kb=$peak stats_peak_mib=${stats_mib:--} shed=${shed:--}" \
    "$(grep -o 'ns_per_call=[0-9.]*' "$log")"
}

for r in $(seq 1 "$rounds"); do
  run bare ""
  run floor "$build/bench/libcupti_floor.so"
  for spec in "${libs[@]}"; do run "${spec%%=*}" "${spec#*=}"; done
done
