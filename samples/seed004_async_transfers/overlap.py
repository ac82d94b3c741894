#!/usr/bin/env python3
"""Which GPU operations of seed004's versions overlapped, from a recording (asynccheck --save=FILE).

The versions are told apart by the program's own cudaEventSynchronize calls (one after each version). For each
version: its GPU span, the busy time of each engine kind, and how much copy time ran concurrently with kernels
or with copies in the other direction.  usage: overlap.py RECORDING
"""
import sys

COPY_KIND = {1: "HtoD", 2: "DtoH"}


def read(path):
    names, calls, ops = {}, [], []
    for line in open(path):
        f = line.split()
        if not f:
            continue
        if f[0] == "api":
            names[int(f[1])] = f[2]
        elif f[0] == "call":
            calls.append((names.get(int(f[8]), "?"), int(f[3]), int(f[4])))
        elif f[0] == "op":
            if f[1] == "sync":  # the host's wait (cudaEventSynchronize), not GPU work
                continue
            kind = f[1] if f[1] != "memcpy" else COPY_KIND.get(int(f[9]), "copy")
            ops.append((kind, int(f[3]), int(f[4]), int(f[7])))
    return calls, ops


def overlap(a, b):
    return max(0, min(a[2], b[2]) - max(a[1], b[1]))


def main(path):
    calls, ops = read(path)
    syncs = [c[2] for c in calls if c[0] == "cudaEventSynchronize"]
    bounds = [0] + syncs
    labels = ["sequential (cudaMemcpy, kernel, cudaMemcpy)", "V1 {H2D, kernel, D2H} per stream",
              "V2 all H2D, all kernels, all D2H", "V3 V2 + cudaEventRecord after each kernel"]
    first = bounds[0]
    for v in range(min(len(bounds), len(labels))):
        lo = bounds[v]
        hi = bounds[v + 1] if v + 1 < len(bounds) else float("inf")
        mine = [o for o in ops if lo <= o[1] < hi]
        if not mine:
            continue
        start, end = min(o[1] for o in mine), max(o[2] for o in mine)
        busy = {}
        for o in mine:
            busy[o[0]] = busy.get(o[0], 0) + o[2] - o[1]
        k_vs_copy = sum(overlap(c, k) for c in mine if c[0] in ("HtoD", "DtoH") for k in mine if k[0] == "kernel")
        h_vs_d = sum(overlap(h, d) for h in mine if h[0] == "HtoD" for d in mine if d[0] == "DtoH")
        print(f"{labels[v]}: GPU span {(end - start) / 1e3:.1f} us, busy "
              + ", ".join(f"{k} {t / 1e3:.1f} us" for k, t in sorted(busy.items()))
              + f"; copy time overlapping kernels {k_vs_copy / 1e3:.1f} us; HtoD overlapping DtoH {h_vs_d / 1e3:.1f} us")
        for o in sorted(mine, key=lambda o: o[1]):
            print(f"    stream {o[3]:3} {o[0]:6} {(o[1] - start) / 1e3:8.1f} .. {(o[2] - start) / 1e3:8.1f} us")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: overlap.py RECORDING")
    main(sys.argv[1])
