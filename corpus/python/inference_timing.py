# Timing a model as people do: torch.cuda.synchronize() around each forward pass, outputs copied back with
# .cpu().numpy(), a torch.nonzero on the result (its size is data-dependent). Times its own stalls with
# time.perf_counter() and prints `CLOCK inference_timing <label> <us>` lines to stderr.
import sys
import time

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(*[nn.Sequential(nn.Linear(2048, 2048), nn.GELU()) for _ in range(8)]).cuda().eval()
inputs = torch.randn(512, 2048)  # pageable

clock = {"synchronize": 0.0, "cpu_numpy": 0.0, "nonzero": 0.0}
with torch.no_grad():
    for i in range(20):
        x = inputs.cuda()
        start = time.perf_counter()
        y = model(x)
        t0 = time.perf_counter()
        torch.cuda.synchronize()
        clock["synchronize"] += time.perf_counter() - t0
        elapsed = time.perf_counter() - start
        y = model(y)
        t0 = time.perf_counter()
        out = y.cpu().numpy()
        clock["cpu_numpy"] += time.perf_counter() - t0
        y = model(y)
        t0 = time.perf_counter()
        idx = torch.nonzero(y > 0.5)
        clock["nonzero"] += time.perf_counter() - t0
        if i % 5 == 0:
            print(f"batch {i}: forward {elapsed * 1e3:.2f} ms, out {out.shape}, {idx.shape[0]} above 0.5")

for label, seconds in clock.items():
    print(f"CLOCK inference_timing {label}_total {seconds * 1e6:.1f}", file=sys.stderr)
print("inference_timing: done")
