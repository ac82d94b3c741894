#!/usr/bin/env bash
# Overhead benchmarks of asynccheck on a GPU machine (docs/performance.md): bare runs vs the CUPTI floor vs
# asynccheck, interleaved, medians and spreads; prints one table and writes the raw numbers, the table and an SVG
# plot into $BENCH_OUT (default: a new temporary folder).
# usage: scripts/bench.sh BUILD_DIR [--quick] [--budget SECONDS] [--force] [--baseline LIB[@OPTIONS]]
#   BUILD_DIR: a build with the benchmarks (cmake --build BUILD_DIR --target asynccheck_bench): BUILD_DIR/bench/
#   and BUILD_DIR/lib/libasynccheck.so. --quick: fewer calls, rounds and steps (about 3 minutes instead of 7-8).
# Needs python3 (standard library only; the PyTorch loop is skipped when that python3 has no torch).
set -u
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  echo "usage: scripts/bench.sh BUILD_DIR [--quick] [--budget SECONDS] [--force]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
shift
src=$(cd "$(dirname "$0")/.." && pwd)
cuda_libs=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
export LD_LIBRARY_PATH="$build/lib:$cuda_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
python=${BENCH_PYTHON:-python3}
if ! command -v "$python" >/dev/null; then
  echo "bench: $python not found (set BENCH_PYTHON)" >&2
  exit 2
fi
for f in "$build/bench/api_calls" "$build/bench/startup" "$build/bench/libcupti_floor.so" \
         "$build/lib/libasynccheck.so"; do
  if [ ! -e "$f" ]; then
    echo "bench: $f is missing; build it: cmake --build $build --target asynccheck_bench" >&2
    exit 2
  fi
done
# libasynccheck.so must load (the GPU machine lacks libunwind: copy libunwind.so.8 into BUILD_DIR/lib).
for lib in "$build/lib/libasynccheck.so" "$build/bench/libcupti_floor.so"; do
  missing=$(ldd "$lib" 2>/dev/null | grep 'not found')
  if [ -n "$missing" ]; then
    echo "bench: $(basename "$lib") cannot load: $missing" >&2
    echo "       (copy it into $build/lib, e.g. cp /lib/x86_64-linux-gnu/libunwind.so.8 $build/lib/)" >&2
    exit 2
  fi
done
out=${BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/asynccheck-bench.XXXXXX")}
mkdir -p "$out" || exit 2
export BENCH_PYTHON="$python"
exec "$python" "$src/bench/bench.py" all --build "$build" --out "$out" "$@"
