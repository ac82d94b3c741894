"""The Python frame walker (interpose/python_frames.cpp) inside a real interpreter, through ctypes.

Usage: python3 test_python_frames.py PATH/TO/libasynccheck_python_probe.so

ctypes.PyDLL calls a C function with the GIL held (like a CUDA call made by an extension that keeps it);
ctypes.CDLL releases the GIL around the call (like PyTorch around every ATen call): the walker must then return
no frames. Exits non-zero, naming what differed, on any failure.
"""

import ctypes
import gc
import os
import sys
import threading

HERE = os.path.abspath(__file__)
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL: " + what)


def marker_line(tag):
    """The line of this file that ends with the comment '# <tag>' (so edits above do not break the test)."""
    with open(HERE) as f:
        for number, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + tag) and "marker_line" not in text:
                return number
    raise AssertionError("no marker " + tag)


LIB = sys.argv[1]
with_gil = ctypes.PyDLL(LIB)
without_gil = ctypes.CDLL(LIB)
for lib in (with_gil, without_gil):
    lib.asynccheck_test_python_frames.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.asynccheck_test_python_frames_with_error.argtypes = [ctypes.c_char_p, ctypes.c_int]


def walk(lib, name="asynccheck_test_python_frames"):
    buf = ctypes.create_string_buffer(1 << 16)
    n = getattr(lib, name)(buf, len(buf))  # WALK
    if n < 0:
        return None
    frames = []
    for line in buf.value.decode().splitlines():
        file, function, number = line.split("\t")
        frames.append((file, function, int(number)))
    check(len(frames) == n, "returned count %d, wrote %d frames" % (n, len(frames)))
    return frames


def inner(lib):
    return walk(lib)  # INNER


def outer(lib):
    return inner(lib)  # OUTER


# 1. With the GIL: the frames of this thread, innermost first, with file, function and line.
frames = outer(with_gil)  # MODULE
check(frames is not None, "libpython's functions were not found with dlsym(RTLD_DEFAULT) in %s" % sys.executable)
if frames is not None:
    expected = [
        (HERE, "walk", marker_line("WALK")),
        (HERE, "inner", marker_line("INNER")),
        (HERE, "outer", marker_line("OUTER")),
        (HERE, "<module>", marker_line("MODULE")),
    ]
    check(frames == expected, "frames with the GIL:\n  got      %r\n  expected %r" % (frames, expected))

    # 2. Without the GIL (ctypes.CDLL releases it): nothing is read.
    check(outer(without_gil) == [], "frames without the GIL: expected none, got %r" % (outer(without_gil),))

    # 3. At most 32 frames, the innermost ones.
    def deep(k):
        return deep(k - 1) if k > 0 else walk(with_gil)  # DEEP

    many = deep(50)
    check(len(many) == 32, "deep recursion: expected 32 frames, got %d" % len(many))
    check(many[0][1] == "walk" and all(f == (HERE, "deep", marker_line("DEEP")) for f in many[1:]),
          "deep recursion: expected walk then deep frames, got %r" % many[:3])

    # 4. Another thread holding the GIL sees its own frames, not the main thread's.
    result = {}

    def in_thread():
        result["frames"] = walk(with_gil)  # THREAD

    t = threading.Thread(target=in_thread)
    t.start()
    t.join()
    got = result.get("frames") or []
    check(len(got) >= 2 and got[1] == (HERE, "in_thread", marker_line("THREAD")),
          "thread: expected walk then in_thread, got %r" % got[:2])
    check(all(f[1] != "<module>" or not f[0] == HERE for f in got), "thread: saw the main thread's frames %r" % got)

    # 5. The garbage collector is off only during the walk: enabled stays enabled, disabled stays disabled.
    gc.enable()
    walk(with_gil)
    check(gc.isenabled(), "the walk left the garbage collector disabled")
    gc.disable()
    walk(with_gil)
    check(not gc.isenabled(), "the walk enabled a disabled garbage collector")
    gc.enable()

    # 6. A Python exception pending when the walk starts is still pending after it (PyDLL raises it on return).
    try:
        walk(with_gil, "asynccheck_test_python_frames_with_error")
        check(False, "the pending exception was lost by the walk")
    except RuntimeError as e:
        check(str(e) == "pending before the walk", "unexpected exception %r" % e)

if FAILURES:
    sys.exit(1)
print("ok: python frame walker on Python %s (%s)" % (sys.version.split()[0], sys.executable))
