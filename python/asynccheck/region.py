"""asynccheck.region("name"): labels the CUDA calls made inside it, in every thread, with an NVTX range of the
domain "asynccheck" (asynccheck_region_push/pop in the library). Findings name it (the JSON report's nvtx_ranges and
their path), and --capture-range=nvtx:NAME judges only calls made while it is open. A context manager and a
decorator; without the library in the process it does nothing (no error, no CUDA).
"""

import ctypes
import functools
import threading

from . import _native


def _push(name):
    f = _native.function("asynccheck_region_push", argtypes=(ctypes.c_char_p,))
    if f is None:
        return False
    return f(name.encode("utf-8", "replace")) >= 0


def _pop():
    f = _native.function("asynccheck_region_pop")
    if f is not None:
        f()


class region:
    """with asynccheck.region("load"): ... ; @asynccheck.region("step") def step(): ...

    Regions are process-wide, as the library keeps them: one opened on a thread covers the calls of every thread
    until it is closed (autograd's backward threads included). Nested regions form a path, outermost first.
    """

    def __init__(self, name):
        self.name = str(name)
        # Whether each open use pushed (the library may appear between uses: CUDA_INJECTION64_PATH loads it at
        # CUDA's initialization), so that a use pops only what it pushed. Per thread: one object may be entered on
        # several threads at once.
        self._pushed = threading.local()

    def __enter__(self):
        stack = getattr(self._pushed, "stack", None)
        if stack is None:
            stack = self._pushed.stack = []
        stack.append(_push(self.name))
        return self

    def __exit__(self, *exc):
        stack = getattr(self._pushed, "stack", None)
        if stack and stack.pop():
            _pop()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapped

    def __repr__(self):
        return "asynccheck.region(%r)" % self.name
