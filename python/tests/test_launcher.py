"""python3 -m asynccheck: the command's options, help and exit codes, since it becomes the command."""

import subprocess
import sys

import pytest

from asynccheck.__main__ import split
from conftest import run_python

LAUNCH = "import runpy, sys; sys.argv[0] = 'asynccheck'; runpy.run_module('asynccheck', run_name='__main__')"


def launch(args, env=None, cwd=None):
    return run_python(LAUNCH, env=env, args=args, cwd=cwd)


def test_split():
    valued = lambda: {"threshold", "json"}  # noqa: E731
    assert split(["x.py", "a"]) == ([], ["x.py", "a"])
    assert split(["--stats", "x.py", "--stats"], valued) == (["--stats"], ["x.py", "--stats"])
    assert split(["--threshold", "1ms", "x.py"], valued) == (["--threshold", "1ms"], ["x.py"])
    assert split(["--threshold=1ms", "x.py"], valued) == (["--threshold=1ms"], ["x.py"])
    assert split(["--json", "r.json", "-m", "mod", "-v"], valued) == (["--json", "r.json"], ["-m", "mod", "-v"])
    assert split(["-c", "print(1)", "a"]) == ([], ["-c", "print(1)", "a"])
    assert split(["--stats", "--", "-weird.py"]) == (["--stats"], ["-weird.py"])
    assert split(["--help"]) == (["--help"], None)


def test_the_scripts_exit_code_and_arguments(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import sys\nprint('args', sys.argv[1:])\nsys.exit(7)\n")
    rc, out, err = launch([str(script), "a", "--b"])
    assert rc == 7, err
    assert "args ['a', '--b']" in out


def test_a_value_option_written_apart(tmp_path):
    # "--threshold 1ms": the command's --help says threshold takes a value, so 1ms is not the script.
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    rc, out, err = launch(["--threshold", "1ms", str(script)])
    assert rc == 0, err
    assert "ran" in out


def test_module_and_code(tmp_path):
    (tmp_path / "mymod.py").write_text("import sys\nprint('module', sys.argv[1:])\nsys.exit(3)\n")
    rc, out, err = launch(["-m", "mymod", "x"], cwd=str(tmp_path), env={"PYTHONPATH": None})
    # PYTHONPATH dropped above would drop the package too: run_python puts it back first; the module is in cwd.
    assert rc == 3, err
    assert "module ['x']" in out
    rc, out, err = launch(["-c", "import sys; sys.exit(9)"])
    assert rc == 9, err


def test_bad_option_is_the_commands_exit_code_2(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    rc, out, err = launch(["--no-such-option=1", str(script)])
    assert rc == 2
    assert "ran" not in out
    assert "asynccheck: ERROR:" in err and "no-such-option" in err.replace("_", "-")


def test_help_is_the_commands(command):
    rc, out, err = launch(["--help"])
    own = subprocess.run([command, "--help"], stdout=subprocess.PIPE, universal_newlines=True)
    assert rc == own.returncode == 0
    assert out == own.stdout


def test_subcommand_passes_through(command):
    rc, out, err = launch(["merge", "--help"])
    assert rc == 0, err
    assert "asynccheck merge" in out + err


def test_command_not_found_is_127():
    rc, out, err = launch(["x.py"], env={"ASYNCCHECK_COMMAND": "/nonexistent/asynccheck"})
    assert rc == 127
    assert err.startswith("asynccheck: ERROR: the asynccheck command not found: ASYNCCHECK_COMMAND=")


def test_missing_script_is_pythons_own_code(tmp_path):
    rc, _, err = launch([str(tmp_path / "missing.py")])
    bare = subprocess.run([sys.executable, str(tmp_path / "missing.py")], stderr=subprocess.PIPE)
    assert rc == bare.returncode == 2
