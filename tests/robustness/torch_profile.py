"""torch.profiler around a little CUDA work, for test_other_profilers.cpp: prints whether the profile holds CPU
events and how many CUDA (GPU) events it holds. Under asynccheck, CUDA 13.0's CUPTI serves one subscriber, so
Kineto gets none and says so itself; the program still runs to its end. Exits 77 without PyTorch or a GPU."""
import sys

try:
    import torch
    from torch.profiler import ProfilerActivity, profile
except Exception as e:  # not installed, or broken
    print(f"no torch: {type(e).__name__}: {e}")
    sys.exit(77)
if not torch.cuda.is_available():
    print("no GPU: torch.cuda.is_available() is False")
    sys.exit(77)

x = torch.randn(512, 512, device="cuda")
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], acc_events=True) as prof:
    for _ in range(10):
        y = x @ x
    total = y.sum().item()
events = prof.events()
print("cpu_events", any(e.device_type == torch.autograd.DeviceType.CPU for e in events))
print("cuda_events", sum(1 for e in events if e.device_type == torch.autograd.DeviceType.CUDA))
print("done")
