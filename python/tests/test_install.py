"""The package installs offline with setuptools alone (pip --no-build-isolation --no-index), registers the pytest
plugin as an entry point, and has CMake's project version."""

import os
import subprocess
import sys

import pytest

import asynccheck
from conftest import PYTHON_DIR, run_python


def test_version_is_cmakes():
    expected = os.environ.get("ASYNCCHECK_TEST_VERSION")
    if not expected:
        pytest.skip("ASYNCCHECK_TEST_VERSION not set (ctest sets it)")
    assert asynccheck.__version__ == expected
    with open(os.path.join(PYTHON_DIR, "pyproject.toml")) as f:
        assert 'version = "%s"' % expected in f.read()


def test_pip_install_offline(tmp_path):
    if subprocess.run([sys.executable, "-m", "pip", "--version"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0:
        pytest.skip("pip is not installed for %s (apt-get install python3-pip)" % sys.executable)
    target = tmp_path / "site"
    # A copy of the source: building writes build/ and *.egg-info beside pyproject.toml.
    import shutil
    src = tmp_path / "src"
    shutil.copytree(PYTHON_DIR, str(src), ignore=shutil.ignore_patterns("tests", "__pycache__"))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
                        "--target", str(target), str(src)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    assert r.returncode == 0, r.stdout
    code = ("import asynccheck, importlib.metadata as m\n"
            "print(asynccheck.__file__)\n"
            "print([e.value for e in m.distribution('asynccheck').entry_points if e.group == 'pytest11'])\n")
    rc, out, err = run_python(code, env={"PYTHONPATH": str(target)}, cwd=str(tmp_path))  # not the source tree
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(str(target))
    assert lines[1] == "['asynccheck.pytest_plugin']"
