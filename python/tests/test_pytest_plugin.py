"""pytest --asynccheck, in pytest subprocesses (pytester): fail-open with the real library (no GPU here), the
options, and the whole path from regions to failed tests with a stand-in for the library that writes a report
fabricated from a real one (the sites' nvtx_ranges paths naming the tests, as the library writes them)."""

import copy
import json
import os
import re

import pytest

from asynccheck import findings

PLUGIN = ("-p", "asynccheck.pytest_plugin")
TESTS = """
def test_stall(): pass
def test_clean(): pass
def test_known(): pass
def test_other(): pass
"""

# conftest.py of the session under test: the library's load replaced by a stand-in in Python. Its report is the
# template's sites whose test region this process opened (known if the baseline option lists them) (each worker writes its own tests' findings), the sites in
# no test written by the only process or gw0; and the regions it saw, in order, beside it.
FAKE_CONFTEST = r'''
import json, os
import asynccheck.pytest_plugin as plugin

def fake_load(path, options):
    opts = dict(i.split("=", 1) for i in options.split(":") if "=" in i)
    out = opts["json"]
    known = set()
    if "baseline" in opts:  # fingerprints, one a line, as the library matches them (docs/baselines.md)
        with open(opts["baseline"]) as f:
            known = set(f.read().splitlines()[1:])
    seen, log = set(), []
    def push(name):
        seen.add(name.decode()); log.append("push " + name.decode()); return len(log)
    def pop():
        log.append("pop"); return 0
    def report_now():
        with open(os.environ["FAKE_TEMPLATE"]) as f:
            report = json.load(f)
        first = os.environ.get("PYTEST_XDIST_WORKER", "gw0") == "gw0"
        def here(site):
            tests = [(e.get("path") or [e])[0]["name"] for e in site.get("nvtx_ranges") or []]
            return any(t in seen for t in tests) if tests else first
        report["sites"] = [s for s in report["sites"] if here(s)]
        for s in report["sites"]:
            s["in_baseline"] = s["in_baseline"] or s["fingerprint"] in known
        with open(out, "w") as f:
            json.dump(report, f)
        with open(out + ".regions", "w") as f:
            f.write("\n".join(log))
        return 0
    class Handle: pass
    h = Handle()
    h.asynccheck_region_push, h.asynccheck_region_pop, h.asynccheck_report_now = push, pop, report_now
    return h, []

plugin._load_library = fake_load
'''


def _entry(nodeid, count=1):
    # An outermost range: no path (docs/report-format.md), as the library writes it.
    return {"name": "test:" + nodeid, "domain": "asynccheck", "count": count}


@pytest.fixture
def template(analyzed, tmp_path):
    """A report from a real one: its 4 sites given to tests (one known: in the baseline), or to none."""
    report = analyzed("nvtx_ranges.all")
    by_rule = {s["rule"]: s for s in report["sites"]}
    stall = by_rule["copy-async-pageable-h2d"]  # error
    stall["nvtx_ranges"] = [dict(_entry("test_attr.py::test_stall"), path=[
        {"domain": "asynccheck", "name": "test:test_attr.py::test_stall"}, {"domain": "", "name": "copy_inputs"}],
        name="copy_inputs", domain="")]
    by_rule["explicit-sync-device"]["nvtx_ranges"] = [_entry("test_attr.py::test_other")]  # note
    known = by_rule["legacy-stream-serialization"]  # warning, in the baseline
    known["nvtx_ranges"] = [_entry("test_attr.py::test_known")]
    known["in_baseline"] = True
    outside = by_rule["copy-async-pageable-d2h"]  # error, in no test
    outside.pop("nvtx_ranges", None)
    outside.pop("nvtx_range", None)
    for site in (stall, by_rule["explicit-sync-device"], known):  # the innermost range of most, as the library says
        site["nvtx_range"] = site["nvtx_ranges"][0]["name"]
    path = tmp_path / "template.json"
    path.write_text(json.dumps(report))
    no_outside = copy.deepcopy(report)
    no_outside["sites"] = [s for s in no_outside["sites"] if s is not outside and s["rule"] != outside["rule"]]
    (tmp_path / "template-tests-only.json").write_text(json.dumps(no_outside))
    return tmp_path


