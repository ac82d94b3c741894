#!/usr/bin/env bash
# Peak resident memory of a many-thread flood (bench/api_calls) bare, under the CUPTI floor and under one or more
# builds of the library, the runs interleaved, round after round (docs/performance.md): on a GPU machine.
# usage: scripts/flood-memory.sh BUILD_DIR ROUNDS CALLS_PER_THREAD THREADS [NAME=LIBRARY[@OPTIONS] ...]
#   Each round runs, in order: bare, floor (BUILD_DIR/bench/libcupti_floor.so), then each NAME=LIBRARY preloaded
#   with ASYNCCHECK_OPTIONS=stats=1 and OPTIONS (default: asynccheck=BUILD_DIR/lib/libasynccheck.so), e.g.
#   big=build/lib/libasynccheck.so@event_cache_kb=8192.
# Prints one line a run: `FLOOD name=... round=... peak_kb=... shed=... ns_per_call=...`: the peak is the program's
# own (getrusage of the child once it has exited: the exit's analysis included), `shed` the calls the library's stats
# line says it shed (- for bare and the floor), the program's page faults per 1000 calls, and under the library its
# backlog and window peaks (calls; the window's GPU work too), its own peak as the end began (peak_at_end_mib: the
# peak is the end's where peak_kb is above it), its rounds (how far apart at most, how many flushed
# CUPTI by force and how many without forcing it) and their time flushing CUPTI. A library that is missing, a run
# under one whose monitoring was off (require_monitoring=1: a bad option, no driver, another CUPTI client) or that
# printed no stats line stops the script with the run's output. LIBRARY paths may not hold '@'.
# MEM_SAMPLER=1: every run (bare too) also preloads BUILD_DIR/bench/libmem_sampler.so, and its line adds what the
# peak was made of (bench/mem_sampler.cpp: malloc's arenas and mappings, the rest) and, under the library, the most
# its event memory mapped at once (`event_peak_mib`).
set -euo pipefail
build=$(cd "${1:?usage: flood-memory.sh BUILD_DIR ROUNDS CALLS_PER_THREAD THREADS [NAME=LIBRARY[@OPTIONS] ...]}" && pwd)
rounds=${2:?rounds}
calls=${3:?calls per thread}
threads=${4:?threads}
shift 4
libs=("$@")
[ ${#libs[@]} -eq 0 ] && libs=("asynccheck=$build/lib/libasynccheck.so")
library_of() { local l=${1#*=}; echo "${l%%@*}"; }
options_of() { case $1 in *@*) echo ":${1#*@}" ;; esac; }
for spec in "floor=$build/bench/libcupti_floor.so" "${libs[@]}"; do
  [ -f "$(library_of "$spec")" ] || { echo "flood-memory: ${spec%%=*}: no such library: $(library_of "$spec")" >&2; exit 2; }
done
sampler=
if [ "${MEM_SAMPLER:-0}" = 1 ]; then
  sampler=$build/bench/libmem_sampler.so
  [ -f "$sampler" ] || { echo "flood-memory: MEM_SAMPLER=1: no such library: $sampler" >&2; exit 2; }
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# The child's peak resident memory in KiB, its output in $log. PRELOAD and OPTIONS reach the child alone, not this
# python: the peak counts the image the child's exec replaced (this python's ~14 MB, far below a flood's).
peak_of() {  # peak_of PRELOAD OPTIONS PROGRAM ARGS...
  python3 -c 'import os, resource, subprocess, sys
env = dict(os.environ, LD_PRELOAD=sys.argv[2], ASYNCCHECK_OPTIONS=sys.argv[3])
with open(sys.argv[1], "w") as log:
    rc = subprocess.run(sys.argv[4:], stdout=log, stderr=subprocess.STDOUT, env=env).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$log" "$@"
}

run() {  # run NAME [PRELOAD [OPTIONS]]
  local name=$1 preload=${2:-} options=${3:-} peak shed parts=
  [ -n "$sampler" ] && preload=$sampler${preload:+:$preload}
  if ! peak=$(peak_of "$preload" "stats=1:require_monitoring=1$options" "$build/bench/api_calls" "$calls" "$threads"); then
    echo "flood-memory: $name, round $r: the program failed (or ran unmonitored):" >&2
    cat "$log" >&2
    exit 1
  fi
  if [ "$name" != bare ] && [ "$name" != floor ] && ! grep -q 'asynccheck: stats:' "$log"; then
    echo "flood-memory: $name, round $r: no stats line (the library not loaded, or monitoring off):" >&2
    cat "$log" >&2
    exit 1
  fi
  shed=$(sed -n 's/.* \([0-9]*\) calls\{0,1\} shed at the compact_backlog limit.*/\1/p' "$log")
  if [ "$name" != bare ] && [ "$name" != floor ]; then
    parts=" backlog_peak=$(sed -n 's/.*backlog peak \([0-9]*\) call.*/\1/p' "$log") window_peak=$(sed -n 's/.*window peak \([0-9]*\) call.*/\1/p' "$log") window_ops_peak=$(sed -n 's/.*window peak [0-9]* calls\{0,1\} and \([0-9]*\) operation.*/\1/p' "$log")"
    parts+=" peak_at_end_mib=$(sed -n 's/.* (\([0-9]*\) MiB as the end began).*/\1/p' "$log")"
    parts+=" rounds=$(sed -n 's/.* \([0-9]*\) rounds\{0,1\} (.*/\1/p' "$log") flush_ms=$(sed -n 's/.*rounds besides: \([0-9.]*\) ms flushing.*/\1/p' "$log") round_gap_ms=$(sed -n 's/.*at most \([0-9.]*\) ms apart.*/\1/p' "$log") forced_flushes=$(sed -n 's/.* rounds\{0,1\} (\([0-9]*\) with a forced flush.*/\1/p' "$log") ordinary_flushes=$(sed -n 's/.* \([0-9]*\) with an ordinary one.*/\1/p' "$log")"
  fi
  if [ -n "$sampler" ]; then
    # The program's line: the largest (a process the library starts, addr2line, is sampled too).
    parts+=" $(sed -n 's/^MEMSAMPLE //p' "$log" | sort -t= -k2,2nr | head -1)"
    parts+=" event_peak_mib=$(sed -n 's/.* at most \([0-9]*\) MiB mapped at once.*/\1/p' "$log")"
  fi
  echo "FLOOD name=$name round=$r peak_kb=$peak shed=${shed:--} $(grep -o 'ns_per_call=[0-9.]*' "$log") $(grep -o 'minflt_per_kcall=[0-9.]*' "$log")$parts"
}

for r in $(seq 1 "$rounds"); do
  run bare
  run floor "$build/bench/libcupti_floor.so"
  for spec in "${libs[@]}"; do run "${spec%%=*}" "$(library_of "$spec")" "$(options_of "$spec")"; done
done
