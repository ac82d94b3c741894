"""pytest --asynccheck: the session under asynccheck, each finding attributed to the test it happened in.

Registered as the pytest11 entry point `asynccheck` when the package is installed; otherwise
`pytest -p asynccheck.pytest_plugin`. docs/python.md says how to use it; this says why it is built this way.

Setup (pytest_configure, tryfirst): the library is loaded into the pytest process itself, with ctypes and
RTLD_GLOBAL, after ASYNCCHECK_OPTIONS is set for it (read once, by its start when it is loaded: the same start as
under LD_PRELOAD, interpose/preload.cpp's constructor). Chosen over re-executing pytest under LD_PRELOAD because it
keeps the process: a pytest started by pytest.main() from another program, an IDE's runner or a wrapper script would
run a second time, with side effects of conftest.py and plugins already done once; and xdist workers, which are
separate processes, set themselves up the same way. What LD_PRELOAD would add, the _exit/raise shims and exit codes
applied by the library, the plugin does not use: it calls asynccheck_report_now() at the session's end and decides
the outcome itself. The cost: CUDA initialized before pytest_configure (by a conftest.py at import; importing torch
or cupy does not) is watched from then on only; `asynccheck -- pytest` is the way for such a suite.

ASYNCCHECK_OPTIONS is restored as soon as the library has read it, so that the tests' own environment, and the
programs they start, are as without the plugin. The library's start may say something on stderr (monitoring off:
no GPU): that is caught while it loads and said again as the session header's one line, since pytest's capture would
otherwise hold it until the end.

Each test runs inside region("test:<nodeid>") (setup, call and teardown). At the end each process that ran tests
calls asynccheck_report_now(), and the process that reports (the only one, or xdist's controller, which gets each
worker's report path through workeroutput and loads no library itself) reads the JSON reports and attributes the
findings (findings.py).

Failing tests after the fact: a test's findings are known only when the report is written, after every test has
reported. The plugin then logs, in pytest_sessionfinish (tryfirst: before junitxml writes its file and before the
terminal's summary), one more report for each test that introduced new findings at --asynccheck-fail-on or above:
failed, at teardown. That is pytest's own way of saying "the test body passed and something after it failed" (a
fixture's teardown check): the terminal counts it as an error ("ERROR at teardown of ..."), junitxml records an
<error> for the test, --maxfail's count and the session's exit status (1) follow. A failed "call" report instead
would count the test twice, passed and failed.
"""

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from . import _locate, _native, findings
from .region import region

_PLUGIN = "asynccheck-session"
# Options the plugin sets itself, or that it replaces by its own flags: not accepted in --asynccheck-options.
_OWN_OPTIONS = {
    "json": "the plugin writes the JSON report it reads (--asynccheck-output keeps it)",
    "handoff": "set by the asynccheck command only",
    "baseline": "use --asynccheck-baseline",
    "save_baseline": "use --asynccheck-save-baseline",
    "fail_on": "use --asynccheck-fail-on",
    "error_exitcode": "the plugin fails the tests themselves (--asynccheck-fail-on)",
    "require_monitoring": "the plugin fails open where there is no GPU",
}


def pytest_addoption(parser):
    g = parser.getgroup("asynccheck", "asynccheck: CUDA calls that block the host thread (docs/python.md)")
    g.addoption("--asynccheck", action="store_true", default=False,
                help="run the session under asynccheck and list each test's findings")
    g.addoption("--asynccheck-baseline", metavar="FILE", default=None,
                help="findings listed in this baseline (docs/baselines.md) are known: they never fail a test")
    g.addoption("--asynccheck-fail-on", metavar="LEVEL", default=None,
                help="fail the tests that introduced new findings of this level or above: note, warning or error "
                     "(default with --asynccheck-baseline: warning; without either, nothing fails)")
    g.addoption("--asynccheck-save-baseline", metavar="FILE", default=None,
                help="write the session's findings as a baseline file (needs the asynccheck command)")
    g.addoption("--asynccheck-output", metavar="DIR", default=None,
                help="keep the JSON reports here, one per process (default: a temporary directory, removed)")
    g.addoption("--asynccheck-options", metavar="NAME=VALUE:...", default="",
                help="more library options, as in ASYNCCHECK_OPTIONS (threshold=1ms:suppressions=FILE); "
                     "asynccheck --help lists them")


