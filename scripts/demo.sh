#!/usr/bin/env bash
# The main job: run the documents' samples under asynccheck and print its reports; seed 000's pageable run also
# writes the JSON, SARIF and Chrome trace files (into BUILD_DIR/demo). Without a GPU, show the reports of runs
# recorded on the GPU machine instead, clearly labelled as such.
# usage: scripts/demo.sh [BUILD_DIR]
set -u
build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
out=$build/demo
mkdir -p "$out"
files="--format=json,sarif,trace,html --output=$out/seed000_answer.pageable --overwrite=1"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "== seed 000's answer program, pageable memory (256 MiB): both cudaMemcpyAsync calls block the host"
  "$build/bin/asynccheck" $files -- "$build/samples/seed000_answer" pageable 268435456
  echo; echo "== the same with pinned memory: nothing to report about the copies"
  "$build/bin/asynccheck" -- "$build/samples/seed000_answer" pinned 268435456
  echo; echo "== seed 001's k_1/k_2/k_3: the legacy default stream serializes the blocking stream"
  "$build/bin/asynccheck" -- "$build/samples/seed001_legacy_stream"
else
  rec=$src/tests/fixtures/recordings
  echo "No GPU on this machine (nvidia-smi found none): showing reports of runs RECORDED on the GPU machine"
  echo "(tests/fixtures/recordings, made with scripts/record-samples.sh). On a GPU machine this script runs them live."
  for id in seed000_answer.pageable seed000_answer.pinned seed001_legacy_stream.legacy; do
    echo; echo "== RECORDING $id.rec"
    extra=""
    [ "$id" = seed000_answer.pageable ] && extra=$files
    "$build/bin/asynccheck" analyze "$rec/$id.rec" $extra
  done
fi
echo
echo "Report files of seed 000's pageable run: $out/seed000_answer.pageable.{json,sarif,trace.json,html}"
echo "(open the .html in a browser, no network needed; the .trace.json in https://ui.perfetto.dev or chrome://tracing)"
