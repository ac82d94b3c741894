#!/usr/bin/env python3
"""Draws a soak series (scripts/soak.py --csv) as a self-contained SVG: resident memory of the process tree over time.

usage: scripts/soak-plot.py SERIES.csv OUT.svg [--title TEXT]
"""
import argparse
import csv
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("series")
    ap.add_argument("svg")
    ap.add_argument("--title", default="asynccheck: resident memory of the process tree")
    args = ap.parse_args()
    with open(args.series) as f:
        rows = [(float(r["seconds"]), float(r["rss_mib"])) for r in csv.DictReader(f)]
    rows = [r for r in rows if r[1] > 64]  # the first sample may come before the program has loaded anything
    if len(rows) < 2:
        print(f"soak-plot: {args.series}: fewer than two samples to draw", file=sys.stderr)
        return 1
    W, H, left, right, top, bottom = 720, 420, 80, 20, 50, 60
    t_max = max(t for t, _ in rows)
    lo, hi = min(v for _, v in rows), max(v for _, v in rows)
    lo, hi = lo - max(8.0, (hi - lo) * 0.5), hi + max(8.0, (hi - lo) * 0.5)  # flat looks flat, not like noise
    x = lambda t: left + (W - left - right) * t / t_max
    y = lambda v: top + (H - top - bottom) * (hi - v) / (hi - lo)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           'font-family="sans-serif" font-size="12">', f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="24" text-anchor="middle" font-size="14" font-weight="bold">{args.title}</text>']
    step = 300 if t_max > 900 else 60
    for k in range(0, int(t_max) + 1, step):
        out.append(f'<line x1="{x(k):.1f}" y1="{top}" x2="{x(k):.1f}" y2="{H - bottom}" stroke="#eee"/>'
                   f'<text x="{x(k):.1f}" y="{H - bottom + 18}" text-anchor="middle">{k // 60}</text>')
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        out.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{W - right}" y2="{y(v):.1f}" stroke="#eee"/>'
                   f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.0f}</text>')
    out.append(f'<text x="{W / 2}" y="{H - 16}" text-anchor="middle">minutes</text>')
    out.append(f'<text x="18" y="{H / 2}" text-anchor="middle" transform="rotate(-90 18 {H / 2})">RSS (MiB)</text>')
    points = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in rows)
    out.append(f'<polyline points="{points}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    out.extend(f'<circle cx="{x(t):.1f}" cy="{y(v):.1f}" r="2.5" fill="#1f77b4"/>' for t, v in rows)
    out.append("</svg>")
    with open(args.svg, "w") as f:
        f.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