def _usage(message):
    return pytest.UsageError("asynccheck: " + message)


def _check_options(config):
    """The plugin's options, checked before anything runs; UsageError names what is wrong."""
    o = config.option
    fail_on = o.asynccheck_fail_on
    if fail_on is not None and fail_on not in findings.LEVELS:
        raise _usage("--asynccheck-fail-on: '%s' is not a level (note, warning or error)" % fail_on)
    if fail_on is None and o.asynccheck_baseline:
        fail_on = "warning"  # the library's fail_on default
    if o.asynccheck_baseline:
        try:
            with open(o.asynccheck_baseline, "rb"):
                pass
        except OSError as e:
            raise _usage("--asynccheck-baseline: cannot read '%s': %s" % (o.asynccheck_baseline, e.strerror))
    items = [i for i in o.asynccheck_options.split(":") if i]
    for item in items:
        name = item.split("=", 1)[0].strip().replace("-", "_")
        if name in _OWN_OPTIONS:
            raise _usage("--asynccheck-options: '%s' is not accepted here: %s" % (name, _OWN_OPTIONS[name]))
    for flag, path in (("--asynccheck-baseline", o.asynccheck_baseline), ("--asynccheck-output", o.asynccheck_output)):
        if path and '"' in path and "'" in path:
            raise _usage("%s: '%s' holds both quote characters, which ASYNCCHECK_OPTIONS cannot carry" % (flag, path))
    return fail_on, items


def _item(name, value):
    """name=value for ASYNCCHECK_OPTIONS, the value quoted when it holds a separator (as cli/run.cpp item_value)."""
    if not any(c in value for c in ": \t\n\"'"):
        return "%s=%s" % (name, value)
    q = "'" if '"' in value else '"'
    return "%s=%s%s%s" % (name, q, value, q)


def _enabled(config):
    o = config.option
    return bool(o.asynccheck or o.asynccheck_baseline or o.asynccheck_fail_on or o.asynccheck_save_baseline)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    if not _enabled(config) or config.pluginmanager.has_plugin(_PLUGIN):
        return
    fail_on, items = _check_options(config)
    config.pluginmanager.register(Session(config, fail_on, items), _PLUGIN)


