#!/usr/bin/env python3
"""A small PyTorch training loop on synthetic CUDA data: the "real workload" of docs/performance.md.

One small conv net + MLP head (3 conv layers with batch norm, 3 linear layers; AdamW, cross-entropy) on synthetic
32x32 images, trained in two regimes in the same process, one after the other:

  launch: batch 128 (--launch-batch). The GPU finishes each step faster than Python enqueues it, so the loop's
          speed is the host's: every microsecond a tool adds to a CUDA call shows (the worst case for any tool).
  gpu:    batch 1024 (--gpu-batch). The GPU's work per step outlasts the enqueueing, as in a loop sized to its
          GPU: what a tool adds on the host is hidden unless it delays the GPU.

Each regime: warm-up steps untimed (cuDNN/cuBLAS handles, kernel loading, optimizer state), then the timed steps,
bracketed by torch.cuda.synchronize(); as real loops do, the loss is read back (.item()) every 50 steps.

Prints one line:
  RESULT launch_steps=N launch_steps_per_s=R gpu_steps=N gpu_steps_per_s=R torch=VERSION profiler=0|1
or, when PyTorch or a GPU is missing:  SKIP reason   (exit code 0: the caller records a skip, not a failure)

--profile runs each regime inside torch.profiler.profile(activities=[CPU, CUDA]); the profiler's own work when it
stops (collecting and processing the trace) comes after the timed region.
"""
import argparse
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launch-steps", type=int, default=400, help="timed steps, launch-bound (0: skip the regime)")
    ap.add_argument("--gpu-steps", type=int, default=100, help="timed steps, GPU-bound (0: skip the regime)")
    ap.add_argument("--launch-batch", type=int, default=128, help="batch size of the launch-bound regime")
    ap.add_argument("--gpu-batch", type=int, default=1024, help="batch size of the GPU-bound regime")
    ap.add_argument("--warmup", type=int, default=30, help="untimed steps before each regime")
    ap.add_argument("--profile", action="store_true", help="run under torch.profiler (CPU and CUDA activities)")
    ap.add_argument("--seconds", type=float, default=0,
                    help="end each regime's timed loop after this many seconds, or its steps, whichever comes first "
                         "(0: steps only; for long runs: scripts/soak.py)")
    args = ap.parse_args()

    try:
        import torch
        import torch.nn as nn
    except Exception as e:  # ImportError, or a broken install
        print(f"SKIP torch not importable: {type(e).__name__}: {e}", flush=True)
        return 0
    if not torch.cuda.is_available():
        print("SKIP torch.cuda.is_available() is False", flush=True)
        return 0
    dev = torch.device("cuda")

    def regime(batch: int, steps: int) -> float:
        torch.manual_seed(0)
        model = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(64 * 8 * 8, 512), nn.ReLU(),
            nn.Linear(512, 256), nn.ReLU(),
            nn.Linear(256, 10),
        ).to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        loss_fn = nn.CrossEntropyLoss()
        # A few synthetic batches already on the GPU: the loop measures training steps, not data loading.
        xs = [torch.randn(batch, 3, 32, 32, device=dev) for _ in range(4)]
        ys = [torch.randint(0, 10, (batch,), device=dev) for _ in range(4)]

        def step(i: int) -> None:
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(xs[i % 4]), ys[i % 4])
            loss.backward()
            opt.step()
            if i % 50 == 49:
                loss.item()  # a host read-back, as a loop that logs its loss does

        def run() -> tuple[int, float]:
            for i in range(args.warmup):
                step(i)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            done = 0
            while done < steps and not (args.seconds > 0 and time.perf_counter() - t0 >= args.seconds):
                step(done)
                done += 1
            torch.cuda.synchronize()
            return done, time.perf_counter() - t0

        if args.profile:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
                done, seconds = run()
        else:
            done, seconds = run()
        del model, opt, xs, ys
        torch.cuda.empty_cache()
        return done, done / seconds

    fields = []
    for name, batch, steps in (("launch", args.launch_batch, args.launch_steps),
                               ("gpu", args.gpu_batch, args.gpu_steps)):
        if steps > 0:
            done, rate = regime(batch, steps)
            fields.append(f"{name}_steps={done} {name}_steps_per_s={rate:.3f}")
    print(f"RESULT {' '.join(fields)} torch={torch.__version__} profiler={int(args.profile)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
