# "Free GPU memory after each big step": a GEMM, its temporaries dropped, torch.cuda.empty_cache() to return the
# cached blocks, as people write it in inference loops to keep memory low. Times its own stalls with
# time.perf_counter() and prints `CLOCK empty_cache_after_gemm <label> <us>` lines to stderr.
import sys
import time

import torch

a = torch.randn(8192, 8192, device="cuda")
b = torch.randn(8192, 8192, device="cuda")
torch.cuda.synchronize()

clock = {"empty_cache": 0.0, "item": 0.0}
rounds = 5
for i in range(rounds):
    tmp = [torch.empty(64 * 1024 * 1024, device="cuda") for _ in range(2)]  # 2 x 256 MiB of scratch
    c = a @ b  # queued: runs for a while
    c = c @ b
    del tmp  # back to PyTorch's cache
    t0 = time.perf_counter()
    torch.cuda.empty_cache()  # cudaFree of the cached blocks
    clock["empty_cache"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    norm = c.norm().item()
    clock["item"] += time.perf_counter() - t0
    print(f"round {i}: norm {norm:.3e}")

for label, seconds in clock.items():
    print(f"CLOCK empty_cache_after_gemm {label}_total {seconds * 1e6:.1f}", file=sys.stderr)
print("empty_cache_after_gemm: done")
