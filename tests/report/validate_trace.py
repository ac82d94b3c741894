#!/usr/bin/env python3
"""Checks Chrome trace event JSON files (asynccheck --trace) against the Trace Event Format rules that Perfetto's
JSON importer and chrome://tracing (catapult) rely on.

    validate_trace.py FILE...

Prints one line per error, "FILE: traceEvents[N] (ph X, name 'cudaMemcpy'): what is wrong", and exits 1 if there
is any (2 on a usage error). Perfetto's UI needs the network and cannot be run here, so this checks the format
itself:

- the file is strict JSON (no NaN/Infinity, UTF-8) holding {"traceEvents": [...]} (or a bare array of events);
  displayTimeUnit, when present, is "ms" or "ns"; otherData, when present, an object;
- every event is an object with a known phase "ph"; "ts" is a finite number (metadata events may omit it);
  "pid"/"tid" are integers in 0..2^32-1 (Perfetto reads them as unsigned 32-bit; others become 0);
- X (complete): non-empty name, ts, dur >= 0, pid, tid;
- M (metadata): name is process_name/thread_name (args.name a string) or process_sort_index/thread_sort_index
  (args.sort_index an integer); thread_* ones have a tid; a (pid, tid) is not given two different names;
- i/I (instant): s, when present, is g, p or t; thread-scoped ones have pid and tid;
- s/t/f (flow, version 1): id (an integer, or a string of hex digits: Perfetto parses string ids as hex) and cat;
  events are matched on (cat, name, id) as Perfetto does; every s has a matching f and every f an s; an id is not
  started twice; f has "bp": "e" (bound to its enclosing slice); each s and f lies inside an X slice of its own
  (pid, tid), or the importer drops the arrow;
- X events on one (pid, tid) nest properly: two slices either do not overlap or one contains the other. A partial
  overlap is rejected or misdrawn by Perfetto and catapult. Times are compared in integer nanoseconds, rounded from
  the microsecond values as Perfetto does (llround(ts * 1000)).
"""

import bisect
import json
import math
import sys
from collections import defaultdict

KNOWN_PHASES = set("BEXiICbneSTpFstfPNODMVvRc()")
METADATA = {"process_name": "name", "thread_name": "name", "process_sort_index": "sort_index",
            "thread_sort_index": "sort_index"}
U32 = 2 ** 32


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def ns(us):
    return int(round(us * 1000))


def reject_constant(name):
    raise ValueError("%s is not valid JSON" % name)


