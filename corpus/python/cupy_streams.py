# CuPy as people write it: array math on a non-blocking stream, a NumPy array brought in, results read back with
# .get(), stream.synchronize(). Times its own stalls with time.perf_counter() and prints
# `CLOCK cupy_streams <label> <us>` lines to stderr.
import sys
import time

import numpy as np

import cupy as cp

host = np.random.default_rng(0).standard_normal((4096, 4096), dtype=np.float32)  # 64 MiB, pageable
clock = {"asarray": 0.0, "get": 0.0, "synchronize": 0.0}
stream = cp.cuda.Stream(non_blocking=True)
with stream:
    x = cp.ones((4096, 4096), dtype=cp.float32)
    stream.synchronize()
    for i in range(5):
        y = x @ x  # queued on the stream
        y = cp.tanh(y / 4096.0) + cp.sin(y)
        t0 = time.perf_counter()
        d = cp.asarray(host)  # pageable host-to-device, behind the matmul
        clock["asarray"] += time.perf_counter() - t0
        z = y @ d
        t0 = time.perf_counter()
        row = z[0].get()  # device-to-host into a new NumPy array: waits for z
        clock["get"] += time.perf_counter() - t0
        w = z.sum(axis=0)
        t0 = time.perf_counter()
        stream.synchronize()
        clock["synchronize"] += time.perf_counter() - t0
        print(f"round {i}: {row[:2]} {float(w[0]):.3e}")

for label, seconds in clock.items():
    print(f"CLOCK cupy_streams {label}_total {seconds * 1e6:.1f}", file=sys.stderr)
print("cupy_streams: done")
