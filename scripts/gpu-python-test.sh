#!/usr/bin/env bash
# pytest --asynccheck on the GPU machine (docs/python.md): python/tests/gpu/stall_cases.py has one stalling test and
# one clean one; the session must attribute exactly one finding (copy-async-pageable-h2d) to test_stall, at the
# line marked STALL, none to test_clean; with --asynccheck-fail-on=error exactly test_stall fails (at teardown),
# and the same holds with pytest-xdist (-n 2). SKIPPED (code 77) without a GPU or a Python with torch and pytest.
# usage: scripts/gpu-python-test.sh BUILD_DIR   (PYTHON=... to choose the interpreter)
set -u
build=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -e /proc/driver/nvidia/version ]; then
  echo "SKIPPED: no NVIDIA driver here (/proc/driver/nvidia/version)"
  exit 77
fi
python=""
for p in ${PYTHON:-} python3 /opt/torch/.venv/bin/python /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c "import torch, pytest" >/dev/null 2>&1; then
    python=$p
    break
  fi
done
if [ -z "$python" ]; then
  echo "SKIPPED: no Python with both torch and pytest (PYTHON=..., or pip install pytest pytest-xdist into torch's)"
  exit 77
fi
export ASYNCCHECK_LIBRARY=$build/lib/libasynccheck.so ASYNCCHECK_COMMAND=$build/bin/asynccheck
export PYTHONPATH="$src/python${PYTHONPATH:+:$PYTHONPATH}" PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
line=$(grep -n "# STALL" "$src/python/tests/gpu/stall_cases.py" | cut -d: -f1)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
modes=(single)
if "$python" -c "import xdist" >/dev/null 2>&1; then
  modes+=(xdist)
else
  echo "FAIL: pytest-xdist is not installed for $python: the -n 2 case cannot run"
  status=1
fi
cd "$src/python/tests/gpu" || exit 1
for mode in "${modes[@]}"; do
  extra=()
  [ "$mode" = xdist ] && extra=(-p xdist.plugin -n 2)
  for fail_on in none error; do
    out=$scratch/$mode-$fail_on
    args=(-p asynccheck.pytest_plugin -p no:cacheprovider "${extra[@]}" stall_cases.py --asynccheck
          --asynccheck-output="$out" --asynccheck-options=cost_threshold=1s)
    [ "$fail_on" = error ] && args+=(--asynccheck-fail-on=error)
    echo "== $mode, fail-on $fail_on: $python -m pytest ${args[*]}"
    "$python" -m pytest "${args[@]}" >"$scratch/log" 2>&1
    rc=$?
    cat "$scratch/log"
    "$python" - "$out" "$line" "$fail_on" "$rc" "$scratch/log" <<'PY' || status=1
import glob, sys
from asynccheck import findings
out, line, fail_on, rc, log = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), open(sys.argv[5]).read()
problems = []
reports = [(p, findings.load(p)) for p in sorted(glob.glob(out + "/asynccheck-*.json"))]
if not reports:
    problems.append("no report in " + out)
for p, r in reports:
    if findings.monitoring_off(r):
        problems.append("%s: monitoring %s" % (p, findings.monitoring_off(r)))
per_test, outside = findings.attribute(reports)
# Node ids are relative to pytest's rootdir (python/, where pyproject.toml is): compare the file's base name.
tests = {t.rsplit("/", 1)[-1]: fs for t, fs in per_test.items()}
if list(tests) != ["stall_cases.py::test_stall"]:
    problems.append("findings in tests %s, not only stall_cases.py::test_stall" % sorted(per_test))
stall = tests.get("stall_cases.py::test_stall", [])
if len(stall) != 1:
    problems.append("%d findings in test_stall, not 1: %s" % (len(stall), [findings.describe(f) for f in stall]))
for f in stall[:1]:
    loc = f.site.get("location", {})
    if f.site.get("rule") != "copy-async-pageable-h2d":
        problems.append("test_stall's finding is %s, not copy-async-pageable-h2d" % f.site.get("rule"))
    if not str(loc.get("file", "")).endswith("stall_cases.py") or loc.get("line") != line:
        problems.append("test_stall's finding is at %s:%s, not stall_cases.py:%d" % (loc.get("file"), loc.get("line"), line))
for f in outside:
    print("outside any test (not asserted): " + findings.describe(f))
expected_rc = 1 if fail_on == "error" else 0
if rc != expected_rc:
    problems.append("pytest exited %d, not %d" % (rc, expected_rc))
if fail_on == "error":
    if "1 error" not in log or "2 passed" not in log or "ERROR at teardown of test_stall" not in log:
        problems.append("not exactly test_stall failed at teardown (2 passed, 1 error)")
elif "2 passed" not in log or "error" in log.split("\n")[-2]:
    problems.append("the session did not pass both tests")
print("\n".join("FAIL: " + p for p in problems) if problems else "PASS")
sys.exit(1 if problems else 0)
PY
  done
done
exit $status
