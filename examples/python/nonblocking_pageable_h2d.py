# non_blocking=True from a pageable tensor: the copy is staged through a driver buffer, and the call returns only
# once the whole 256 MiB have been staged; from pinned memory the same call returns at once.
import os

import torch

if os.environ.get("ASYNCCHECK_EXAMPLE_SYNC_DEBUG") == "1":
    torch.cuda.set_sync_debug_mode("warn")

x = torch.randn(64 * 1024 * 1024)  # 256 MiB of ordinary (pageable) memory
warm = torch.ones(1, device="cuda")  # create the context first
y = x.to("cuda", non_blocking=True)  # pageable: blocks while staging
pinned = x.pin_memory()
z = pinned.to("cuda", non_blocking=True)  # pinned: asynchronous
torch.cuda.synchronize()
print(f"nonblocking_pageable_h2d: equal {bool(torch.equal(y, z))}")
