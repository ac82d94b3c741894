"""Attribution of a report's findings to tests (asynccheck/findings.py), on a real report (asynccheck analyze of a
committed recording) and on one fabricated from it with the ranges' paths the library writes for regions."""

import copy

from asynccheck import findings


def test_a_real_report_without_test_ranges_is_all_outside(analyzed):
    report = analyzed("nvtx_ranges.all")
    per_test, outside = findings.attribute([("r.json", report)])
    assert per_test == {}
    assert sorted(f.site["rule"] for f in outside) == sorted(s["rule"] for s in report["sites"])
    assert sum(f.count for f in outside) == sum(s["count"] for s in report["sites"])
    line = findings.describe(outside[0])
    assert "nvtx_ranges.cu:" in line and " in main: 1 call; host held " in line and ": waited " in line


def test_a_real_report_with_a_test_as_innermost_range(analyzed):
    report = analyzed("nvtx_ranges.all")
    site = report["sites"][0]
    site["nvtx_ranges"] = [{"name": "test:t.py::test_a", "domain": "asynccheck", "count": 1}]
    per_test, outside = findings.attribute([("r.json", report)])
    assert list(per_test) == ["t.py::test_a"]
    assert per_test["t.py::test_a"][0].site is site
    assert len(outside) == len(report["sites"]) - 1


def _test_range(nodeid):
    return {"domain": "asynccheck", "name": "test:" + nodeid}


def test_paths_put_findings_in_the_test_around_user_ranges(analyzed):
    report = analyzed("nvtx_ranges.all")
    site = copy.deepcopy(report["sites"][0])
    site["count"] = 5
    site["nvtx_ranges"] = [
        # A range of the program's own inside the test's: the path names the test.
        {"name": "copy_inputs", "domain": "", "count": 2,
         "path": [_test_range("t.py::test_a"), {"domain": "", "name": "copy_inputs"}]},
        # A region of the user's inside another test.
        {"name": "load", "domain": "asynccheck", "count": 1,
         "path": [_test_range("t.py::test_b"), {"domain": "asynccheck", "name": "load"}]},
        # Only a user range: outside any test, as are the 1 call in no range at all.
        {"name": "copy_inputs", "domain": "", "count": 1},
    ]
    per_test, outside = findings.attribute([("r.json", {"sites": [site]})])
    assert {t: [f.count for f in fs] for t, fs in per_test.items()} == {"t.py::test_a": [2], "t.py::test_b": [1]}
    assert [f.count for f in outside] == [2]
    assert "2 calls of the site's 5" in findings.describe(per_test["t.py::test_a"][0])


def test_reports_of_several_processes_add_up(analyzed):
    a = analyzed("nvtx_ranges.all")
    b = copy.deepcopy(a)
    a["sites"][0]["nvtx_ranges"] = [{"name": "test:t.py::test_a", "domain": "asynccheck", "count": 1}]
    b["sites"][1]["nvtx_ranges"] = [{"name": "test:t.py::test_b", "domain": "asynccheck", "count": 1}]
    per_test, _ = findings.attribute([("gw0.json", a), ("gw1.json", b)])
    assert sorted(per_test) == ["t.py::test_a", "t.py::test_b"]
    assert per_test["t.py::test_b"][0].report == "gw1.json"


def test_what_fails():
    f = lambda level, known: findings.Finding("t", {"level": level, "in_baseline": known}, 1, "r")  # noqa: E731
    assert findings.fails(f("warning", False), "warning")
    assert findings.fails(f("error", False), "warning")
    assert not findings.fails(f("note", False), "warning")
    assert findings.fails(f("note", False), "note")
    assert not findings.fails(f("error", True), "note")  # known: in the baseline
    assert not findings.fails(f("error", False), None)


def test_durations():
    assert findings.duration(27_610_000) == "27.61 ms"
    assert findings.duration(129_000) == "129.0 us"
    assert findings.duration(2_500_000_000) == "2.50 s"
    assert findings.duration(None) == "0 ns"


def test_monitoring(analyzed):
    report = analyzed("nvtx_ranges.all")
    assert findings.monitoring_off(report) is None
    report["run"]["monitoring"] = "off: no NVIDIA driver is loaded"
    assert findings.monitoring_off(report) == "off: no NVIDIA driver is loaded"
    assert findings.monitoring_stopped(report) is None
    # Stopped mid-run: something was watched, and the findings from before it count.
    report["run"]["monitoring"] = "stopped: CUPTI finalized"
    assert findings.monitoring_off(report) is None
    assert findings.monitoring_stopped(report) == "stopped: CUPTI finalized"
