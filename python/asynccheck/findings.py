"""Findings of asynccheck JSON reports (docs/report-format.md), attributed to the pytest tests they happened in.

The pytest plugin opens region("test:<nodeid>") around each test; the library records it as an NVTX range of the
domain "asynccheck", and each site of the report lists the ranges its findings happened in (nvtx_ranges: the
innermost range of each, with a count; with `path`, every open range, outermost first). A site's findings are
attributed to the innermost test range in each entry's path (the entry itself when it has no path): one site may
belong to several tests (a helper they all call), each with its own count. Findings in no test's range (at
import, in a session fixture's teardown after the last test) are listed apart. Pure functions over parsed JSON:
tests/python tests them on committed and fabricated reports.
"""

import collections
import json
import os

REGION_DOMAIN = "asynccheck"
TEST_PREFIX = "test:"
LEVELS = ("note", "warning", "error")

# One site's findings in one test (or outside any: test None). `count`: how many of the site's findings happened
# there; the times are the site's own, over all its findings (the report does not split them by range).
Finding = collections.namedtuple("Finding", "test site count report")


def level_rank(level):
    try:
        return LEVELS.index(level)
    except ValueError:
        return -1


def load(path):
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    if not isinstance(report, dict) or report.get("schema") != "asynccheck-report":
        raise ValueError("%s is not an asynccheck JSON report" % path)
    return report


def _test_of(entry):
    chain = entry.get("path") or [entry]
    for r in reversed(chain):  # innermost first: a test's region inside another's is the one that ran
        name = r.get("name", "")
        if r.get("domain") == REGION_DOMAIN and name.startswith(TEST_PREFIX):
            return name[len(TEST_PREFIX):]
    return None


def attribute(reports):
    """(per test: {nodeid: [Finding]}, outside any test: [Finding]) for parsed reports [(source, report)]."""
    per_test = collections.OrderedDict()
    outside = []
    for source, report in reports:
        for site in report.get("sites", []):
            counts = collections.OrderedDict()
            placed = 0
            for entry in site.get("nvtx_ranges") or []:
                n = int(entry.get("count", 0))
                test = _test_of(entry)
                if test is None:
                    continue
                counts[test] = counts.get(test, 0) + n
                placed += n
            for test, n in counts.items():
                per_test.setdefault(test, []).append(Finding(test, site, n, source))
            rest = int(site.get("count", 0)) - placed
            if rest > 0:
                outside.append(Finding(None, site, rest, source))
    return per_test, outside


def is_new(site):
    return not site.get("in_baseline", False)


def fails(finding, fail_on):
    """Whether the finding fails its test at `fail_on` (a level; None: nothing fails): new, and that severe."""
    return fail_on is not None and is_new(finding.site) and level_rank(finding.site.get("level")) >= level_rank(fail_on)


def duration(ns):
    ns = float(ns or 0)
    if ns >= 1e9:
        return "%.2f s" % (ns / 1e9)
    if ns >= 1e6:
        return "%.2f ms" % (ns / 1e6)
    if ns >= 1e3:
        return "%.1f us" % (ns / 1e3)
    return "%d ns" % ns


def where(site, root=None):
    loc = site.get("location") or {}
    f = loc.get("file") or loc.get("module") or "?"
    if root and os.path.isabs(f):
        rel = os.path.relpath(f, root)
        if not rel.startswith(".."):
            f = rel
    line = loc.get("line") or 0
    text = "%s:%d" % (f, line) if line else f
    if loc.get("function"):
        text += " in " + loc["function"]
    return text


def describe(finding, root=None):
    """One line: level [rule] api at file:line in function: calls; host time, waited/own; new or in baseline."""
    s = finding.site
    calls = int(s.get("count", 0))
    here = "%d call%s" % (finding.count, "" if finding.count == 1 else "s")
    if finding.count != calls:
        here += " of the site's %d" % calls
    return "%s [%s] %s at %s: %s; host held %s: waited %s, own %s%s" % (
        s.get("level", "?"), s.get("rule", "?"), s.get("api", "?"), where(s, root), here,
        duration(s.get("total_ns")), duration(s.get("waited_ns")), duration(s.get("own_ns")),
        "" if is_new(s) else " (in baseline)")


def monitoring_off(report):
    """Why nothing was watched in this report's process, or None when something was (on, or stopped mid-run)."""
    m = (report.get("run") or {}).get("monitoring", "on")
    return None if m == "on" or m.startswith("stopped: ") else m


def monitoring_stopped(report):
    """Why monitoring stopped before this report's process ended ("stopped: WHY"), or None: its findings are from
    before that, the rest of the run was not watched."""
    m = (report.get("run") or {}).get("monitoring", "on")
    return m if m.startswith("stopped: ") else None
