# CuPy's usual stalls: building a GPU array from a NumPy array (pageable host memory), reading a scalar back
# (float() of a 0-d array), and cupy.asnumpy() of a result, each behind GPU work still running. CuPy has no
# sync-debug mode of its own: only asynccheck reports these (ASYNCCHECK_EXAMPLE_SYNC_DEBUG is ignored here).
import numpy as np

import cupy as cp

host = np.ones(32 * 1024 * 1024, dtype=np.float32)  # 128 MiB of ordinary (pageable) memory
a = cp.ones((4096, 4096), dtype=cp.float32)
cp.cuda.Device().synchronize()  # set-up done: the context, the pool, the first kernels

b = a @ a  # queued, runs for a while
d = cp.asarray(host)  # host-to-device from pageable memory, behind the matmul
s = float(d.sum())  # a scalar read back: waits for the sum (and everything before it on the stream)
c = a @ a
h = cp.asnumpy(c)  # device-to-host into a new pageable NumPy array: waits for the matmul
print(f"cupy_stalls: sum {s:.3e}, {h.shape[0]}x{h.shape[1]} back on the host")
