#!/usr/bin/env bash
# GPU end-to-end test: records every sample's runs under asynccheck and checks samples/*/expect.txt on them.
# Skipped (exit 77) on a machine without a usable GPU, saying why.
# usage: scripts/gpu-samples-test.sh BUILD_DIR TEST_SAMPLES_BINARY
set -u
build=${1:?build dir}
checker=${2:?test_samples binary}
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no NVIDIA GPU on this machine (nvidia-smi missing or found no device); run this test on the GPU machine (docs/gpu-testing.md)"
  exit 77
fi
dir=${ASYNCCHECK_KEEP_RECORDINGS:-$(mktemp -d)}
"$(dirname "$0")/record-samples.sh" "$build" "$dir" || exit 1
ASYNCCHECK_RECORDINGS=$dir "$checker" --gtest_filter='SampleExpectations.*' || exit 1
# NVTX ranges are off, said in one line, when another tool already owns NVTX_INJECTION64_PATH (here one that does
# not exist: NVTX then drops its calls); the program runs as without us and its findings name no range.
other=/nonexistent/libanother_nvtx_tool.so
err=$(NVTX_INJECTION64_PATH=$other "$build/bin/asynccheck" -- "$build/samples/nvtx_ranges" 2>&1 >/dev/null)
rc=$?
line="asynccheck: NVTX ranges are off: NVTX_INJECTION64_PATH is already set (to $other): another tool receives the program's NVTX calls"
if [ $rc -ne 0 ] || ! grep -qxF "$line" <<<"$err" || grep -q 'in NVTX range' <<<"$err" || ! grep -q 'copy-async-pageable-h2d' <<<"$err"; then
  echo "FAIL: nvtx_ranges with NVTX_INJECTION64_PATH=$other (exit $rc): expected the line '$line', findings without ranges:"
  echo "$err" | head -30
  exit 1
fi
echo "== nvtx_ranges under another NVTX tool: ranges off, said once"
