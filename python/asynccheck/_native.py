"""The entry points of a libasynccheck.so already loaded in this process, through ctypes.

Never loads the library itself (loading it starts monitoring: interpose/preload.cpp's constructor); that is the
pytest plugin's decision, which then calls use(). Looked up in the global scope (LD_PRELOAD, the asynccheck command,
a library loaded RTLD_GLOBAL) and in the copy CUDA_INJECTION64_PATH names once the CUDA driver has loaded it (with
RTLD_NOLOAD: found only if already there). Nothing here imports or initializes CUDA.
"""

import ctypes
import os
import threading

_lock = threading.Lock()
_lib = None  # the ctypes handle that has the entry points, once found
# Looked for and absent. The library cannot appear later except through CUDA_INJECTION64_PATH (at CUDA's
# initialization) or use(): only then is it looked for again, so that a region in a hot loop stays cheap.
_absent = False


def _has_entry_points(handle):
    try:
        handle.asynccheck_report_now
    except AttributeError:
        return False
    return True


def _look():
    candidates = [lambda: ctypes.CDLL(None)]
    injected = os.environ.get("CUDA_INJECTION64_PATH")
    noload = getattr(os, "RTLD_NOLOAD", 0)
    if injected and noload:
        candidates.append(lambda: ctypes.CDLL(injected, mode=noload | os.RTLD_LOCAL))
    for make in candidates:
        try:
            handle = make()
        except OSError:
            continue
        if _has_entry_points(handle):
            return handle
    return None


def library():
    """The loaded library's ctypes handle, or None when this process has none (yet)."""
    global _lib, _absent
    if _lib is not None:
        return _lib
    if _absent and not os.environ.get("CUDA_INJECTION64_PATH"):
        return None
    with _lock:
        if _lib is None:
            _lib = _look()
            _absent = _lib is None
        return _lib


def use(handle):
    """The library the caller loaded itself (the pytest plugin)."""
    global _lib
    with _lock:
        _lib = handle


def function(name, restype=ctypes.c_int, argtypes=()):
    """A function of the loaded library, or None: without the library, or in a build that lacks it."""
    lib = library()
    if lib is None:
        return None
    try:
        f = getattr(lib, name)
    except AttributeError:
        return None
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


def report_now():
    """asynccheck_report_now(): 0 written, 1 nothing (more) to write, 2 failure; None without the library."""
    f = function("asynccheck_report_now")
    return None if f is None else f()
