#!/usr/bin/env bash
# Runs each Python example (a) under asynccheck (JSON report, summary, recording) and (b) bare with PyTorch's
# torch.cuda.set_sync_debug_mode("warn"), then checks expect.txt and prints the comparison table (README.md).
# usage: examples/python/run.sh BUILD_DIR OUTDIR [PYTHON]     (PYTHON defaults to python3)
# EXAMPLES="NAME ..." in the environment runs and checks only those examples.
# Exit code: 0 when every expectation held, 1 otherwise, 2 on bad usage.
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR OUTDIR [PYTHON]" >&2
  exit 2
fi
build=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && out=$(cd "$2" && pwd) || exit 2
python=${3:-python3}
here=$(cd "$(dirname "$0")" && pwd)
asynccheck=$build/bin/asynccheck
[ -x "$asynccheck" ] || { echo "$0: $asynccheck not found (build the asynccheck target)" >&2; exit 2; }

# The run blocks of expect.txt: "run NAME SCRIPT [ARGS...]".
while read -r tag name script args; do
  [ "$tag" = run ] || continue
  if [ -n "${EXAMPLES:-}" ] && ! [[ " $EXAMPLES " == *" $name "* ]]; then continue; fi
  echo "== $name: $python $script $args"
  # (a) under asynccheck; the scripts run from this directory so that co_filename is the script's own path.
  (cd "$here" && "$asynccheck" --format=json --output="$out/$name.json" --log-file="$out/$name.txt" \
      --save="$out/$name.rec" --overwrite=1 -- "$python" "$here/$script" $args) >"$out/$name.stdout" 2>&1
  echo "   asynccheck: exit $? ($out/$name.json, $out/$name.txt)"
  # (b) bare, with set_sync_debug_mode("warn") (the scripts read ASYNCCHECK_EXAMPLE_SYNC_DEBUG); every warning
  # is printed, not only the first per line.
  (cd "$here" && ASYNCCHECK_EXAMPLE_SYNC_DEBUG=1 "$python" -W always "$here/$script" $args) \
      >"$out/$name.syncdebug.stdout" 2>"$out/$name.syncdebug.txt"
  echo "   sync debug: exit $? ($out/$name.syncdebug.txt)"
done <"$here/expect.txt"

"$python" "$here/compare.py" "$here/expect.txt" "$out"
