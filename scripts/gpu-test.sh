#!/usr/bin/env bash
# Runs the gpu-labelled end-to-end tests with a build made elsewhere (see docs/gpu-testing.md). Works without
# ctest's build tree: it calls the test scripts directly.
# usage: scripts/gpu-test.sh BUILD_DIR
set -u
build=$(cd "${1:-build}" && pwd)
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH="$build/lib:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}"
status=0
echo "== gpu.samples"
scripts/gpu-samples-test.sh "$build" "$build/tests/samples/test_samples" || status=1
echo "== gpu.mpi_ranks"
scripts/gpu-mpi-test.sh "$build" || status=1
echo "== gpu.loaded_host"
scripts/gpu-loaded-host-test.sh "$build"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 77 ] && status=1
# The robustness tests of label gpu (tests/robustness): CUDA exit paths, fork/exec, threads, other profilers.
for t in test_cuda_exit_paths test_threads test_other_profilers test_monitoring_stops; do
  echo "== robust.gpu: $t"
  if [ ! -x "$build/tests/robustness/$t" ]; then
    echo "FAIL: $build/tests/robustness/$t is missing (build it, or carry it: scripts/gpu-carry.sh)"
    status=1
    continue
  fi
  "$build/tests/robustness/$t" || status=1
done
echo "== python.gpu"
scripts/gpu-python-test.sh "$build"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 77 ] && status=1
exit $status
