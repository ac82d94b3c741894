"""asynccheck.region: through the library's entry points when the process has them (a stand-in here), a no-op
without them that imports no CUDA."""

import os

from conftest import run_python

WITH_STUB = """
import ctypes, os, sys, threading
stub = ctypes.CDLL(os.environ['ASYNCCHECK_TEST_STUB'], mode=os.RTLD_GLOBAL)
stub.asynccheck_stub_log.restype = ctypes.c_char_p
import asynccheck
@asynccheck.region('step')
def step(n):
    with asynccheck.region('inner'):
        return n + 1
with asynccheck.region('outer'):
    assert step(1) == 2
try:
    with asynccheck.region('raises'):
        raise KeyError
except KeyError:
    pass
t = threading.Thread(target=step, args=(0,))
t.start(); t.join()
print(asynccheck.report_now())
sys.stdout.write(stub.asynccheck_stub_log().decode())
"""


def test_regions_push_and_pop_in_order(stub):
    rc, out, err = run_python(WITH_STUB, env={"ASYNCCHECK_TEST_STUB": stub})
    assert rc == 0, err
    assert out.splitlines() == ["1", "push outer", "push step", "push inner", "pop", "pop", "pop",
                                "push raises", "pop", "push step", "push inner", "pop", "pop"]


NO_LIBRARY = """
import sys, asynccheck
@asynccheck.region('f')
def f():
    return 5
with asynccheck.region('a') as r:
    assert f() == 5
print(repr(r), asynccheck.report_now())
print(sorted(m for m in ('torch', 'cupy', 'numba') if m in sys.modules))
"""


def test_without_the_library_a_region_does_nothing():
    rc, out, err = run_python(NO_LIBRARY, env={"LD_PRELOAD": None, "CUDA_INJECTION64_PATH": None})
    assert rc == 0, err
    assert err == ""
    assert out.splitlines() == ["asynccheck.region('a') None", "[]"]


def test_the_real_library_preloaded(library):
    # Loaded by LD_PRELOAD: region() returns normally, and report_now answers 1 with monitoring off (no GPU), 0
    # where it is on (the report written).
    rc, out, err = run_python(NO_LIBRARY, env={"LD_PRELOAD": library, "ASYNCCHECK_OPTIONS": "summary=0"})
    assert rc == 0, err
    answer = 0 if os.path.exists("/proc/driver/nvidia/version") else 1
    assert out.splitlines() == ["asynccheck.region('a') %d" % answer, "[]"]
