# .to("cpu", non_blocking=True): PyTorch copies into pinned memory it allocates (cudaHostAlloc, the first time), and
# the copy itself is asynchronous: the result must not be read before a synchronization. Without non_blocking the
# copy goes to pageable memory and waits for the GPU.
import os

import torch

if os.environ.get("ASYNCCHECK_EXAMPLE_SYNC_DEBUG") == "1":
    torch.cuda.set_sync_debug_mode("warn")

a = torch.randn(4096, 4096, device="cuda")
b = a @ a
host = b.to("cpu", non_blocking=True)  # pinned destination: the copy does not wait
torch.cuda.synchronize()  # required before reading `host`
c = a @ b
blocking = c.to("cpu")  # pageable destination: waits for the matmul and the copy
print(f"nonblocking_d2h: {host[0, 0].item():.3e} {blocking[0, 0].item():.3e}")
