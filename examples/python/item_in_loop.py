# .item() in a training-style loop: each call copies one scalar to pageable host memory and waits for all the
# GPU work queued before it (the matmuls), so the loop runs at the GPU's pace with the CPU idle in between.
import os

import torch

if os.environ.get("ASYNCCHECK_EXAMPLE_SYNC_DEBUG") == "1":
    torch.cuda.set_sync_debug_mode("warn")

a = torch.randn(4096, 4096, device="cuda")
total = 0.0
for step in range(20):
    b = a @ a
    b = b @ a
    total += b.norm().item()  # the scalar copy that waits for the matmuls
print(f"item_in_loop: total {total:.3e}")