class Checker:
    def __init__(self, path):
        self.path = path
        self.errors = []

    def error(self, where, what):
        self.errors.append("%s: %s%s" % (self.path, where + ": " if where else "", what))

    def run(self):
        try:
            with open(self.path, "rb") as f:
                raw = f.read()
        except OSError as e:
            self.error("", "cannot read: %s" % e.strerror)
            return self.errors
        try:
            doc = json.loads(raw.decode("utf-8"), parse_constant=reject_constant)
        except UnicodeDecodeError as e:
            self.error("", "not UTF-8 at byte %d" % e.start)
            return self.errors
        except ValueError as e:
            self.error("", "not valid JSON: %s" % e)
            return self.errors
        if isinstance(doc, list):
            events = doc
        elif isinstance(doc, dict):
            events = doc.get("traceEvents")
            if not isinstance(events, list):
                self.error("", "no \"traceEvents\" array")
                return self.errors
            unit = doc.get("displayTimeUnit")
            if unit is not None and unit not in ("ms", "ns"):
                self.error("displayTimeUnit", "is %r, must be \"ms\" or \"ns\"" % (unit,))
            if "otherData" in doc and not isinstance(doc["otherData"], dict):
                self.error("otherData", "must be an object")
        else:
            self.error("", "top level must be an object with \"traceEvents\" or an array of events")
            return self.errors
        self.check_events(events)
        return self.errors

    def check_events(self, events):
        slices = defaultdict(list)       # (pid, tid) -> [(start_ns, end_ns, index)]
        flow_points = []                 # (ph, key, pid, tid, ts_ns, where)
        names = {}                       # ("process", pid) / ("thread", pid, tid) -> (name, where)
        for i, e in enumerate(events):
            if not isinstance(e, dict):
                self.error("traceEvents[%d]" % i, "event is not an object")
                continue
            ph = e.get("ph")
            where = "traceEvents[%d] (ph %s, name %r)" % (i, ph, e.get("name"))
            if not isinstance(ph, str) or ph not in KNOWN_PHASES:
                self.error(where, "unknown phase %r" % (ph,))
                continue
            ts = e.get("ts")
            if ts is None:
                if ph != "M":
                    self.error(where, "no ts")
                    continue
            elif not is_number(ts) or not math.isfinite(ts):
                self.error(where, "ts %r is not a finite number" % (ts,))
                continue
            ok = True
            for key in ("pid", "tid"):
                if key in e and (not is_int(e[key]) or not 0 <= e[key] < U32):
                    self.error(where, "%s %r is not an integer in 0..2^32-1" % (key, e[key]))
                    ok = False
            if not ok:
                continue
            if "name" in e and not isinstance(e["name"], str):
                self.error(where, "name is not a string")
                continue
            if "args" in e and not isinstance(e["args"], dict):
                self.error(where, "args is not an object")
            if ph == "X":
                self.check_complete(e, where, i, slices)
            elif ph == "M":
                self.check_metadata(e, where, names)
            elif ph in "iI":
                scope = e.get("s", "t")
                if scope not in ("g", "p", "t"):
                    self.error(where, "instant scope s %r is not g, p or t" % (scope,))
                elif scope == "t" and not ("pid" in e and "tid" in e):
                    self.error(where, "thread-scoped instant without pid and tid")
                elif scope == "p" and "pid" not in e:
                    self.error(where, "process-scoped instant without pid")
            elif ph in "stf":
                self.check_flow(e, i, where, flow_points)
        self.check_nesting(slices)
        self.check_flows(flow_points, slices)

    def check_complete(self, e, where, i, slices):
        name = e.get("name")
        if not isinstance(name, str) or not name:
            self.error(where, "complete event without a name")
        dur = e.get("dur")
        if dur is None:
            self.error(where, "complete event without dur")
            return
        if not is_number(dur) or not math.isfinite(dur):
            self.error(where, "dur %r is not a finite number" % (dur,))
            return
        if dur < 0:
            self.error(where, "dur %r is negative" % (dur,))
            return
        if "pid" not in e or "tid" not in e:
            self.error(where, "complete event without pid and tid")
            return
        start = ns(e["ts"])
        slices[(e["pid"], e["tid"])].append((start, start + ns(dur), i, where))

    def check_metadata(self, e, where, names):
        name = e.get("name")
        if name not in METADATA:
            self.error(where, "metadata name %r is not one of %s" % (name, ", ".join(sorted(METADATA))))
            return
        args = e.get("args")
        key = METADATA[name]
        if not isinstance(args, dict) or key not in args:
            self.error(where, "metadata without args.%s" % key)
            return
        value = args[key]
        if key == "name" and not isinstance(value, str):
            self.error(where, "args.name %r is not a string" % (value,))
            return
        if key == "sort_index" and not is_int(value):
            self.error(where, "args.sort_index %r is not an integer" % (value,))
            return
        if "pid" not in e:
            self.error(where, "metadata without pid")
            return
        if name.startswith("thread_") and "tid" not in e:
            self.error(where, "thread metadata without tid")
            return
        if key == "name":
            owner = ("thread", e["pid"], e["tid"]) if name == "thread_name" else ("process", e["pid"])
            before = names.setdefault(owner, (value, where))
            if before[0] != value:
                self.error(where, "%s %s named %r here but %r at %s" % (owner[0], owner[1:], value, before[0], before[1]))

    def check_flow(self, e, index, where, flow_points):
        fid = e.get("id")
        if is_int(fid):
            ident = fid
        elif isinstance(fid, str):
            try:
                ident = int(fid, 16)
            except ValueError:
                self.error(where, "flow id %r is a string but not hexadecimal (Perfetto reads string ids as hex)" % fid)
                return
        else:
            self.error(where, "flow event without an integer or string id")
            return
        if not isinstance(e.get("cat"), str):
            self.error(where, "flow event without cat")
            return
        if "pid" not in e or "tid" not in e:
            self.error(where, "flow event without pid and tid")
            return
        if e["ph"] == "f" and e.get("bp") != "e":
            self.error(where, "flow end without \"bp\": \"e\" (it would bind to the next slice, not its enclosing one)")
        key = (e["cat"], e.get("name"), ident)
        flow_points.append((e["ph"], key, e["pid"], e["tid"], ns(e["ts"]), (index, where)))

    def check_nesting(self, slices):
        for (pid, tid), items in sorted(slices.items()):
            items.sort(key=lambda s: (s[0], -s[1], s[2]))
            stack = []
            for start, end, i, where in items:
                while stack and stack[-1][1] <= start:
                    stack.pop()
                if stack and end > stack[-1][1]:
                    o_start, o_end, _, o_where = stack[-1]
                    self.error(where, "slice [%d, %d] ns on pid %d tid %d partially overlaps %s [%d, %d] ns "
                               "(slices on one thread must nest)" % (start, end, pid, tid, o_where, o_start, o_end))
                    continue
                stack.append((start, end, i, where))

    def check_flows(self, points, slices):
        # Per (pid, tid): slice starts in order and the latest end among the slices up to each one, so that "some
        # slice encloses ts" is one binary search: the latest end among slices starting at or before ts exceeds ts.
        enclosing = {}
        for track, items in slices.items():
            items = sorted(items)
            latest, running = [], -1
            for item in items:
                running = max(running, item[1])
                latest.append(running)
            enclosing[track] = ([item[0] for item in items], latest)
        starts, ends = {}, defaultdict(list)  # key -> (index, where) of the start / of each end
        for ph, key, pid, tid, ts, at in points:
            where = at[1]
            if ph == "s":
                if key in starts:
                    self.error(where, "flow %r started twice (first at %s)" % (key, starts[key][1]))
                else:
                    starts[key] = at
            elif ph == "f":
                ends[key].append(at)
            begins, latest = enclosing.get((pid, tid), ([], []))
            k = bisect.bisect_right(begins, ts) - 1
            if ph in "sf" and (k < 0 or latest[k] <= ts):
                self.error(where, "flow %s at %d ns is inside no slice of pid %d tid %d: the arrow would be dropped"
                           % ("start" if ph == "s" else "end", ts, pid, tid))
        for key, at in sorted(starts.items(), key=lambda kv: kv[1][0]):
            if key not in ends:
                self.error(at[1], "flow start %r has no matching flow end (same cat, name and id)" % (key,))
        for key, ats in sorted(ends.items(), key=lambda kv: kv[1][0][0]):
            if key not in starts:
                for at in ats:
                    self.error(at[1], "flow end %r has no matching flow start (same cat, name and id)" % (key,))


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    errors = 0
    for path in argv[1:]:
        found = Checker(path).run()
        for line in found:
            print(line)
        errors += len(found)
        if not found:
            print("%s: ok" % path)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
