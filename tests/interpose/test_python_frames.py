"""The Python frame walker (interpose/python_frames.cpp) inside a real interpreter, through ctypes.

Usage: python3 test_python_frames.py PATH/TO/libasynccheck_python_probe.so

ctypes.PyDLL calls a C function with the GIL held (like a CUDA call made by an extension that keeps it): the
walker reads the frames through CPython's API. ctypes.CDLL releases the GIL around the call (like PyTorch around
every ATen call): the walker reads them from the interpreter's memory with the layout of this version
(interpose/python_layouts.h), and must return exactly what the API returns; on a version without a layout (3.10,
or a free-threaded build) it must return nothing. Exits non-zero, naming what differed, on any failure.
"""

import ctypes
import gc
import os
import sys
import sysconfig
import threading

HERE = os.path.abspath(__file__)
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL: " + what)


def marker_line(tag):
    """The line of this file that ends with the comment '# <tag>' (so edits above do not break the test)."""
    with open(HERE, encoding="utf-8") as f:
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
    lib.asynccheck_test_pretend_python_version.argtypes = [ctypes.c_ulong]
    lib.asynccheck_test_python_layout.argtypes = [ctypes.c_ulong, ctypes.c_char_p, ctypes.c_int]

# Whether this interpreter has a layout for the GIL-free walk: a table for its minor version, and the usual object
# header (a free-threaded build has another one, which the walker refuses; so has a Py_TRACE_REFS build of 3.11 or
# 3.12, on which the walker's type check stops at the first frame).
HAS_LAYOUT = (with_gil.asynccheck_test_python_layout(sys.hexversion, None, 0) >= 0 and
              not sysconfig.get_config_var("Py_GIL_DISABLED") and not sysconfig.get_config_var("Py_TRACE_REFS"))


def walk(lib, name="asynccheck_test_python_frames"):
    buf = ctypes.create_string_buffer(1 << 16)
    n = getattr(lib, name)(buf, len(buf))  # WALK
    if n < 0:
        return None
    frames = []
    for line in buf.value.decode("utf-8").splitlines():
        file, function, number = line.split("\t")
        frames.append((file, function, int(number)))
    check(len(frames) == n, "returned count %d, wrote %d frames" % (n, len(frames)))
    return frames


def without(expected):
    """What the GIL-free walk must return where the API walk returns `expected`."""
    return expected if HAS_LAYOUT else []


def like_expected(got):
    """walk, inner, outer, then <module> at whatever line of this file made the call."""
    return (got is not None and len(got) == 4 and got[:3] == expected[:3] and got[3][:2] == (HERE, "<module>"))


