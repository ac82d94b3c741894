"""bench.py's report on synthetic runs (`bench.py fake`): the table, and with --baseline the paired difference
against the baseline. usage: test_report.py PATH/TO/bench.py"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.dom.minidom

BENCH = None


def bench(*args):
    return subprocess.run([sys.executable, BENCH, *args], capture_output=True, text=True, timeout=60)


class Report(unittest.TestCase):
    def tmp(self, prefix):
        d = tempfile.mkdtemp(prefix=prefix)
        self.addCleanup(shutil.rmtree, d, True)
        return d

    def fake_report(self, *fake_args):
        out = self.tmp("bench-report-")
        r = bench("fake", "--out", out, *fake_args)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = bench("report", "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        return out, r.stdout

    def test_without_a_baseline_no_section_and_two_bars(self):
        out, text = self.fake_report()
        self.assertIn("per call, 1 thread (ns)", text)
        self.assertNotIn("against the baseline", text)
        svg = open(os.path.join(out, "overhead.svg")).read()
        xml.dom.minidom.parseString(svg)
        self.assertNotIn("#2ca02c", svg)

    def test_baseline_paired_in_the_same_rounds(self):
        # fake's baseline costs 60 ns a call more than asynccheck (1.5 times that with 8 threads) and 30 MiB more.
        out, text = self.fake_report("--baseline", "/old/libasynccheck.so@log_file=/dev/null")
        self.assertIn("against the baseline /old/libasynccheck.so (0000000), options log_file=/dev/null, in the "
                      "same rounds:", text)
        for name, expect in (("per call, 1 thread (ns)", -60), ("per call, 8 threads (ns)", -90)):
            line = next(l for l in text.splitlines() if l.strip().startswith(name + ": asynccheck - baseline"))
            m = re.search(r"asynccheck - baseline ([+-][\d,]+) \[", line)
            self.assertIsNotNone(m, line)
            d = int(m.group(1).replace(",", ""))
            self.assertLess(d, 0, line)  # no difference would be a failure too
            self.assertAlmostEqual(d, expect, delta=45)
            self.assertIn("(n 7,", line)
        rss = next(l for l in text.splitlines() if l.strip().startswith("peak RSS, 1M calls (MiB): asynccheck"))
        self.assertIn("asynccheck - baseline -30.0", rss)
        md = open(os.path.join(out, "table.md")).read()
        self.assertIn("- per call, 8 threads (ns): asynccheck - baseline", md)
        summary = open(os.path.join(out, "summary.csv")).read()
        self.assertIn(",percall1,ns,7,baseline,", summary)
        svg = open(os.path.join(out, "overhead.svg")).read()
        xml.dom.minidom.parseString(svg)
        self.assertEqual(svg.count('fill="#2ca02c"'), 3)  # a bar for each thread count and the legend's box
        self.assertIn("baseline 0000000", svg)

    def test_a_missing_baseline_is_named(self):
        build = self.tmp("bench-build-")
        for f in ("bench/api_calls", "bench/startup", "bench/libcupti_floor.so", "lib/libasynccheck.so"):
            os.makedirs(os.path.join(build, os.path.dirname(f)), exist_ok=True)
            open(os.path.join(build, f), "w").close()
        r = bench("run", "--build", build, "--out", self.tmp("bench-out-"), "--baseline", "/no/such/lib.so@x=1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("bench: --baseline: no such library: /no/such/lib.so (expected LIB[@OPTIONS]", r.stderr)


if __name__ == "__main__":
    BENCH = sys.argv.pop(1)
    unittest.main()
