# .item() inside NVTX ranges (torch.cuda.nvtx.range_push/range_pop): the stream synchronization it makes waits for
# the matmuls queued before it. PyTorch releases the GIL around it (the site is native on Python versions without a
# GIL-free layout: _local_scalar_dense_cuda), and asynccheck names the innermost NVTX range it happened in: "loss".
import os

import torch

if os.environ.get("ASYNCCHECK_EXAMPLE_SYNC_DEBUG") == "1":
    torch.cuda.set_sync_debug_mode("warn")

a = torch.randn(4096, 4096, device="cuda")
total = 0.0
for step in range(10):
    torch.cuda.nvtx.range_push("step")
    torch.cuda.nvtx.range_push("forward")
    b = a @ a
    b = b @ a
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("loss")
    total += b.norm().item()  # waits for the matmuls, inside "step" > "loss"
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_pop()
print(f"nvtx_item: total {total:.3e}")
