# torch.cuda.empty_cache() returns the caching allocator's free blocks with cudaFree, and cudaFree waits for the
# whole device: here, for the matmuls still running.
import os

import torch

if os.environ.get("ASYNCCHECK_EXAMPLE_SYNC_DEBUG") == "1":
    torch.cuda.set_sync_debug_mode("warn")

a = torch.randn(8192, 8192, device="cuda")
scratch = [torch.empty(64 * 1024 * 1024, device="cuda") for _ in range(4)]  # 4 x 256 MiB
del scratch  # back to the cache, not to the driver
b = a @ a
b = b @ a
torch.cuda.empty_cache()  # cudaFree of the cached blocks: waits for the matmuls
print(f"empty_cache: {b[0, 0].item():.3e}")
