# torch.nonzero on a CUDA tensor: the size of the result depends on the data, so PyTorch copies the count to the
# host and synchronizes the stream before it can allocate the output.
import os

import torch

if os.environ.get("ASYNCCHECK_EXAMPLE_SYNC_DEBUG") == "1":
    torch.cuda.set_sync_debug_mode("warn")

a = torch.randn(4096, 4096, device="cuda")
found = 0
for step in range(10):
    b = a @ a
    idx = torch.nonzero(b > 100.0)  # waits for the matmul to learn how many
    found += idx.shape[0]
print(f"nonzero: found {found}")
