#!/usr/bin/env bash
# Runs every sample's `run` blocks (samples/*/expect.txt) bare and under asynccheck, on a machine with a GPU.
# For each block it keeps: the bare and the checked stdout/stderr/exit code, the recording (.rec), the JSON
# report and the summary. usage: scripts/record-samples.sh BUILD_DIR OUT_DIR
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
    "$build/bin/asynccheck" --save="$out/$id.rec" --json="$out/$id.json" -- "$build/samples/$binary" $args \
      </dev/null >"$out/$id.checked.out" 2>"$out/$id.checked.err"
    echo "exit=$?" >>"$out/$id.checked.out"
    # The program must behave as without us: same stdout and exit code, numbers aside (it prints timings).
    if ! diff <(sed 's/[0-9][0-9.e+-]*/N/g' "$out/$id.bare.out") <(sed 's/[0-9][0-9.e+-]*/N/g' "$out/$id.checked.out") >/dev/null; then
      echo "FAIL: $id: stdout or exit code differs under asynccheck:"
      diff "$out/$id.bare.out" "$out/$id.checked.out" | head -10
      status=1
    fi
    echo "== $id: $(tail -1 "$out/$id.checked.out"), $(grep -c '"rule"' "$out/$id.json" 2>/dev/null || echo 0) sites"
  done <"$expect"
done
exit $status