@pytest.fixture
def session(pytester, monkeypatch, template):
    pytester.makepyfile(test_attr=TESTS)
    pytester.makeconftest(FAKE_CONFTEST)
    monkeypatch.setenv("FAKE_TEMPLATE", str(template / "template-tests-only.json"))
    return pytester


def _asynccheck_lines(result):
    return [l for l in result.outlines + result.errlines if l.startswith("asynccheck:")]


def _section(result):
    text = "\n".join(result.outlines)
    return text[text.index("= asynccheck ="):]


def test_findings_listed_per_test_and_nothing_fails_without_fail_on(session):
    out = session.path / "reports"
    r = session.runpytest_subprocess(*PLUGIN, "--asynccheck", "--asynccheck-output=%s" % out)
    r.assert_outcomes(passed=4)
    assert r.ret == 0
    section = _section(r)
    assert re.search(r"^test_attr.py::test_stall\n    error \[copy-async-pageable-h2d\] cudaMemcpyAsync at \S*nvtx_ranges.cu:51 "
                     r"in main: 1 call; host held \S+ ms: waited \S+ ms, own \S+ us$", section, re.M), section
    assert "test_attr.py::test_clean" not in section
    assert re.search(r"^test_attr.py::test_known\n    warning \[legacy-stream-serialization\].*\(in baseline\)$", section,
                     re.M), section
    # The regions: one per test, around its setup, call and teardown, in the order the tests ran.
    [regions] = [p for p in os.listdir(str(out)) if p.endswith(".regions")]
    assert (out / regions).read_text().splitlines() == [
        x for t in ("stall", "clean", "known", "other") for x in ("push test:test_attr.py::test_%s" % t, "pop")]


def test_fail_on_fails_exactly_the_tests_with_new_findings(session):
    junit = session.path / "junit.xml"
    r = session.runpytest_subprocess(*PLUGIN, "--asynccheck-fail-on=warning", "--junitxml=%s" % junit)
    r.assert_outcomes(passed=4, errors=1)
    assert r.ret == 1
    r.stdout.fnmatch_lines(["*ERROR at teardown of test_stall*", "asynccheck: 1 new finding at warning or above*",
                            "  error [[]copy-async-pageable-h2d[]] cudaMemcpyAsync at *nvtx_ranges.cu:51*",
                            "ERROR test_attr.py::test_stall*"])
    assert "test_attr.py::test_stall FAILED by asynccheck" in _section(r)
    assert "test_known FAILED" not in r.stdout.str() and "test_other FAILED" not in r.stdout.str()
    xml = junit.read_text()
    assert re.search(r'<testcase classname="test_attr" name="test_stall"[^>]*><error message="[^"]*teardown', xml), xml
    assert xml.count("<error") == 1


def test_fail_on_note_fails_the_note_too_but_never_the_baseline(session):
    r = session.runpytest_subprocess(*PLUGIN, "--asynccheck-fail-on=note")
    r.assert_outcomes(passed=4, errors=2)
    r.stdout.fnmatch_lines(["ERROR test_attr.py::test_stall*"])
    r.stdout.fnmatch_lines(["ERROR test_attr.py::test_other*"])
    assert "ERROR test_attr.py::test_known" not in r.stdout.str()


def test_a_finding_outside_any_test_fails_the_session_only(session, monkeypatch, template):
    monkeypatch.setenv("FAKE_TEMPLATE", str(template / "template.json"))
    r = session.runpytest_subprocess(*PLUGIN, "--asynccheck-fail-on=error")
    r.assert_outcomes(passed=4, errors=1)  # test_stall's error; the other error is in no test
    assert r.ret == 1
    assert "outside any test\n    error [copy-async-pageable-d2h]" in _section(r)
    r.stdout.fnmatch_lines(["asynccheck: 1 new finding outside any test at error or above: the session fails"])


