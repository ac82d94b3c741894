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
ASYNCCHECK_RECORDINGS=$dir "$checker" --gtest_filter='SampleExpectations.*'
