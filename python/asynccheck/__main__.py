"""python3 -m asynccheck [options] script.py args | -m module args | -c code args

Runs this Python interpreter under the asynccheck command, which it becomes (exec): the command's options, help,
reports and exit codes, exactly (asynccheck [options] -- sys.executable script.py args). Also the command's
subcommands and option-only uses: python3 -m asynccheck analyze run.rec, --help, --version, --list-rules.

The options end at the first argument that is not an option nor an option's value (the script), at -m or -c, or
at "--". Which options take a value is read from the command's own --help (options/options.def is the one list),
only when an option is written without "=".
"""

import os
import re
import subprocess
import sys

from ._locate import NotFound, find_command

_SUBCOMMANDS = ("analyze", "merge")


def _say(line):
    sys.stderr.write("asynccheck: %s\n" % line)


def _valued_options(command):
    """The names (with '_' for '-') of the command's options that take a value: every one but Bool."""
    try:
        help_text = subprocess.run([command, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   universal_newlines=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    names = set()
    for m in re.finditer(r"^  (\w+) \((\w+),", help_text, re.M):
        if m.group(2) != "Bool":
            names.add(m.group(1))
    return names


def split(args, valued=None):
    """(options, program) from the launcher's arguments; program is None when none is named. `valued`: a function
    returning the set of value-taking option names (asked only when needed)."""
    options = []
    i = 0
    known = None
    while i < len(args):
        a = args[i]
        if a == "--":
            return options, args[i + 1:]
        if a in ("-m", "-c"):
            return options, args[i:]
        if not a.startswith("-") or a == "-":
            return options, args[i:]
        options.append(a)
        if "=" not in a and a.startswith("--") and i + 1 < len(args):
            if known is None:
                known = valued() if valued else set()
                known = known or set()
            if a[2:].replace("-", "_") in known:
                options.append(args[i + 1])
                i += 1
        i += 1
    return options, None


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        command = find_command()
    except NotFound as e:
        _say("ERROR: %s" % e)
        return 127  # as a shell says of a command it cannot find
    if args and args[0] in _SUBCOMMANDS:
        full = [command] + args
    else:
        options, program = split(args, lambda: _valued_options(command))
        if program is None or not program:
            full = [command] + options  # --help, --version, --list-rules, --read=FILE; or the command's usage error
        else:
            if program[0] in ("-m", "-c") and len(program) < 2:
                _say("ERROR: %s needs an argument (usage: python3 -m asynccheck [options] %s ARG [args...])" %
                     (program[0], program[0]))
                return 2
            full = [command] + options + ["--", sys.executable] + program
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(command, full)
    except OSError as e:
        _say("ERROR: cannot run %s: %s" % (command, e.strerror))
        return 126


if __name__ == "__main__":
    sys.exit(main())