def test_xdist_workers_reports_merged(session):
    pytest.importorskip("xdist")
    r = session.runpytest_subprocess(*PLUGIN, "-p", "xdist.plugin", "-n", "2", "--asynccheck-fail-on=warning")
    r.assert_outcomes(passed=4, errors=1)
    assert r.ret == 1
    section = _section(r)
    assert section.count("[copy-async-pageable-h2d]") == 1, section  # the test's worker's report only
    assert "test_attr.py::test_stall FAILED by asynccheck" in section
    assert "test_attr.py::test_known\n" in section and "test_attr.py::test_other\n" in section


def test_save_baseline_then_nothing_is_new(session, tmp_path):
    baseline = tmp_path / "asynccheck.baseline"
    r = session.runpytest_subprocess(*PLUGIN, "--asynccheck-save-baseline=%s" % baseline)
    assert r.ret == 0, r.stdout.str()
    assert baseline.is_file(), r.stdout.str()
    r.stdout.fnmatch_lines(["asynccheck: baseline written to *"])
    # With it, the same findings are known: none fails.
    r = session.runpytest_subprocess(*PLUGIN, "--asynccheck-baseline=%s" % baseline, "--asynccheck-fail-on=note")
    assert r.ret == 0, r.stdout.str()
    r.assert_outcomes(passed=4)


# Fail-open and options, with the real library: monitoring is off without a GPU.
needs_no_gpu = pytest.mark.skipif(os.path.exists("/proc/driver/nvidia/version"),
                                  reason="an NVIDIA driver here: monitoring would be on")


@needs_no_gpu
@pytest.mark.parametrize("xdist", [False, True])
def test_no_gpu_fails_open_with_one_line(pytester, xdist):
    if xdist:
        pytest.importorskip("xdist")
    pytester.makepyfile(test_a=TESTS)
    extra = ("-p", "xdist.plugin", "-n", "2") if xdist else ()
    r = pytester.runpytest_subprocess(*PLUGIN, *extra, "--asynccheck", "--asynccheck-fail-on=note")
    r.assert_outcomes(passed=4)
    assert r.ret == 0
    lines = _asynccheck_lines(r)
    assert len(lines) == 1, lines
    assert lines[0].startswith("asynccheck: monitoring off: "), lines


def test_library_not_found_fails_open_with_one_line(pytester, monkeypatch):
    monkeypatch.setenv("ASYNCCHECK_LIBRARY", "/nonexistent/libasynccheck.so")
    pytester.makepyfile(test_a=TESTS)
    r = pytester.runpytest_subprocess(*PLUGIN, "--asynccheck")
    r.assert_outcomes(passed=4)
    assert _asynccheck_lines(r) == ["asynccheck: monitoring off: libasynccheck.so not found: ASYNCCHECK_LIBRARY="
                                    "/nonexistent/libasynccheck.so is not a file; the tests run unchecked"]


@pytest.mark.parametrize("args,message", [
    (["--asynccheck-fail-on=fatal"], "asynccheck: --asynccheck-fail-on: 'fatal' is not a level (note, warning or error)"),
    (["--asynccheck-baseline=/nonexistent/b"], "asynccheck: --asynccheck-baseline: cannot read '/nonexistent/b': *"),
    (["--asynccheck", "--asynccheck-options=json=x.json"], "asynccheck: --asynccheck-options: 'json' is not accepted *"),
    (["--asynccheck", "--asynccheck-options=no_such_option=1"],
     "asynccheck: the library did not start: ERROR: ASYNCCHECK_OPTIONS: *no_such_option*"),
])
def test_bad_options_stop_the_session(pytester, args, message):
    pytester.makepyfile(test_a=TESTS)
    r = pytester.runpytest_subprocess(*PLUGIN, *args)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["ERROR: " + message])


def test_the_plugin_is_off_without_its_options(pytester):
    pytester.makepyfile(test_a=TESTS)
    r = pytester.runpytest_subprocess(*PLUGIN)
    r.assert_outcomes(passed=4)
    assert _asynccheck_lines(r) == []
