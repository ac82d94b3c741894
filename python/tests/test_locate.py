"""Finding the library and the command: the environment, the installation prefix above the package, PATH; and an
error that names every place searched."""

import os
import shutil
import stat

from conftest import PYTHON_DIR, run_python

FIND = "import asynccheck\ntry:\n print(asynccheck.find_library()); print(asynccheck.find_command())\n" \
       "except asynccheck.NotFound as e:\n print('NotFound:', e)\n"


def _executable(path):
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_environment_first(library, command):
    rc, out, err = run_python(FIND)
    assert rc == 0, err
    assert out.splitlines() == [os.path.abspath(library), os.path.abspath(command)]


def test_environment_naming_a_missing_file_is_an_error(tmp_path):
    rc, out, _ = run_python(FIND, env={"ASYNCCHECK_LIBRARY": str(tmp_path / "nope.so")})
    assert out.startswith("NotFound: libasynccheck.so not found: ASYNCCHECK_LIBRARY=")
    assert "nope.so is not a file" in out


def test_nothing_found_names_every_place(tmp_path):
    # A copy of the package where no installation is around it, and a PATH without the command.
    shutil.copytree(os.path.join(PYTHON_DIR, "asynccheck"), str(tmp_path / "site" / "asynccheck"))
    rc, out, _ = run_python(FIND, env={"ASYNCCHECK_LIBRARY": None, "ASYNCCHECK_COMMAND": None,
                                       "PYTHONPATH": str(tmp_path / "site"), "PATH": str(tmp_path)})
    assert out.startswith("NotFound: libasynccheck.so not found; looked in: ASYNCCHECK_LIBRARY (not set); "), out
    assert "the installation prefixes above this package" in out
    assert str(tmp_path) in out
    assert "beside an asynccheck command on PATH (none)" in out


def test_installation_prefix_above_the_package(tmp_path):
    # As cmake --install lays it out with the prefix /usr on Debian: lib/python3/dist-packages, lib/<multiarch>.
    prefix = tmp_path / "usr"
    shutil.copytree(os.path.join(PYTHON_DIR, "asynccheck"), str(prefix / "lib/python3/dist-packages/asynccheck"))
    (prefix / "bin").mkdir()
    _executable(prefix / "bin" / "asynccheck")
    (prefix / "lib/x86_64-linux-gnu").mkdir()
    (prefix / "lib/x86_64-linux-gnu/libasynccheck.so").write_text("")
    rc, out, err = run_python(FIND, env={"ASYNCCHECK_LIBRARY": None, "ASYNCCHECK_COMMAND": None, "PATH": "/nonexistent",
                                         "PYTHONPATH": str(prefix / "lib/python3/dist-packages")})
    assert out.splitlines() == [str(prefix / "lib/x86_64-linux-gnu/libasynccheck.so"), str(prefix / "bin/asynccheck")], \
        out + err


def test_beside_the_command_on_path(tmp_path):
    shutil.copytree(os.path.join(PYTHON_DIR, "asynccheck"), str(tmp_path / "site" / "asynccheck"))
    (tmp_path / "opt/bin").mkdir(parents=True)
    (tmp_path / "opt/lib").mkdir()
    _executable(tmp_path / "opt/bin/asynccheck")
    (tmp_path / "opt/lib/libasynccheck.so").write_text("")
    rc, out, err = run_python(FIND, env={"ASYNCCHECK_LIBRARY": None, "ASYNCCHECK_COMMAND": None,
                                         "PYTHONPATH": str(tmp_path / "site"), "PATH": str(tmp_path / "opt/bin")})
    assert out.splitlines() == [str(tmp_path / "opt/lib/libasynccheck.so"), str(tmp_path / "opt/bin/asynccheck")], \
        out + err
