#!/usr/bin/env python3
"""Long runs: does memory stay bounded? Runs a command, samples the resident memory of its whole process tree
(the asynccheck command and the program it runs) every --interval seconds, and judges the series when it ends.

usage: scripts/soak.py [--interval S] [--warmup S] [--max-growth-mib M] [--deadline S] [--csv FILE] -- COMMAND...

The verdict compares the two halves of the run after the warm-up: the peak of the second half against the peak of
the first (growth, MiB), and the least-squares slope of the second half (MiB per minute). A run whose memory is
bounded has its peak early and a flat second half; one that grows with time shows it in both figures. It fails
(exit 1) when the growth exceeds --max-growth-mib, when the command fails, or when too few samples were taken to
judge; otherwise it exits 0. The series and the verdict are printed, one line each, and the series also goes to
--csv (seconds, RSS MiB of the tree, RSS MiB of its largest process).

The command should end by itself (api_calls with API_CALLS_SECONDS, bench/train.py --seconds); --deadline sends it
SIGINT at that many seconds (then SIGKILL 60 s later) in case it does not. Linux only (/proc).
"""
import argparse
import os
import signal
import subprocess
import sys
import time


def tree_rss_kib(root: int) -> tuple[int, int]:
    """Resident memory (VmRSS) of `root` and all its descendants, and of the largest of them, in KiB."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # ended meanwhile
        # The command name is in parentheses and may hold spaces: the fields after the last ')' are fixed.
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    total = largest = 0
    todo = [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/status") as f:
                rss = next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
        except OSError:
            continue
        total += rss
        largest = max(largest, rss)
    return total, largest


def slope_per_minute(points: list[tuple[float, float]]) -> float:
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    return 0.0 if var == 0 else 60.0 * sum((t - mx) * (v - my) for t, v in points) / var


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--interval", type=float, default=30, help="seconds between samples (default 30)")
    ap.add_argument("--warmup", type=float, default=60, help="seconds left out of the verdict at the start (default 60)")
    ap.add_argument("--max-growth-mib", type=float, default=16,
                    help="largest growth of the peak from the first half to the second that passes (default 16)")
    ap.add_argument("--deadline", type=float, default=0, help="SIGINT the command after this many seconds (0: never)")
    ap.add_argument("--csv", help="write the series here too")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no command given: scripts/soak.py [options] -- COMMAND...")
    if args.interval <= 0:
        ap.error(f"--interval {args.interval}: expected a positive number of seconds")

    t0 = time.monotonic()
    # Its own session: the deadline's signals go to the whole tree (the asynccheck command ignores SIGINT and waits
    # for the program, which must get it).
    proc = subprocess.Popen(command, start_new_session=True)
    series: list[tuple[float, float, float]] = []  # seconds, tree MiB, largest MiB
    out = open(args.csv, "w") if args.csv else None
    if out:
        out.write("seconds,rss_mib,largest_mib\n")
    interrupted = killed = False
    next_sample = t0
    while proc.poll() is None:
        now = time.monotonic()
        if args.deadline > 0 and not interrupted and now - t0 >= args.deadline:
            os.killpg(proc.pid, signal.SIGINT)
            interrupted = True
        if interrupted and not killed and now - t0 >= args.deadline + 60:
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
        if now >= next_sample:
            total, largest = tree_rss_kib(proc.pid)
            if total:
                sample = (now - t0, total / 1024, largest / 1024)
                series.append(sample)
                print(f"soak: t={sample[0]:.0f}s rss={sample[1]:.1f}MiB largest={sample[2]:.1f}MiB", flush=True)
                if out:
                    out.write(f"{sample[0]:.1f},{sample[1]:.1f},{sample[2]:.1f}\n")
                    out.flush()
            next_sample += args.interval
        time.sleep(min(1.0, max(0.05, next_sample - time.monotonic())))
    rc = proc.returncode
    if out:
        out.close()

    judged = [(t, v) for t, v, _ in series if t >= args.warmup]
    status = "PASS"
    if rc != 0:
        status = "FAIL"
        why = f"the command ended with {rc}" + (" (interrupted at the deadline)" if interrupted else "")
    elif len(judged) < 4:
        status = "FAIL"
        why = f"{len(judged)} samples after the warm-up: too few to judge (run longer, or a shorter --interval)"
    else:
        mid = judged[0][0] + (judged[-1][0] - judged[0][0]) / 2
        first = [v for t, v in judged if t < mid]
        second = [(t, v) for t, v in judged if t >= mid]
        growth = max(v for _, v in second) - max(first)
        slope = slope_per_minute(second)
        why = (f"peak {max(first):.1f} MiB in the first half, {max(v for _, v in second):.1f} MiB in the second "
               f"(growth {growth:+.1f} MiB, limit {args.max_growth_mib:g}); second half's slope {slope:+.2f} MiB/min")
        if growth > args.max_growth_mib:
            status = "FAIL"
    peak = max((v for _, v, _ in series), default=0)
    print(f"soak: {status}: {(time.monotonic() - t0) / 60:.1f} min, {len(series)} samples, peak {peak:.1f} MiB; {why}",
          flush=True)
    return 0 if status == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
