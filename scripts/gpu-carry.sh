#!/usr/bin/env bash
# Gathers what the GPU tests and the long runs need from a build into BUILD_DIR/carry (a tree that mirrors
# BUILD_DIR), small enough for the device tool's 64 MiB: our library, the command, the test binaries and the
# benchmark stripped of their debug sections; the samples kept whole (their line tables are what the expectations
# check); libunwind beside the library (the GPU machine has none; the library's RUNPATH is $ORIGIN).
# There: `cp -a BUILD_DIR/carry/. BUILD_DIR/` puts every file where the binaries' compiled-in paths expect it.
# usage: scripts/gpu-carry.sh [BUILD_DIR]     (docs/gpu-testing.md)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
carry=$build/carry
rm -rf "$carry"
put() {  # put FILE [strip]: copy FILE (relative to the build) into the carry tree
  mkdir -p "$carry/$(dirname "$1")"
  cp -L "$build/$1" "$carry/$1"
  if [ "${2:-}" = strip ]; then strip --strip-debug "$carry/$1"; fi
}
put lib/libasynccheck.so strip
put bin/asynccheck strip
cp -L "$(ldconfig -p | awk '/libunwind.so.8 .*x86-64/ {print $NF; exit}')" "$carry/lib/libunwind.so.8"
for f in "$build"/samples/*; do
  [ -f "$f" ] && [ -x "$f" ] && put "samples/$(basename "$f")"
done
# The corpus's cuda-samples, where built here (CORPUS_BUILD_ONLY=1 scripts/gpu-corpus.sh BUILD_DIR): whole, like the samples.
# Each with the checksum of its sources, NAME.sha256, by which gpu-corpus.sh knows not to build it again.
for f in "$build"/corpus/*; do
  case $f in *.build.log) continue ;; esac
  [ -f "$f" ] && put "corpus/$(basename "$f")"
done
put tests/samples/test_samples strip
for t in test_cuda_exit_paths cuda_exit_paths test_threads threads_stress test_other_profilers test_monitoring_stops monitoring_stops; do
  [ -e "$build/tests/robustness/$t" ] && put "tests/robustness/$t" strip
done
put bench/api_calls
put bench/libcupti_floor.so
put bench/startup
put bench/libpc_sampler.so
put bench/libmem_sampler.so
put bench/libfault_trace.so
du -sh "$carry"
