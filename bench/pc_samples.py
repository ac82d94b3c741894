#!/usr/bin/env python3
"""pc_samples.py PREFIX.PID [TOP]: what bench/pc_sampler.cpp's samples say, per thread, module and function.

Functions are the nearest preceding symbol nm gives (the static symbol table, else the dynamic one): in a library
without its static table (libc's internals, the driver) a sample may be named after an exported neighbour, so read
those modules' totals rather than their functions. Run it where the program ran: the maps name that machine's files.
"""
import bisect
import collections
import os
import subprocess
import sys


def read_maps(path):
    """The executable mappings: (low, high, file offset, file)."""
    maps = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) < 6 or "x" not in p[1]:
                continue
            low, high = (int(x, 16) for x in p[0].split("-"))
            maps.append((low, high, int(p[2], 16), p[5]))
    return maps


def run(args):
    try:
        return subprocess.run(args, capture_output=True, text=True, check=False).stdout
    except OSError:
        return ""


def symbols(path):
    """Sorted (address, name) of the functions nm finds in `path`."""
    for dynamic in ([], ["-D"]):
        table = []
        for line in run(["nm", "--defined-only", "-C"] + dynamic + [path]).splitlines():
            p = line.split(" ", 2)
            if len(p) == 3 and p[1] in "tTwW":
                try:
                    table.append((int(p[0], 16), p[2]))
                except ValueError:
                    pass
        if table:
            return sorted(table)
    return []


def segments(path):
    """The LOAD segments: (file offset, address, size in the file)."""
    out = []
    for line in run(["readelf", "-lW", path]).splitlines():
        p = line.split()
        if p and p[0] == "LOAD":
            out.append((int(p[1], 16), int(p[2], 16), int(p[4], 16)))
    return out


def main():
    prefix = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    maps = read_maps(prefix + ".maps")
    syms, segs = {}, {}
    modules, functions, threads, per_thread = (collections.Counter() for _ in range(4))
    total = 0
    with open(prefix + ".samples") as f:
        for line in f:
            tid, pc = line.split()
            pc = int(pc, 16)
            total += 1
            threads[tid] += 1
            m = next((m for m in maps if m[0] <= pc < m[1]), None)
            if m is None:
                modules["?"] += 1
                functions["?"] += 1
                continue
            low, _, offset, path = m
            name = os.path.basename(path)
            modules[name] += 1
            per_thread[(tid, name)] += 1
            file_offset = pc - low + offset
            if path not in syms:
                syms[path], segs[path] = symbols(path), segments(path)
            address = next((file_offset - o + a for o, a, size in segs[path] if o <= file_offset < o + size),
                           file_offset)
            table = syms[path]
            i = bisect.bisect_right(table, (address, "\uffff")) - 1
            functions[name + " " + (table[i][1][:110] if i >= 0 else hex(address))] += 1
    print(f"{total} samples")
    print("threads:", ", ".join(f"{k}:{v}" for k, v in threads.most_common(12)))
    for (tid, name), v in per_thread.most_common(20):
        print(f"  thread {tid} {name} {100 * v / total:.1f}%")
    print("modules:")
    for k, v in modules.most_common(15):
        print(f"  {100 * v / total:5.1f}% {k}")
    print("functions:")
    for k, v in functions.most_common(top):
        print(f"  {100 * v / total:5.1f}% {k}")


if __name__ == "__main__":
    main()
