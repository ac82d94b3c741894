"""Checks examples/python/expect.txt against the reports run.sh wrote, and prints the comparison table.

usage: compare.py EXPECT_TXT OUTDIR     (OUTDIR holds NAME.json from asynccheck and NAME.syncdebug.txt)

An expectation `expect RULE API SCRIPT:LINE` holds when the JSON report has a site of RULE for API whose
location is SCRIPT:LINE. When RULE and API are reported but only at a native location (no Python frame in the
site's stack: the call was made with the GIL released on a Python version whose frames asynccheck cannot read
without it), the line says NATIVE instead of FAIL: asynccheck saw the call, but could not name its Python line.
`silent API SCRIPT:LINE` holds when no site for API has that location or a Python frame at that line in its stack. Exit code 1 when an expectation failed.

An expect line may end with `nvtx=NAME` (and `nvtx-domain=DOMAIN`; docs/expected-findings.md): it then holds when
a site of RULE for API, at SCRIPT:LINE or at a native location, has every one of its findings in the NVTX range
NAME: the range names the code even where the Python line cannot be read. With EXAMPLES="NAME ..." in the
environment only those runs are checked (run.sh runs only those too).
"""

import json
import os
import re
import sys


def load_expectations(path):
    runs = []
    for number, raw in enumerate(open(path), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if fields[0] == "run" and len(fields) >= 3:
            runs.append({"name": fields[1], "script": fields[2], "lines": []})
        elif fields[0] == "expect" and len(fields) >= 4 and runs:
            nvtx = {}
            for extra in fields[4:]:
                key, _, value = extra.partition("=")
                if key not in ("nvtx", "nvtx-domain") or not value or key in nvtx:
                    sys.exit("%s:%d: cannot read %r" % (path, number, extra))
                nvtx[key] = value
            runs[-1]["lines"].append(("expect", fields[1], fields[2], fields[3], number, nvtx))
        elif fields[0] == "silent" and len(fields) == 3 and runs:
            runs[-1]["lines"].append(("silent", None, fields[1], fields[2], number, {}))
        else:
            sys.exit("%s:%d: cannot read %r" % (path, number, raw.rstrip()))
    return runs


def where(frame):
    """file:line as asynccheck's summary writes it; a native frame without a line: its module's name."""
    if frame.get("file") and frame.get("line", 0) > 0:
        return "%s:%d" % (os.path.basename(frame["file"]), frame["line"])
    if frame.get("file"):
        return os.path.basename(frame["file"])
    return os.path.basename(frame.get("module", "")) or "unknown"


def python_lines(site):
    return [where(f) for f in site.get("stack", []) if f.get("module") == "python"]


def in_range(site, nvtx):
    """Every finding of the site in the range the expect line names (nvtx=- : in none)."""
    ranges = site.get("nvtx_ranges", [])
    if nvtx["nvtx"] == "-":
        return not ranges
    return (len(ranges) == 1 and ranges[0]["name"] == nvtx["nvtx"] and
            ranges[0]["domain"] == nvtx.get("nvtx-domain", "") and ranges[0]["count"] == site["count"])


def check(kind, rule, api, place, sites, nvtx):
    if kind == "expect" and nvtx:
        same = [s for s in sites if s["rule"] == rule and s["api"] == api and
                (where(s["location"]) == place or not python_lines(s))]
        if any(in_range(s, nvtx) for s in same):
            return "ok"
        got = "; ".join(", ".join("%s (%s): %d" % (r["name"], r["domain"] or "default", r["count"])
                                  for r in s.get("nvtx_ranges", [])) or "no range" for s in same)
        return "FAIL (NVTX: %s)" % (got or "no such site")
    if kind == "expect":
        same = [s for s in sites if s["rule"] == rule and s["api"] == api]
        if any(where(s["location"]) == place for s in same):
            return "ok"
        if any(not python_lines(s) for s in same):
            return "NATIVE"  # found, but without Python frames (GIL released, version without a layout)
        return "FAIL"
    noisy = [s for s in sites if s["api"] == api and s["level"] != "none" and
             (where(s["location"]) == place or place in python_lines(s))]
    return "ok" if not noisy else "FAIL (%s)" % ", ".join(s["rule"] for s in noisy)


def sync_warnings(path, script):
    """The lines of `script` that set_sync_debug_mode('warn') warned about: {line: count}."""
    counts = {}
    if not os.path.exists(path):
        return None
    pattern = re.compile(r"^(.*?):(\d+): UserWarning: .*synchroniz", re.IGNORECASE)
    for text in open(path, errors="replace"):
        m = pattern.match(text)
        if m and os.path.basename(m.group(1)) == os.path.basename(script):
            counts[int(m.group(2))] = counts.get(int(m.group(2)), 0) + 1
    return counts


def main():
    expect_path, out = sys.argv[1], sys.argv[2]
    failed = False
    rows = []
    only = os.environ.get("EXAMPLES", "").split()
    for run in load_expectations(expect_path):
        name, script = run["name"], run["script"]
        if only and name not in only:
            continue
        report = os.path.join(out, name + ".json")
        sites = json.load(open(report))["sites"] if os.path.exists(report) else None
        for kind, rule, api, place, number, nvtx in run["lines"]:
            verdict = "FAIL (no report)" if sites is None else check(kind, rule, api, place, sites, nvtx)
            failed = failed or verdict != "ok"
            label = "expect %s %s" % (rule, api) if kind == "expect" else "silent %s" % api
            if nvtx:
                label += " in NVTX range %s" % nvtx["nvtx"] + (
                    " (domain %s)" % nvtx["nvtx-domain"] if "nvtx-domain" in nvtx else "")
            print("%-8s %s:%d %s at %s" % (verdict, os.path.basename(expect_path), number, label, place))
        found = "-" if sites is None else ", ".join(
            "%s@%s%s" % (s["rule"], where(s["location"]), "" if s["location"].get("module") == "python" else " (native)")
            for s in sites if s["level"] != "none") or "none"
        warned = sync_warnings(os.path.join(out, name + ".syncdebug.txt"), script)
        if warned is None:
            debug = "-"
        else:
            debug = "%d (%s)" % (sum(warned.values()), ", ".join(
                "line %d x%d" % (line, n) for line, n in sorted(warned.items())) or "none")
        rows.append((name, found, debug))
    print()
    print("| example | asynccheck findings (rule@line) | set_sync_debug_mode(\"warn\") warnings (count, lines) |")
    print("|---|---|---|")
    for name, found, debug in rows:
        print("| %s | %s | %s |" % (name, found, debug))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
