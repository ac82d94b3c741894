"""Finds the asynccheck library and command this package drives.

In order: the environment (ASYNCCHECK_LIBRARY, ASYNCCHECK_COMMAND), the installation this package is part of (the
prefix it was installed under by `cmake --install` or pip, found by walking up from this file to a directory holding
bin/asynccheck or lib*/libasynccheck.so), then the asynccheck command on PATH and the library beside it, where the
command itself finds it (cli/run.cpp: ../lib, the build tree's lib/, its own directory). Not found: NotFound, whose
message names every place searched.
"""

import glob
import os
import shutil

LIBRARY = "libasynccheck.so"
COMMAND = "asynccheck"

# How far up from this package an installation prefix may be: <prefix>/lib/python3/dist-packages/asynccheck is 4.
_MAX_LEVELS = 5


class NotFound(Exception):
    """The library or the command is nowhere this package looks; str() says where it looked."""


def _prefixes():
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    d = os.path.dirname(here)
    for _ in range(_MAX_LEVELS):
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
        out.append(d)
    return out


def _library_dirs(prefix):
    # lib/, lib64/, and Debian's multiarch lib/x86_64-linux-gnu/ (GNUInstallDirs' libdir for the prefix /usr).
    dirs = [os.path.join(prefix, "lib"), os.path.join(prefix, "lib64")]
    dirs += sorted(glob.glob(os.path.join(prefix, "lib", "*-linux-gnu")))
    return dirs


def _beside_command(command):
    real = os.path.dirname(os.path.realpath(command))
    return [os.path.normpath(os.path.join(real, "..", "lib")), real] + _library_dirs(os.path.dirname(real))[1:]


def find_library():
    """The path of libasynccheck.so, or NotFound."""
    looked = []
    env = os.environ.get("ASYNCCHECK_LIBRARY")
    if env:
        if os.path.isfile(env):
            return os.path.abspath(env)
        raise NotFound("%s not found: ASYNCCHECK_LIBRARY=%s is not a file" % (LIBRARY, env))
    looked.append("ASYNCCHECK_LIBRARY (not set)")
    for prefix in _prefixes():
        for d in _library_dirs(prefix):
            p = os.path.join(d, LIBRARY)
            if os.path.isfile(p):
                return p
    looked.append("the installation prefixes above this package (lib/, lib64/, lib/*-linux-gnu/ of %s)" %
                  ", ".join(_prefixes()))
    try:
        command = find_command()
    except NotFound:
        looked.append("beside an asynccheck command on PATH (none)")
    else:
        dirs = []
        for d in _beside_command(command):
            if d in dirs:
                continue
            dirs.append(d)
            p = os.path.join(d, LIBRARY)
            if os.path.isfile(p):
                return p
        looked.append("beside the command %s (%s)" % (command, ", ".join(dirs)))
    raise NotFound("%s not found; looked in: %s" % (LIBRARY, "; ".join(looked)))


def find_command():
    """The path of the asynccheck command, or NotFound."""
    env = os.environ.get("ASYNCCHECK_COMMAND")
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return os.path.abspath(env)
        raise NotFound("the asynccheck command not found: ASYNCCHECK_COMMAND=%s is not an executable file" % env)
    for prefix in _prefixes():
        p = os.path.join(prefix, "bin", COMMAND)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    on_path = shutil.which(COMMAND)
    if on_path:
        return os.path.abspath(on_path)
    raise NotFound("the asynccheck command not found; looked in: ASYNCCHECK_COMMAND (not set); %s; PATH (%s)" %
                   (", ".join(os.path.join(p, "bin") for p in _prefixes()), os.environ.get("PATH", "")))
