"""What python/tests needs from the build, given by tests/python/run.sh (the ctest python.package): the command, the
library, the stand-in library for the region entry points, the source tree. Run by hand:
ASYNCCHECK_COMMAND=build/bin/asynccheck ASYNCCHECK_LIBRARY=build/lib/libasynccheck.so
ASYNCCHECK_TEST_STUB=build/tests/python/libasynccheck_region_stub.so PYTHONPATH=python python3 -m pytest -p pytester
python/tests
"""

import json
import os
import subprocess
import sys
import tempfile

import pytest

SOURCE = os.environ.get("ASYNCCHECK_TEST_SOURCE") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(SOURCE, "python")


def _need(var):
    value = os.environ.get(var)
    if not value:
        pytest.fail("%s is not set: run through ctest (tests/python/run.sh) or set it by hand (conftest.py)" % var)
    return value


@pytest.fixture
def command():
    return _need("ASYNCCHECK_COMMAND")


@pytest.fixture
def library():
    return _need("ASYNCCHECK_LIBRARY")


@pytest.fixture
def stub():
    return _need("ASYNCCHECK_TEST_STUB")


def run_python(code, env=None, args=(), cwd=None):
    """Runs `code` in a fresh interpreter with the package on its path; (returncode, stdout, stderr)."""
    e = dict(os.environ)
    env = dict(env or {})
    if env.get("PYTHONPATH") is None:  # the package's tree, unless the test gives a path of its own
        base = e.get("PYTHONPATH") if "PYTHONPATH" not in env else None
        env["PYTHONPATH"] = PYTHON_DIR + (os.pathsep + base if base else "")
    e.update(env)
    for k, v in list(e.items()):
        if v is None:
            del e[k]
    # Not from python/ by default: "-c" puts the working directory first on sys.path, and python/asynccheck would
    # shadow the copy a test means to import.
    r = subprocess.run([sys.executable, "-c", code] + list(args), env=e, cwd=cwd or tempfile.gettempdir(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


@pytest.fixture
def analyzed(command, tmp_path):
    """The JSON report of `asynccheck analyze` of a committed recording (tests/fixtures/recordings/NAME.rec)."""

    def make(name):
        out = tmp_path / (name + ".json")
        rec = os.path.join(SOURCE, "tests", "fixtures", "recordings", name + ".rec")
        r = subprocess.run([command, "analyze", rec, "--json=" + str(out), "--log-file=" + str(tmp_path / "summary.txt")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        assert r.returncode == 0, r.stdout
        with open(out) as f:
            return json.load(f)

    return make
