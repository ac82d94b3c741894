#!/usr/bin/env bash
# Runs a corpus of programs no one here wrote (corpus/: nine NVIDIA cuda-samples, small PyTorch and CuPy scripts of
# the kinds people write) and the traps sample (samples/traps, one run per mode), each bare and under asynccheck,
# on a machine with a GPU. scripts/corpus-compare.py OUTDIR then tabulates the reported sites beside the programs'
# own clocks (CLOCK lines).
#
# (1) Builds each cuda-sample into BUILD_DIR/corpus/ with nvcc -O2 -g -arch=sm_90 (NVCC, default nvcc on PATH or
#     /usr/local/cuda/bin/nvcc), unless the binary there was built from the same sources (NAME.sha256 beside it:
#     built here and carried, scripts/gpu-carry.sh carries BUILD_DIR/corpus/). CORPUS_BUILD_ONLY=1: stop after building (OUTDIR optional).
# (2) Runs each program bare (NAME.bare.out/.err: its own output and CLOCK lines) and under
#     `asynccheck --format=json --output=OUTDIR/NAME.json --save=OUTDIR/NAME.rec --log-file=OUTDIR/NAME.summary.txt`
#     (NAME.checked.out/.err), each under a timeout. A program that fails prints a FAIL line; the script goes on and
#     exits 1 at the end if any did.
# CORPUS="NAME ..." in the environment runs only those programs (names as in the == lines; traps.MODE included).
# PYTHON: the python3 to use (default python3). About 2-4 minutes on an H100.
# usage: scripts/gpu-corpus.sh BUILD_DIR OUTDIR
set -u
build=$(cd "${1:?usage: gpu-corpus.sh BUILD_DIR OUTDIR}" && pwd) || exit 2
src=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
bin=$build/corpus
mkdir -p "$bin"
status=0
fail() {
  echo "FAIL: $*"
  status=1
}

# (1) Build.
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
samples="simpleStreams asyncAPI simpleCudaGraphs UnifiedMemoryStreams simpleMultiCopy simpleZeroCopy simpleHyperQ
  simpleCallback StreamPriorities"
build_one() {  # build_one NAME: BUILD_DIR/corpus/NAME from corpus/cuda-samples/NAME/NAME.cu (and its .cpp files)
  local name=$1 extra=()
  local dir=$src/corpus/cuda-samples/$name
  local source=$dir/$name.cu
  local sum
  sum=$(cat "$dir"/* "$src"/corpus/cuda-samples/Common/*.h | sha256sum | cut -d' ' -f1)
  if [ -x "$bin/$name" ] && [ "$(cat "$bin/$name.sha256" 2>/dev/null)" = "$sum" ]; then return 0; fi
  for cpp in "$dir"/*.cpp; do [ -e "$cpp" ] && extra+=("$cpp"); done
  [ "$name" = UnifiedMemoryStreams ] && extra+=(-Xcompiler -fopenmp -lcublas -lgomp)
  rm -f "$bin/$name.sha256"
  "$nvcc" -O2 -g -arch=sm_90 -I"$src/corpus/cuda-samples/Common" -o "$bin/$name" "$source" "${extra[@]}" \
    >"$bin/$name.build.log" 2>&1 && echo "$sum" >"$bin/$name.sha256"
}
pids=()
for name in $samples; do
  build_one "$name" &
  pids+=($!)
done
i=0
for name in $samples; do
  wait "${pids[$i]}" || { fail "build $name ($nvcc):"; tail -5 "$bin/$name.build.log"; }
  i=$((i + 1))
done
if [ "${CORPUS_BUILD_ONLY:-0}" = 1 ]; then
  echo "== built in $bin: $(for n in $samples; do [ -x "$bin/$n" ] && printf '%s ' "$n"; done)"
  exit $status
fi

# (2) Run.
out=${2:?usage: gpu-corpus.sh BUILD_DIR OUTDIR}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 2
asynccheck=$build/bin/asynccheck
[ -x "$asynccheck" ] || { echo "$0: $asynccheck not found (build the asynccheck target)" >&2; exit 2; }
echo "# corpus run $(date -u +%FT%TZ) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)" \
  >"$out/ENVIRONMENT"
"$python" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)' >>"$out/ENVIRONMENT" 2>&1
"$python" -c 'import cupy; print("cupy", cupy.__version__)' >>"$out/ENVIRONMENT" 2>&1

run_one() {  # run_one NAME DIR COMMAND...: bare, then under asynccheck, from DIR
  local name=$1 dir=$2 rc t0 t1 sites
  shift 2
  if [ -n "${CORPUS:-}" ] && ! [[ " $CORPUS " == *" $name "* ]]; then return 0; fi
  if ! [ -e "$1" ] && ! command -v "$1" >/dev/null; then
    fail "$name: $1 not found"
    return 0
  fi
  t0=$(date +%s.%N)
  (cd "$dir" && timeout 120 "$@") </dev/null >"$out/$name.bare.out" 2>"$out/$name.bare.err"
  rc=$?
  t1=$(date +%s.%N)
  echo "exit=$rc seconds=$(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")" >"$out/$name.bare.status"
  if [ $rc -ne 0 ]; then
    fail "$name: bare run exit $rc (tail of $out/$name.bare.err:)"
    tail -5 "$out/$name.bare.err"
  fi
  t0=$(date +%s.%N)
  (cd "$dir" && timeout 240 "$asynccheck" --overwrite=1 --format=json --output="$out/$name.json" \
      --save="$out/$name.rec" --log-file="$out/$name.summary.txt" -- "$@") \
    </dev/null >"$out/$name.checked.out" 2>"$out/$name.checked.err"
  rc=$?
  t1=$(date +%s.%N)
  echo "exit=$rc seconds=$(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")" >"$out/$name.checked.status"
  sites=$(grep -c '"rule"' "$out/$name.json" 2>/dev/null)
  if [ $rc -ne 0 ]; then
    fail "$name: exit $rc under asynccheck (tail of $out/$name.checked.err:)"
    tail -5 "$out/$name.checked.err"
  fi
  echo "== $name: bare $(cat "$out/$name.bare.status"), checked $(cat "$out/$name.checked.status"), ${sites:-0} sites"
}

cs=$src/corpus/cuda-samples
run_one simpleStreams "$cs" "$bin/simpleStreams" --sync_method=4 --use_generic_memory
run_one asyncAPI "$cs" "$bin/asyncAPI"
run_one simpleCudaGraphs "$cs" "$bin/simpleCudaGraphs"
run_one UnifiedMemoryStreams "$cs" "$bin/UnifiedMemoryStreams"
run_one simpleMultiCopy "$cs" "$bin/simpleMultiCopy"
run_one simpleZeroCopy "$cs" "$bin/simpleZeroCopy"
run_one simpleHyperQ "$cs" "$bin/simpleHyperQ"
run_one simpleCallback "$cs" "$bin/simpleCallback"
run_one StreamPriorities "$cs" "$bin/StreamPriorities"

py=$src/corpus/python
for script in transformer_train empty_cache_after_gemm cupy_streams inference_timing; do
  run_one "$script" "$py" "$python" "$py/$script.py"
done

# The traps sample (samples/traps/expect.txt), one run per mode: its CLOCK lines are on stdout.
for mode in free_during_kernel first_launch_busy first_launch_idle malloc_idle stream_sync_after_launches \
  many_small_syncs graph_pageable_node managed_sync; do
  run_one "traps.$mode" "$src" "$build/samples/traps" "$mode"
done

echo "== corpus: $(du -sh "$out" | cut -f1) in $out; scripts/corpus-compare.py $out prints the table"
exit $status