def _load_library(path, options):
    """Loads the library (which starts monitoring) with `options` as its ASYNCCHECK_OPTIONS; returns (handle or
    None, the lines it wrote on stderr while starting)."""
    old = os.environ.get("ASYNCCHECK_OPTIONS")
    os.environ["ASYNCCHECK_OPTIONS"] = options
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            handle = ctypes.CDLL(path, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
            error = None
        except OSError as e:
            handle, error = None, str(e)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            if old is None:
                del os.environ["ASYNCCHECK_OPTIONS"]
            else:
                os.environ["ASYNCCHECK_OPTIONS"] = old
        caught.seek(0)
        lines = caught.read().decode("utf-8", "replace").splitlines()
    if error is not None:
        lines.append("asynccheck: monitoring off: cannot load %s: %s; the tests run unchecked" % (path, error))
    return handle, lines


class Session:
    """The plugin's state for one pytest process: the only one, an xdist worker or xdist's controller."""

    def __init__(self, config, fail_on, items):
        self.config = config
        self.fail_on = fail_on
        self.items = items
        self.header = []  # lines for the session's header (the library's start)
        self.notes = []  # lines for the summary
        self.region = None  # the open test's region
        self.loaded = False  # this process loaded the library and reports
        self.report_paths = []  # the JSON reports to read (this process's, or the workers')
        self.worker_lines = []  # lines the workers' starts wrote
        self.per_test = {}
        self.outside = []
        self.failed_tests = []
        self.locations = {}  # nodeid -> the location of its reports, for the ones the plugin adds
        self.checked = False  # some report was read with monitoring on
        self.worker = getattr(config, "workerinput", None)
        self.controller = self.worker is None and config.getoption("dist", "no") != "no" and bool(
            config.getoption("tx", None))
        self.keep = config.option.asynccheck_output
        if self.worker is not None:
            self.dir = self.worker.get("asynccheck_dir")
        else:
            self.dir = self._make_dir()
        if not self.controller and self.dir:
            self._start()

    def _make_dir(self):
        if self.keep:
            os.makedirs(self.keep, exist_ok=True)
            return os.path.abspath(self.keep)
        return tempfile.mkdtemp(prefix="asynccheck-pytest.")

    def _start(self):
        if _native.library() is not None:
            # LD_PRELOAD, the asynccheck command or CUDA_INJECTION64_PATH came first: their options and report.
            self.header.append("asynccheck: the library was loaded before pytest (LD_PRELOAD, the asynccheck command "
                               "or CUDA_INJECTION64_PATH): tests are labelled with regions, the report is that "
                               "loader's; pytest --asynccheck alone attributes findings to tests")
            return
        try:
            path = _locate.find_library()
        except _locate.NotFound as e:
            self.header.append("asynccheck: monitoring off: %s; the tests run unchecked" % e)
            return
        name = "asynccheck-%s-%d.json" % (self.worker["workerid"] if self.worker else "main", os.getpid())
        self.report = os.path.join(self.dir, name)
        options = [_item("json", self.report), "summary=0", "overwrite=1"]
        if self.config.option.asynccheck_baseline:
            options.append(_item("baseline", os.path.abspath(self.config.option.asynccheck_baseline)))
        # The plugin's own items last: later items win, so none of the user's (however they are spelled or separated)
        # can move the report the plugin reads.
        handle, lines = _load_library(path, ":".join(self.items + options))
        errors = [l for l in lines if "asynccheck: ERROR:" in l]
        if errors:  # a bad --asynccheck-options item: checking nothing would pass a CI job, so it is an error
            raise _usage("the library did not start: " + " ".join(l.replace("asynccheck: ", "", 1) for l in errors))
        self.header.extend(lines)
        if handle is None:
            return
        _native.use(handle)
        self.loaded = True

    # The session's header: the one line that says why monitoring is off, if it is.
    def pytest_report_header(self, config):
        return self.header

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if self.controller:
            yield
            return
        with region(findings.TEST_PREFIX + item.nodeid):
            yield

    def pytest_runtest_logreport(self, report):
        self.locations.setdefault(report.nodeid, report.location)

    # xdist's controller: where each worker writes, and what it wrote.
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        node.workerinput["asynccheck_dir"] = self.dir

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        out = (getattr(node, "workeroutput", None) or {}).get("asynccheck") or {}
        if out.get("report"):
            self.report_paths.append(out["report"])
        self.worker_lines.extend(out.get("lines", []))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        if self.loaded:
            code = _native.report_now()
            if code == 2:
                self.notes.append("asynccheck: ERROR: the report could not be written (said above)")
            if os.path.isfile(self.report):
                self.report_paths.append(self.report)
            elif code == 0:  # written, but not where the plugin reads: nothing was checked, which must not pass quietly
                self.notes.append("asynccheck: ERROR: no report at %s: the tests' findings are unknown" % self.report)
        if self.worker is not None:  # the controller reads it
            self.config.workeroutput["asynccheck"] = {"report": self.report_paths[0] if self.report_paths else None,
                                                      "lines": self.header}
            return
        self._read()
        self._fail_tests(session)
        self._save_baseline()

    def _read(self):
        reports = []
        for line in self.worker_lines:  # the workers' start lines: each said once
            if line not in self.header:
                self.header.append(line)
        if self.controller:
            self.notes.extend(self.header)
        for path in sorted(set(self.report_paths)):
            try:
                report = findings.load(path)
            except (OSError, ValueError) as e:
                self.notes.append("asynccheck: ERROR: cannot read the report %s: %s" % (path, e))
                continue
            if findings.monitoring_off(report) is None:
                self.checked = True
            reports.append((path, report))
        self.per_test, self.outside = findings.attribute(reports)

    def _fail_tests(self, session):
        if self.fail_on is None:
            return
        from _pytest.reports import TestReport  # pytest's own report class, as its runner makes them

        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        for nodeid, fs in self.per_test.items():
            bad = [f for f in fs if findings.fails(f, self.fail_on)]
            if not bad:
                continue
            self.failed_tests.append(nodeid)
            text = "asynccheck: %d new finding%s at %s or above in this test (--asynccheck-fail-on=%s):\n%s" % (
                len(bad), "" if len(bad) == 1 else "s", self.fail_on, self.fail_on,
                "\n".join("  " + findings.describe(f, str(self.config.rootpath)) for f in bad))
            location = self.locations.get(nodeid) or (nodeid.split("::")[0], None, nodeid)
            rep = TestReport(nodeid, location, {}, "failed", text, "teardown", user_properties=[])
            if tr is not None and len(self.failed_tests) == 1:
                tr.ensure_newline()
                tr.write_line("asynccheck: tests that introduced new findings:")
            self.config.hook.pytest_runtest_logreport(report=rep)
        outside_bad = [f for f in self.outside if findings.fails(f, self.fail_on)]
        if self.failed_tests or outside_bad:
            if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if outside_bad:
            self.notes.append("asynccheck: %d new finding%s outside any test at %s or above: the session fails" % (
                len(outside_bad), "" if len(outside_bad) == 1 else "s", self.fail_on))

    def _save_baseline(self):
        target = self.config.option.asynccheck_save_baseline
        if not target:
            return
        if not self.report_paths:
            self.notes.append("asynccheck: ERROR: no report to save a baseline from")
            return
        try:
            command = _locate.find_command()
        except _locate.NotFound as e:
            self.notes.append("asynccheck: ERROR: cannot save the baseline: %s" % e)
            return
        cmd = [command, "merge", "--save-baseline=" + target, "--overwrite", "--log-file=" + os.path.join(self.dir, "merge.txt"),
               "--"]
        r = subprocess.run(cmd + sorted(set(self.report_paths)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        if r.returncode != 0:
            self.notes.append("asynccheck: ERROR: asynccheck merge could not save the baseline: %s" % r.stdout.strip())
        else:
            self.notes.append("asynccheck: baseline written to %s" % target)

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        if self.controller or self.worker is None:
            if not self.per_test and not self.outside and not self.notes and not self.checked:
                return
            tr.write_sep("=", "asynccheck")
            root = str(self.config.rootpath)
            for nodeid, fs in self.per_test.items():
                mark = " FAILED by asynccheck" if nodeid in self.failed_tests else ""
                tr.write_line("%s%s" % (nodeid, mark))
                for f in fs:
                    tr.write_line("    " + findings.describe(f, root))
            if self.outside:
                tr.write_line("outside any test")
                for f in self.outside:
                    tr.write_line("    " + findings.describe(f, root))
            if self.checked and not self.per_test and not self.outside:
                tr.write_line("asynccheck: no findings")
            for line in self.notes:
                tr.write_line(line)
            if self.keep and self.report_paths:
                tr.write_line("asynccheck: reports in %s (asynccheck merge combines them)" % self.dir)

    def pytest_unconfigure(self, config):
        if not self.keep and self.dir and self.worker is None:
            shutil.rmtree(self.dir, ignore_errors=True)
