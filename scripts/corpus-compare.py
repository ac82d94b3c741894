#!/usr/bin/env python3
"""Tabulates a corpus run (scripts/gpu-corpus.sh BUILD_DIR OUTDIR) as markdown, for docs/real-programs.md.

usage: scripts/corpus-compare.py OUTDIR

For each program that ran (NAME.bare.status in OUTDIR): its exit codes and wall times bare and under asynccheck,
the clocks it took of its own stalls (`CLOCK <program> <label> <us>` lines, on stdout or stderr, from the bare run
and from the run under asynccheck), the timing lines a cuda-sample prints of its own accord, and every site of its
JSON report (NAME.json): rule, level, api, location, count, total, and waited/own where the report has them
(`waited_ns`, `own_ns`: totals over the site's calls). Times in ms. A program without a report says why.
"""

import json
import os
import re
import sys

CLOCK = re.compile(r"^CLOCK\s+(\S+)\s+(\S+)\s+([0-9.eE+-]+)\s*$")
# The lines a cuda-sample prints about its own timing (asyncAPI, simpleStreams, simpleMultiCopy...).
OWN_TIMING = re.compile(r"(time|ms\b|msec|GB/s|iterations|elapsed)", re.IGNORECASE)


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def clocks(out, name, kind):
    """{label: us} from NAME.KIND.out and NAME.KIND.err."""
    found = {}
    for ext in ("out", "err"):
        for line in read(os.path.join(out, "%s.%s.%s" % (name, kind, ext))).splitlines():
            m = CLOCK.match(line.strip())
            if m:
                found[m.group(2)] = float(m.group(3))
    return found


def status(out, name, kind):
    text = read(os.path.join(out, "%s.%s.status" % (name, kind))).strip()
    fields = dict(f.split("=", 1) for f in text.split() if "=" in f)
    if not fields:
        return "-"
    return "exit %s, %s s" % (fields.get("exit", "?"), fields.get("seconds", "?"))


def where(site):
    loc = site.get("location", {})
    function = loc.get("function") or "?"
    if loc.get("file"):
        place = os.path.basename(loc["file"])
        if loc.get("line", 0) > 0:
            place += ":%d" % loc["line"]
    else:
        place = os.path.basename(loc.get("module", "")) or "unknown"
    if loc.get("module") == "python":
        return "%s in %s" % (place, function)
    native = "" if loc.get("file") else " (no line)"
    entry = site.get("library_entry")
    called = "%s, called at " % entry if entry else ""
    return "%s%s in %s%s" % (called, place, function, native)


def ms(ns):
    return "-" if ns is None else "%.2f" % (ns / 1e6)


def programs(out):
    names = [f[: -len(".bare.status")] for f in os.listdir(out) if f.endswith(".bare.status")]
    # The order gpu-corpus.sh ran them in: by the status file's time.
    return sorted(names, key=lambda n: os.path.getmtime(os.path.join(out, n + ".bare.status")))


def escape(text):
    return str(text).replace("|", "\\|")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: corpus-compare.py OUTDIR")
    out = sys.argv[1]
    env = read(os.path.join(out, "ENVIRONMENT")).strip()
    if env:
        print("\n".join("    " + line for line in env.splitlines()))
        print()
    names = programs(out)
    if not names:
        sys.exit("%s: no NAME.bare.status: not a gpu-corpus.sh output directory" % out)

    print("| program | bare | under asynccheck | sites (error/warning/note) | own clocks, bare / checked (ms) |")
    print("|---|---|---|---|---|")
    reports = {}
    for name in names:
        path = os.path.join(out, name + ".json")
        try:
            with open(path) as f:
                reports[name] = json.load(f)
        except (OSError, ValueError) as e:
            reports[name] = str(e)
        report = reports[name]
        if isinstance(report, dict):
            levels = [s.get("level") for s in report.get("sites", [])]
            counts = "%d (%d/%d/%d)" % (len(levels), levels.count("error"), levels.count("warning"), levels.count("note"))
        else:
            counts = "no report"
        bare, checked = clocks(out, name, "bare"), clocks(out, name, "checked")
        own = ", ".join("%s %s / %s" % (label, ms(bare[label] * 1e3),
                                          ms(checked[label] * 1e3) if label in checked else "-")
                        for label in bare) or "-"
        print("| %s | %s | %s | %s | %s |" % (name, status(out, name, "bare"), status(out, name, "checked"),
                                                counts, escape(own)))

    for name in names:
        print()
        print("### %s" % name)
        print()
        report = reports[name]
        bare, checked = clocks(out, name, "bare"), clocks(out, name, "checked")
        if bare or checked:
            print("Own clocks (`CLOCK` lines, ms): " + "; ".join(
                "%s: bare %s, checked %s" % (label, ms(bare[label] * 1e3) if label in bare else "-",
                                             ms(checked[label] * 1e3) if label in checked else "-")
                for label in list(bare) + [l for l in checked if l not in bare]))
            print()
        if not name.startswith("traps.") and not bare and not checked:
            lines = [l.strip() for l in read(os.path.join(out, name + ".bare.out")).splitlines()
                     if OWN_TIMING.search(l) and re.search(r"\d", l)]
            if lines:
                print("Its own timing output (bare run):")
                print()
                for line in lines[:8]:
                    print("    " + line)
                print()
        if not isinstance(report, dict):
            print("No report: %s (see %s.checked.err)" % (report, name))
            continue
        run = report.get("run", {})
        notes = []
        if not run.get("complete", True):
            notes.append("run incomplete")
        if run.get("dropped_records"):
            notes.append("%d activity records dropped" % run["dropped_records"])
        if run.get("unanalyzed_calls"):
            notes.append("%d calls not analyzed" % run["unanalyzed_calls"])
        print("%d calls watched, %d GPU operations, %d captured calls%s." % (
            run.get("calls_watched", 0), run.get("gpu_operations", 0), run.get("captured_calls", 0),
            "; " + ", ".join(notes) if notes else ""))
        print()
        sites = report.get("sites", [])
        if not sites:
            print("No sites reported.")
            continue
        split = any("waited_ns" in s or "own_ns" in s for s in sites)
        head = "| rule | level | api | location | count | total ms | median ms | max ms |"
        rule = "|---|---|---|---|---|---|---|---|"
        if split:
            head += " waited ms | own ms |"
            rule += "---|---|"
        print(head)
        print(rule)
        for s in sites:
            total = ms(s.get("total_ns"))
            if s.get("measure", "host_ns") != "host_ns":
                total += " (%s)" % s["measure"]  # gpu_delay_ns: time GPU work was held back, not host time
            row = "| %s | %s | %s | %s | %d | %s | %s | %s |" % (
                s.get("rule"), s.get("level"), s.get("api"), escape(where(s)), s.get("count", 0),
                total, ms(s.get("median_ns")), ms(s.get("max_ns")))
            if split:
                row += " %s | %s |" % (ms(s.get("waited_ns")), ms(s.get("own_ns")))
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