def both(call):
    """call(lib) with the GIL held and with it released, from one line (so the caller's frames are the same)."""
    return [call(lib) for lib in (with_gil, without_gil)]


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

    # 2. Without the GIL (ctypes.CDLL releases it): the same frames, read from memory (none without a layout).
    got = outer(without_gil)  # MODULE2
    want = without(expected[:3] + [(HERE, "<module>", marker_line("MODULE2"))])
    check(got == want, "frames without the GIL:\n  got      %r\n  expected %r" % (got, want))

    # 3. At most 32 frames, the innermost ones, both ways.
    def deep(lib, k):
        return deep(lib, k - 1) if k > 0 else walk(lib)  # DEEP

    many = deep(with_gil, 50)
    check(len(many) == 32, "deep recursion: expected 32 frames, got %d" % len(many))
    check(many[0][1] == "walk" and all(f == (HERE, "deep", marker_line("DEEP")) for f in many[1:]),
          "deep recursion: expected walk then deep frames, got %r" % many[:3])
    got = deep(without_gil, 50)
    check(got == without(many), "deep recursion without the GIL: got %r" % got[:3])

    # 4. Another thread sees its own frames, not the main thread's, with or without the GIL.
    for lib in (with_gil, without_gil):
        result = {}

        def in_thread():
            result["frames"] = walk(lib)  # THREAD

        t = threading.Thread(target=in_thread)
        t.start()
        t.join()
        got = result.get("frames") or []
        if lib is without_gil and not HAS_LAYOUT:
            check(got == [], "thread without the GIL: expected none, got %r" % got)
            continue
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

    # 7. A method, a nested function, a generator, a coroutine, a comprehension: both walks agree, line for line.
    class Model:
        def step(self, lib):
            def nested():
                return walk(lib)  # NESTED

            return nested()  # METHOD

    def generator(lib):
        yield walk(lib)  # GENERATOR

    async def coroutine(lib):
        return walk(lib)  # COROUTINE

    def run_coroutine(lib):
        c = coroutine(lib)
        try:
            c.send(None)  # DRIVER
        except StopIteration as stop:
            return stop.value

    def comprehension(lib):
        return [walk(lib) for _ in range(1)][0]  # COMPREHENSION

    shapes = {
        "method": (lambda lib: Model().step(lib),
                   [("nested", "NESTED"), ("step", "METHOD")]),
        "generator": (lambda lib: next(generator(lib)), [("generator", "GENERATOR")]),
        "coroutine": (run_coroutine, [("coroutine", "COROUTINE"), ("run_coroutine", "DRIVER")]),
        "comprehension": (comprehension, []),
    }
    for name, (call, innermost) in shapes.items():
        api, got = both(call)
        want = [(HERE, "walk", marker_line("WALK"))] + [(HERE, f, marker_line(m)) for f, m in innermost]
        check(api[:len(want)] == want, "%s with the GIL:\n  got      %r\n  expected %r" % (name, api, want))
        check(got == without(api), "%s without the GIL:\n  got      %r\n  expected %r" % (name, got, without(api)))

    # 8. Names that are not ASCII: 1-byte (Latin-1), 2-byte and 4-byte str kinds in function names and file
    # names come out as UTF-8, both ways; a file name with a lone surrogate (os.fsdecode of undecodable bytes)
    # is not UTF-8 at all and comes out empty, both ways.
    source = "\n".join([
        "def 𠀋(lib):",              # 1
        "    return walk(lib)",      # 2
        "def 函数(lib):",             # 3
        "    return 𠀋(lib)",         # 4
        "def función(lib):",         # 5
        "    return 函数(lib)",        # 6
    ]) + "\n"
    for file in ("/tmp/módulo/函数/𠀋.py", "/tmp/módulo.py", "/tmp/\udcff.py"):
        namespace = {"walk": walk}
        exec(compile(source, file, "exec"), namespace)
        api, got = both(namespace["función"])
        shown = ascii(file)  # printable whatever the terminal's encoding, the surrogate included
        want_file = "" if "\udcff" in file else file
        want = [(want_file, "𠀋", 2), (want_file, "函数", 4), (want_file, "función", 6)]
        check(api[1:4] == want, "names in %s with the GIL:\n  got      %r\n  expected %r" % (shown, api[1:4], want))
        check(got == without(api), "names in %s without the GIL:\n  got      %r\n  expected %r" %
              (shown, got, without(api)))

    # 9. A thread the interpreter never saw (no thread state): nothing, and no crash, whoever holds the GIL.
    for lib in (with_gil, without_gil):
        count = lib.asynccheck_test_python_frames_from_native_thread()
        check(count == 0, "a thread without a Python thread state got %d frames" % count)

    # 10. A version without a layout reads nothing without the GIL (the API walk, with it, is not affected); nor
    # does a layout of another version than the running one.
    if HAS_LAYOUT:
        other = 0x030C00F0 if sys.version_info[:2] != (3, 12) else 0x030B00F0
        for version in (0x030A0DF0, 0x030E00F0, 0x040000F0, other):
            without_gil.asynccheck_test_pretend_python_version(version)
            got = outer(without_gil)
            check(got == [], "pretending %x: expected no frames without the GIL, got %r" % (version, got))
            check(like_expected(outer(with_gil)), "pretending %x: the walk with the GIL changed" % version)
        without_gil.asynccheck_test_pretend_python_version(sys.hexversion)
        check(like_expected(outer(without_gil)), "pretending the real version: frames without the GIL differ")
        without_gil.asynccheck_test_pretend_python_version(0)
        check(like_expected(outer(without_gil)), "after the pretend: frames without the GIL differ")

if FAILURES:
    sys.exit(1)
print("ok: python frame walker on Python %s (%s), without the GIL: %s" %
      (sys.version.split()[0], sys.executable, "frames read" if HAS_LAYOUT else "no layout, no frames"))
