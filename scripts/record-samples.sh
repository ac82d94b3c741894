#!/usr/bin/env bash
# Runs every sample's `run` blocks (samples/*/expect.txt) bare and under asynccheck, on a machine with a GPU.
# For each block it keeps: the bare and the checked stdout/stderr/exit code, the recording (.rec), the JSON,
# SARIF and trace reports and the summary. usage: scripts/record-samples.sh BUILD_DIR OUT_DIR
set -u
build=$(cd "${1:?build dir}" && pwd)
out=${2:?output dir}
mkdir -p "$out"
src=$(cd "$(dirname "$0")/.." && pwd)
status=0
for expect in "$src"/samples/*/expect.txt; do
  sample=$(basename "$(dirname "$expect")")
  while read -r tag name binary args; do
    [ "$tag" = run ] || continue
    id="$sample.$name"
    # shellcheck disable=SC2086
    "$build/samples/$binary" $args </dev/null >"$out/$id.bare.out" 2>"$out/$id.bare.err"
    echo "exit=$?" >>"$out/$id.bare.out"
    # shellcheck disable=SC2086
    "$build/bin/asynccheck" --overwrite=1 --save="$out/$id.rec" --format=json,sarif,trace --output="$out/$id" \
      --log-file="$out/$id.summary.txt" -- "$build/samples/$binary" $args \
      </dev/null >"$out/$id.checked.out" 2>"$out/$id.checked.err"
    echo "exit=$?" >>"$out/$id.checked.out"
    # The program must behave as without us: same stdout, stderr (but for our own "asynccheck:" lines) and exit
    # code, numbers aside (it prints timings).
    numbers='s/[0-9][0-9.e+-]*/N/g'
    if ! diff <(sed "$numbers" "$out/$id.bare.out") <(sed "$numbers" "$out/$id.checked.out") >/dev/null ||
       ! diff <(sed "$numbers" "$out/$id.bare.err") <(grep -v '^asynccheck: ' "$out/$id.checked.err" | sed "$numbers") >/dev/null; then
      echo "FAIL: $id: stdout, stderr or exit code differs under asynccheck:"
      diff "$out/$id.bare.out" "$out/$id.checked.out" | head -10
      diff "$out/$id.bare.err" "$out/$id.checked.err" | head -10
      status=1
    fi
    echo "== $id: $(tail -1 "$out/$id.checked.out"), $(grep -c '"rule"' "$out/$id.json" 2>/dev/null || echo 0) sites"
  done <"$expect"
done
exit $status
