#!/usr/bin/env python3
"""Overhead benchmarks of asynccheck (docs/performance.md). Python standard library only.

    bench.py run    --build BUILD_DIR --out DIR [--quick] [--baseline LIB[@OPTIONS]]
                                                            measure: DIR/raw.csv (one row per process), meta.json
    bench.py report --out DIR                               DIR/raw.csv -> the table (stdout, table.txt, table.md),
                                                            summary.csv and overhead.svg
    bench.py all    --build BUILD_DIR --out DIR [--quick] [--baseline LIB[@OPTIONS]]
                                                            both (what scripts/bench.sh runs)
    bench.py fake   --out DIR                               synthetic raw.csv/meta.json, to test `report` anywhere

Every figure compares processes of the same run: the configurations (bare, the CUPTI floor, asynccheck; for the
PyTorch loop also torch.profiler) are interleaved round by round in rotating order, and each figure is a median
with its spread (min..max). Differences ("added") are medians of per-round paired differences.

--baseline runs another build of the library (an earlier commit, say) in the same rounds of the per-call
benchmarks, so that "no worse than before" is a paired difference of one run, not two runs' figures compared: the
report adds what the build measured costs against it, per call and in peak memory.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from xml.sax.saxutils import escape

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = ("bare", "floor", "asynccheck")
MIB = 1024.0

# What a run measures, by mode. Calls are per thread.
PLANS = {
    "full": dict(calls1=1_000_000, reps1=7, threads8=8, calls8=125_000, reps8=7, large=10_000_000, reps_large=1,
                 startup_reps=15, torch_reps=5, torch_launch_steps=400, torch_gpu_steps=100, torch_warmup=30,
                 torch_launch_batch=128, torch_gpu_batch=1024,
                 budget_s=480),
    "quick": dict(calls1=200_000, reps1=3, threads8=8, calls8=25_000, reps8=3, large=2_000_000, reps_large=1,
                  startup_reps=5, torch_reps=3, torch_launch_steps=200, torch_gpu_steps=40, torch_warmup=20,
                  torch_launch_batch=128, torch_gpu_batch=1024,
                  budget_s=200),
}
# Each section stops starting new rounds once this fraction of the budget is spent (the 10M-call runs come last
# and keep the rest).
SECTION_CUTOFF = {"percall1": 0.30, "percall8": 0.52, "startup": 0.57, "torch": 0.77, "large": 1.0}
TIMEOUT_S = {"verify": 60, "percall1": 150, "percall8": 150, "startup": 30, "torch": 180, "large": 300}

RAW_FIELDS = ["bench", "config", "round", "order", "rc", "timed_out", "valid", "wall_ns", "max_rss_kb",
              "threads", "calls", "timed_ns", "ns_per_call", "prog_wall_ns", "prog_rss_kb", "minflt_per_kcall",
              "launch_steps_per_s", "gpu_steps_per_s", "note"]


def human_calls(n):
    n = int(n)
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def parse_result(text):
    """The last 'RESULT k=v ...' line as a dict, {'SKIP': reason} for a SKIP line, or None."""
    found = None
    for line in text.splitlines():
        if line.startswith("RESULT "):
            found = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
        elif line.startswith("SKIP"):
            found = {"SKIP": line[4:].strip()}
    return found


# ---------------------------------------------------------------------------------------------------------------
# Measuring


class Runner:
    def __init__(self, build, out, plan, mode):
        self.build = build
        self.out = out
        self.plan = plan
        self.mode = mode
        self.logs = os.path.join(out, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.t0 = time.monotonic()
        self.budget = float(plan["budget_s"])
        self.rows = []
        self.api_calls = os.path.join(build, "bench", "api_calls")
        self.startup = os.path.join(build, "bench", "startup")
        self.floor_lib = os.path.join(build, "bench", "libcupti_floor.so")
        self.asynccheck_lib = os.path.join(build, "lib", "libasynccheck.so")
        self.baseline_lib, self.baseline_options = None, ""  # --baseline
        self.train = os.path.join(HERE, "train.py")
        self.python = os.environ.get("BENCH_PYTHON") or sys.executable or "python3"
        base = dict(os.environ)
        for k in ("LD_PRELOAD", "CUDA_INJECTION64_PATH", "ASYNCCHECK_OPTIONS", "CUPTI_FLOOR_VERBOSE"):
            base.pop(k, None)
        base["PYTHONUNBUFFERED"] = "1"
        self.base_env = base

    def elapsed(self):
        return time.monotonic() - self.t0

    def env_for(self, config, extra=None):
        env = dict(self.base_env)
        if config == "floor":
            env["LD_PRELOAD"] = self.floor_lib
        elif config == "asynccheck":
            env["LD_PRELOAD"] = self.asynccheck_lib
            env["ASYNCCHECK_OPTIONS"] = "summary=0"
        elif config == "baseline":
            # Its own options only: an earlier build may not know summary=0 (it would stop on an unknown option).
            env["LD_PRELOAD"] = self.baseline_lib
            if self.baseline_options:
                env["ASYNCCHECK_OPTIONS"] = self.baseline_options
        if extra:
            env.update(extra)
        return env

    def spawn(self, tag, argv, env, timeout):
        """Runs argv; returns (rc, timed_out, wall_ns, max_rss_kb, stdout, stderr). Wall time and peak RSS come
        from the parent (os.wait4), so they cover the whole process: start-up, main, exit handlers."""
        out_path = os.path.join(self.logs, tag + ".out")
        err_path = os.path.join(self.logs, tag + ".err")
        timed_out = [False]
        with open(out_path, "wb") as fo, open(err_path, "wb") as fe:
            t = time.perf_counter_ns()
            p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe,
                                 start_new_session=True)

            def kill():
                timed_out[0] = True
                try:
                    os.killpg(p.pid, signal.SIGKILL)  # the child's own process group (start_new_session)
                except ProcessLookupError:
                    pass

            timer = threading.Timer(timeout, kill)
            timer.start()
            try:
                _, status, ru = os.wait4(p.pid, 0)
            finally:
                timer.cancel()
            wall = time.perf_counter_ns() - t
            rc = os.waitstatus_to_exitcode(status)
            p.returncode = rc
        with open(out_path, errors="replace") as f:
            stdout = f.read()
        with open(err_path, errors="replace") as f:
            stderr = f.read()
        return rc, timed_out[0], wall, ru.ru_maxrss, stdout, stderr

    def measure(self, bench, config, rnd, order, argv, extra_env=None, timeout=None):
        tag = f"{bench}.{config}.{rnd}"
        env = self.env_for("bare" if config == "profiler" else config, extra_env)
        timeout = timeout or TIMEOUT_S[bench]
        rc, timed_out, wall, rss, stdout, stderr = self.spawn(tag, argv, env, timeout)
        res = parse_result(stdout) or {}
        notes = []
        if timed_out:
            notes.append(f"killed after {timeout} s")
        elif rc != 0:
            notes.append(f"exit code {rc}")
        if "SKIP" in res:
            notes.append("SKIP " + res["SKIP"])
        elif not res and rc == 0:
            notes.append("no RESULT line")
        for line in stderr.splitlines():
            # Our tools' own lines: under summary=0 asynccheck prints nothing unless monitoring is off or an
            # option is bad; the floor prints only errors.
            if line.startswith("asynccheck:") or line.startswith("cupti_floor:"):
                notes.append(line.strip()[:160])
        tool_error = any(("monitoring off" in n or "ERROR" in n) for n in notes)
        valid = rc == 0 and not timed_out and bool(res) and "SKIP" not in res and not tool_error
        row = dict(bench=bench, config=config, round=rnd, order=order, rc=rc, timed_out=int(timed_out),
                   valid=int(valid), wall_ns=wall, max_rss_kb=rss, threads=res.get("threads", ""),
                   calls=res.get("calls", ""), timed_ns=res.get("timed_ns", ""),
                   ns_per_call=res.get("ns_per_call", ""), prog_wall_ns=res.get("wall_ns", ""),
                   prog_rss_kb=res.get("max_rss_kb", ""),
                   minflt_per_kcall=res.get("minflt_per_kcall", ""), launch_steps_per_s=res.get("launch_steps_per_s", ""),
                   gpu_steps_per_s=res.get("gpu_steps_per_s", ""), note="; ".join(notes))
        self.rows.append(row)
        shown = res.get("ns_per_call") or "/".join(res[k] for k in ("launch_steps_per_s", "gpu_steps_per_s")
                                                   if k in res)
        status = "ok" if valid else "INVALID (" + row["note"] + ")"
        print(f"  [{self.elapsed():6.1f}s] {tag:<28} wall {wall / 1e9:7.3f} s  rss {rss / MIB:8.1f} MiB  "
              f"{shown:>10}  {status}", file=sys.stderr, flush=True)
        return row, res

    def interleave(self, bench, configs, reps, argv, extra_env=None, first_done=False):
        """reps rounds; round r runs the configurations rotated by r. Stops starting rounds past the section's
        share of the time budget (the rounds done so far are kept). first_done: round 0's first run was made."""
        cutoff = SECTION_CUTOFF[bench] * self.budget
        for r in range(reps):
            if r > 0 and self.elapsed() > cutoff:
                print(f"  {bench}: time budget: {r} of {reps} rounds", file=sys.stderr, flush=True)
                self.rows.append(dict(bench=bench, config="-", round=r, note=f"budget: stopped after {r} rounds"))
                break
            k = r % len(configs)
            for order, config in enumerate(configs[k:] + configs[:k]):
                if first_done and r == 0 and order == 0:
                    continue
                a = argv(config) if callable(argv) else argv
                self.measure(bench, config, r, order, a, extra_env)

    # -- the checks before measuring: each tool really watches, else the numbers mean nothing
    def verify(self, meta):
        ok = True
        argv = [self.api_calls, "4000", "1", "256"]
        row, _ = self.measure("verify", "bare", 0, 0, argv)
        if not row["valid"]:
            print(f"bench: the benchmark fails bare: {row['note']} (see {self.logs}/verify.bare.0.err)",
                  file=sys.stderr)
            return False
        row, _ = self.measure("verify", "floor", 0, 1, argv, {"CUPTI_FLOOR_VERBOSE": "1"})
        floor_lines = [l for l in open(os.path.join(self.logs, "verify.floor.0.err"), errors="replace")
                       if l.startswith("cupti_floor:")]
        meta["floor_check"] = " | ".join(l.strip() for l in floor_lines)
        subscribed = any(" on: " in l for l in floor_lines)
        got_buffers = any("exit:" in l and not l.split("exit:")[1].strip().startswith("0 ") for l in floor_lines)
        if not subscribed or not got_buffers:
            print("bench: the CUPTI floor did not subscribe or saw no activity: " + meta["floor_check"],
                  file=sys.stderr)
            ok = False
        run, ok_watched = self.verify_watched(meta, "asynccheck", 2, argv, "summary=0")
        ok = ok and ok_watched
        if self.baseline_lib:  # its own options, and a report of its own to say it watched
            _, ok_watched = self.verify_watched(meta, "baseline", 3, argv, self.baseline_options)
            ok = ok and ok_watched
        if meta.get("gpu") in (None, "", "unknown") and run.get("gpu"):
            meta["gpu"] = run.get("gpu")
        if meta.get("driver") in (None, "", "unknown") and run.get("driver"):
            meta["driver"] = str(run.get("driver"))
        return ok

    def verify_watched(self, meta, config, order, argv, options):
        """Runs the benchmark once under `config` (asynccheck or the baseline) with `options` and a JSON report;
        returns the report's run and whether it watched the benchmark (monitoring on, its 4000 calls seen)."""
        report = os.path.join(self.out, f"verify_{config}.json")
        row, _ = self.measure("verify", config, 0, order, argv,
                              {"ASYNCCHECK_OPTIONS": (options + ":" if options else "") + f"overwrite=1:json={report}"})
        try:
            with open(report) as f:
                run = json.load(f).get("run", {})
        except (OSError, ValueError) as e:
            run = {"monitoring": f"no report ({e})"}
        meta[f"{config}_check"] = {k: run.get(k) for k in ("monitoring", "calls_watched", "gpu_operations", "gpu",
                                                           "driver", "dropped_records", "complete")}
        watched = run.get("calls_watched") or 0
        if not row["valid"] or run.get("monitoring") != "on" or int(watched) < 4000:
            print(f"bench: {config} did not watch the benchmark: {meta[f'{config}_check']} {row['note']} (see "
                  f"{self.logs}/verify.{config}.0.err)", file=sys.stderr)
            return run, False
        return run, True


def baseline_commit(lib):
    """The commit a baseline library was built from, when a file COMMIT beside it names it; else ''."""
    try:
        with open(os.path.join(os.path.dirname(lib), "COMMIT")) as f:
            return f.read(64).strip()
    except OSError:
        return ""


def gpu_info():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return "unknown", "unknown"
    try:
        out = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout.strip().splitlines()
        name, driver = [s.strip() for s in out[0].split(",", 1)]
        return name, driver
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return "unknown", "unknown"


def cmd_run(args):
    mode = "quick" if args.quick else "full"
    plan = dict(PLANS[mode])
    if args.budget:
        plan["budget_s"] = args.budget
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    r = Runner(build, out, plan, mode)
    for path in (r.api_calls, r.startup, r.floor_lib, r.asynccheck_lib):
        if not os.path.exists(path):
            print(f"bench: {path} is missing: build it with\n  cmake --build {args.build} --target asynccheck_bench",
                  file=sys.stderr)
            return 2
    percall_configs = CONFIGS
    if args.baseline:
        lib, _, options = args.baseline.partition("@")
        lib = os.path.abspath(lib)
        if not os.path.isfile(lib):
            print(f"bench: --baseline: no such library: {lib} (expected LIB[@OPTIONS], e.g. "
                  "old/libasynccheck.so@overwrite=1:log_file=/dev/null)", file=sys.stderr)
            return 2
        r.baseline_lib, r.baseline_options = lib, options
        percall_configs = CONFIGS + ("baseline",)
    gpu, driver = gpu_info()
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), mode=mode,
                plan=plan, gpu=gpu, driver=driver, host=platform.node(), cpus=os.cpu_count(),
                kernel=platform.release(), python=r.python, build=build)
    if r.baseline_lib:
        meta["baseline"] = dict(library=r.baseline_lib, options=r.baseline_options,
                                commit=baseline_commit(r.baseline_lib))
    print(f"bench: {mode} run on {gpu} (driver {driver}); budget {plan['budget_s']} s; logs in {r.logs}",
          file=sys.stderr, flush=True)
    ok = r.verify(meta)
    if not ok and not args.force:
        write_raw(out, r.rows, meta)
        print("bench: stopping (use --force to measure anyway)", file=sys.stderr)
        return 1
    p = plan
    print(f"== API calls, 1 thread, {human_calls(p['calls1'])} calls", file=sys.stderr, flush=True)
    r.interleave("percall1", percall_configs, p["reps1"], [r.api_calls, str(p["calls1"]), "1", "256"])
    print(f"== API calls, {p['threads8']} threads x {human_calls(p['calls8'])} calls", file=sys.stderr, flush=True)
    r.interleave("percall8", percall_configs, p["reps8"], [r.api_calls, str(p["calls8"]), str(p["threads8"]), "256"])
    print("== start-up, empty CUDA program", file=sys.stderr, flush=True)
    r.interleave("startup", CONFIGS, p["startup_reps"], [r.startup])
    print("== PyTorch training loop", file=sys.stderr, flush=True)
    torch_argv = [r.python, r.train, "--launch-steps", str(p["torch_launch_steps"]), "--gpu-steps",
                  str(p["torch_gpu_steps"]), "--warmup", str(p["torch_warmup"]), "--launch-batch",
                  str(p["torch_launch_batch"]), "--gpu-batch", str(p["torch_gpu_batch"])]
    # The first bare run is round 0's first run (the rotation starts with bare) and tells whether torch is there.
    probe, res = r.measure("torch", "bare", 0, 0, torch_argv)
    if "SKIP" in res or not probe["valid"]:
        print(f"  torch: skipped ({probe['note']})", file=sys.stderr, flush=True)
        meta["torch"] = "skipped: " + probe["note"]
    else:
        r.interleave("torch", CONFIGS + ("profiler",), p["torch_reps"],
                     lambda c: torch_argv + (["--profile"] if c == "profiler" else []), first_done=True)
        meta["torch"] = res.get("torch", "")
    print(f"== scale: {human_calls(p['large'])} calls, 1 thread", file=sys.stderr, flush=True)
    left = p["budget_s"] - r.elapsed()
    if left < 20:
        r.rows.append(dict(bench="large", config="-", round=0, note="budget: not run"))
        print("  large: not run (time budget spent)", file=sys.stderr)
    else:
        # Hard limit: each run may go on to the budget plus 45 s, no further (a killed asynccheck run still gives
        # its peak RSS so far, reported as a lower bound).
        for rnd in range(p["reps_large"]):
            for order, config in enumerate(CONFIGS):
                r.measure("large", config, rnd, order, [r.api_calls, str(p["large"]), "1", "256"],
                          timeout=min(TIMEOUT_S["large"], max(20, int(p["budget_s"] + 45 - r.elapsed()))))
    meta["elapsed_s"] = round(r.elapsed(), 1)
    write_raw(out, r.rows, meta)
    print(f"bench: measured in {meta['elapsed_s']} s; raw numbers in {out}/raw.csv", file=sys.stderr, flush=True)
    return 0


def write_raw(out, rows, meta):
    with open(os.path.join(out, "raw.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=RAW_FIELDS, extrasaction="ignore")
        w.writeheader()
        for row in rows:
            w.writerow({k: row.get(k, "") for k in RAW_FIELDS})
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


# ---------------------------------------------------------------------------------------------------------------
# Summarizing


def read_raw(out):
    with open(os.path.join(out, "raw.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    return rows, meta


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


class Stat:
    """Median and spread of a list of numbers (None when empty)."""

    def __init__(self, values):
        self.values = [v for v in values if v is not None]
        self.n = len(self.values)
        self.med = statistics.median(self.values) if self.values else None
        self.lo = min(self.values) if self.values else None
        self.hi = max(self.values) if self.values else None


def per_round(rows, bench, config, value):
    """round -> value of the valid runs of (bench, config); value(row) -> float or None."""
    got = {}
    for row in rows:
        if row["bench"] == bench and row["config"] == config and row.get("valid") == "1":
            v = value(row)
            if v is not None:
                got[row["round"]] = v
    return got


def paired(base, other, diff):
    return Stat([diff(base[k], other[k]) for k in sorted(base) if k in other])


def fmt(v, digits=0, sign=False):
    if v is None:
        return "n/a"
    s = f"{v:+,.{digits}f}" if sign else f"{v:,.{digits}f}"
    return s


def cell(stat, digits=0, sign=False, spread=True):
    if stat is None or stat.med is None:
        return "n/a"
    s = fmt(stat.med, digits, sign)
    if spread and stat.n > 1:
        s += f" [{fmt(stat.lo, digits, sign)}..{fmt(stat.hi, digits, sign)}]"
    return s


def ratio(a, b):
    if a is None or a.med is None or b is None or b.med is None or b.med <= 0:
        return None
    return a.med / b.med


class Figure:
    def __init__(self, key, name, unit, digits=0):
        self.key, self.name, self.unit, self.digits = key, name, unit, digits
        self.n = 0
        self.stats = {}   # config -> Stat
        self.added = {}   # config -> Stat (paired vs bare)
        self.rounds = {}  # config -> {round: value} (numeric_figure's)
        self.ratio = None
        self.target = "-"
        self.met = "-"
        self.added_unit = unit
        self.added_digits = digits
        self.extra = ""
        self.legend = ""
        self.override = {}  # column -> text


def numeric_figure(rows, key, name, unit, bench, value, digits=0, diff=lambda b, o: o - b, configs=CONFIGS,
                   added_unit=None, added_digits=None):
    f = Figure(key, name, unit, digits)
    f.added_unit = added_unit or unit
    f.added_digits = digits if added_digits is None else added_digits
    rounds = f.rounds = {c: per_round(rows, bench, c, value) for c in configs}
    for c in configs:
        f.stats[c] = Stat(list(rounds[c].values()))
    for c in configs[1:]:
        f.added[c] = paired(rounds["bare"], rounds[c], diff)
    # The table's rounds: of the configurations it shows (a baseline's invalid runs do not lower them).
    f.n = min((s.n for c, s in f.stats.items() if c != "baseline"), default=0)
    return f


def judge(ok_list):
    if any(v is None for v in ok_list):
        return "n/a"
    return "yes" if all(ok_list) else "NO"


def configs_of(rows, bench):
    """CONFIGS, and the baseline where it ran in this benchmark (--baseline)."""
    ran = any(r["bench"] == bench and r["config"] == "baseline" for r in rows)
    return CONFIGS + ("baseline",) if ran else CONFIGS


def build_figures(rows, meta):
    plan = meta.get("plan", PLANS["full"])
    figs = []
    ns = lambda r: num(r.get("ns_per_call"))
    # 1, 2: host time per watched call.
    for bench, threads, limit_ns, limit_ratio in (("percall1", 1, 1000.0, 1.5),
                                                   ("percall8", plan.get("threads8", 8), 2000.0, 3.0)):
        calls = plan["calls1"] if bench == "percall1" else plan["calls8"]
        f = numeric_figure(rows, bench, f"per call, {threads} thread{'s' if threads > 1 else ''} (ns)", "ns", bench, ns,
                           configs=configs_of(rows, bench))
        f.legend = (f"host time of one watched call, {threads} x {human_calls(calls)} calls, enqueue only (exit "
                    "excluded)")
        f.ratio = ratio(f.added.get("asynccheck"), f.added.get("floor"))
        f.target = f"<= {limit_ratio:g}x floor, <= {limit_ns / 1000:g} us"
        a = f.added["asynccheck"].med
        f.met = judge([None if a is None else a <= limit_ns, None if f.ratio is None else f.ratio <= limit_ratio])
        fl = f.added["floor"].med
        if a is not None and f.ratio is None and fl is not None and fl <= 0:
            # Threads that mostly wait for each other inside the driver can hide the floor's cost entirely.
            f.met = ("yes" if a <= limit_ns else "NO") + " (abs. only)"
            f.extra = (f"the CUPTI floor's added cost is <= 0 ({fl:+.0f} ns): no ratio; judged on the absolute limit "
                       "only")
        figs.append(f)
    # 3: what start-up and exit (asynccheck: the analysis) add to a 1M-call run: process wall - the program's own.
    def outside(r):
        w, p = num(r.get("wall_ns")), num(r.get("prog_wall_ns"))
        return None if w is None or p is None else (w - p) / 1e9
    f = numeric_figure(rows, "exit1", f"start+exit, {human_calls(plan['calls1'])}-call run (s)", "s", "percall1",
                       outside, digits=2)
    f.legend = ("the 1-thread runs' process wall time less the program's own: start-up and exit, i.e. asynccheck's "
                "analysis at exit")
    f.ratio = ratio(f.added.get("asynccheck"), f.added.get("floor"))
    f.target = "(info)"
    figs.append(f)
    # 4, 5: peak RSS of the whole process (wait4: exit included), 1 thread.
    rss = lambda r: num(r.get("max_rss_kb")) / MIB if num(r.get("max_rss_kb")) is not None else None
    small = numeric_figure(rows, "rss_small", f"peak RSS, {human_calls(plan['calls1'])} calls (MiB)", "MiB",
                           "percall1", rss, digits=1, configs=configs_of(rows, "percall1"))
    small.legend = "peak resident memory of the whole process (exit included), the 1-thread runs"
    small.ratio = ratio(small.added.get("asynccheck"), small.added.get("floor"))
    small.target = "<= 64 MiB"
    a = small.added["asynccheck"].med
    small.met = judge([None if a is None else a <= 64])
    figs.append(small)
    large = numeric_figure(rows, "rss_large", f"peak RSS, {human_calls(plan['large'])} calls (MiB)", "MiB", "large",
                           rss, digits=1)
    large.legend = f"the same with {human_calls(plan['large'])} calls, 1 thread, one round"
    large.ratio = ratio(large.added.get("asynccheck"), large.added.get("floor"))
    large.target = f"<= 64 MiB, {human_calls(plan['calls1'])}'s +-16 MiB"
    a, s = large.added["asynccheck"].med, small.added["asynccheck"].med
    large.met = judge([None if a is None else a <= 64, None if a is None or s is None else abs(a - s) <= 16])
    # A run killed by its timeout still had its RSS measured: a lower bound.
    for row in rows:
        if row["bench"] == "large" and row["config"] == "asynccheck" and row.get("timed_out") == "1":
            killed_mib = num(row['max_rss_kb']) / MIB
            large.extra = f"asynccheck run killed ({row.get('note')}) at {killed_mib:,.0f} MiB"
            large.override["asynccheck"] = f">= {killed_mib:,.1f} (killed)"
            bare = large.stats["bare"].med
            if bare is not None:
                large.override["asynccheck added"] = f">= {killed_mib - bare:+,.1f}"
            large.met = "NO"
    figs.append(large)
    # 6: start-up.
    wall_ms = lambda r: num(r.get("wall_ns")) / 1e6 if num(r.get("wall_ns")) is not None else None
    f = numeric_figure(rows, "startup", "start-up (ms)", "ms", "startup", wall_ms, digits=1)
    f.legend = "wall time of an empty CUDA program (cudaFree(0)), exit included"
    f.ratio = ratio(f.added.get("asynccheck"), f.added.get("floor"))
    f.target = "<= 150 ms"
    a = f.added["asynccheck"].med
    f.met = judge([None if a is None else a <= 150])
    figs.append(f)
    # 7-10: PyTorch loop, steps/s in two regimes; added = slowdown in % (time per step), paired per round.
    slowdown = lambda b, o: (b / o - 1.0) * 100.0
    torch_ver = str(meta.get("torch", ""))
    for regime, title, steps, batch in (
            ("launch", "launch-bound", plan.get("torch_launch_steps"), plan.get("torch_launch_batch", 128)),
            ("gpu", "GPU-bound", plan.get("torch_gpu_steps"), plan.get("torch_gpu_batch", 1024))):
        sps = lambda r, k=f"{regime}_steps_per_s": num(r.get(k))
        f = numeric_figure(rows, f"torch_{regime}", f"PyTorch, {title} (steps/s)", "steps/s", "torch", sps, digits=1,
                           diff=slowdown, configs=CONFIGS + ("profiler",), added_unit="% slower", added_digits=1)
        bare = f.stats["bare"].med
        f.legend = (f"training steps per second, batch {batch}, {steps} steady-state steps timed inside the script "
                    f"(exit excluded){'' if bare is None else f', bare {1000 / bare:.2f} ms a step'}; added: % "
                    "slower per step")
        f.ratio = ratio(f.added.get("asynccheck"), f.added.get("floor"))
        prof = f.added.get("profiler")
        a = f.added["asynccheck"].med
        f.target = "<= 3%, < profiler"
        f.met = judge([None if a is None else a <= 3.0,
                       None if a is None or prof is None or prof.med is None else a < prof.med])
        if torch_ver.startswith("skipped"):
            f.extra = torch_ver
            f.met = "n/a"
        figs.append(f)
        g = Figure(f"torch_{regime}_profiler", f"PyTorch, {title}, profiler* (steps/s)", "steps/s", 1)
        g.legend = "* the asynccheck columns hold the same loop under torch.profiler (CPU and CUDA activities)"
        g.stats = {"bare": f.stats["bare"], "floor": None, "asynccheck": f.stats.get("profiler")}
        g.added = {"floor": None, "asynccheck": prof}
        g.added_unit, g.added_digits = "% slower", 1
        g.ratio = ratio(prof, f.added.get("floor"))
        g.n = f.n
        g.target = "(reference)"
        figs.append(g)
    return figs


HEADERS = ["figure", "n", "bare", "floor", "asynccheck", "floor added", "asynccheck added", "ratio to floor",
           "target", "met?"]


def figure_cells(f):
    def st(c):
        s = f.stats.get(c)
        return cell(s, f.digits)

    def ad(c):
        s = f.added.get(c)
        if s is None or s.med is None:
            return "n/a" if c == "asynccheck" or f.stats.get(c) is not None else "-"
        return cell(s, f.added_digits, sign=True) + ("%" if f.added_unit.startswith("%") else "")

    cells = [f.name, str(f.n), st("bare"), st("floor") if f.stats.get("floor") is not None else "-", st("asynccheck"),
             ad("floor"), ad("asynccheck"), "n/a" if f.ratio is None else f"{f.ratio:.2f}x", f.target, f.met]
    return [f.override.get(h, c) for h, c in zip(HEADERS, cells)]


def render_text(figs, meta):
    rows = [HEADERS] + [figure_cells(f) for f in figs]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADERS))]
    lines = []
    for k, r in enumerate(rows):
        lines.append("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_markdown(figs):
    out = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for f in figs:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in figure_cells(f)) + " |")
    return "\n".join(out)


def baseline_lines(rows, figs, meta):
    """With --baseline: what the build measured costs against the baseline, per round and paired (the baseline ran
    in the same rounds), for each figure that ran both."""
    base = meta.get("baseline")
    if not base:
        return []
    lines = [f"against the baseline {base.get('library', '?')}" + (f" ({base['commit']})" if base.get("commit") else "")
             + (f", options {base['options']}" if base.get("options") else "") + ", in the same rounds:"]
    for f in figs:
        if f.added.get("baseline") is None:
            continue
        mine, theirs = f.rounds["asynccheck"], f.rounds["baseline"]
        d = paired(theirs, mine, lambda b, o: o - b)
        lower = sum(1 for k in theirs if k in mine and mine[k] < theirs[k])
        a, b = f.added.get("asynccheck"), f.added["baseline"]
        r = ratio(a, b)
        lines.append(f"  {f.name}: asynccheck - baseline {cell(d, f.digits, sign=True)} {f.unit} (n {d.n}, asynccheck "
                     f"lower in {lower}); added against bare: asynccheck {cell(a, f.digits, sign=True, spread=False)}, "
                     f"baseline {cell(b, f.digits, sign=True, spread=False)}"
                     + ("" if r is None else f" ({r:.2f}x the baseline's)"))
    return lines


def header_lines(meta):
    plan = meta.get("plan", {})
    lines = [f"asynccheck overhead, {meta.get('date', '?')}: {meta.get('gpu', '?')}, driver {meta.get('driver', '?')}, "
             f"{meta.get('cpus', '?')} CPUs, kernel {meta.get('kernel', '?')}; {meta.get('mode', '?')} run, "
             f"{meta.get('elapsed_s', '?')} s",
             f"torch: {meta.get('torch', '?')}; asynccheck check: {meta.get('asynccheck_check', '?')}",
             "cells: median [min..max] over n interleaved rounds; 'added' = median of per-round differences against "
             "bare (PyTorch: % slower per step); ratio = asynccheck added / floor added; asynccheck runs with "
             "ASYNCCHECK_OPTIONS=summary=0 (the analysis at exit still runs)"]
    return lines


def legend_lines(figs):
    seen, out = set(), []
    for f in figs:
        if f.legend and f.legend not in seen:
            seen.add(f.legend)
            out.append(f"  {f.name}: {f.legend}")
    return out


def notes_lines(rows, figs):
    notes = []
    for f in figs:
        if f.extra:
            notes.append(f"note: {f.key}: {f.extra}")
    bad = [r for r in rows if r.get("valid") == "0" and r["bench"] != "verify"]
    for r in bad[:12]:
        notes.append(f"note: invalid run {r['bench']}.{r['config']}.{r['round']}: {r.get('note')}")
    if len(bad) > 12:
        notes.append(f"note: ... {len(bad) - 12} more invalid runs (raw.csv)")
    for r in rows:
        if r.get("config") == "-":
            notes.append(f"note: {r['bench']}: {r.get('note')}")
    return notes


def write_summary_csv(out, figs):
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["figure", "key", "unit", "n", "config", "median", "min", "max", "added_unit", "added_median",
                    "added_min", "added_max", "ratio_to_floor", "target", "met"])
        for fig in figs:
            for c in ("bare", "floor", "asynccheck") + (("baseline",) if fig.stats.get("baseline") else ()):
                s = fig.stats.get(c)
                a = fig.added.get(c)
                w.writerow([fig.name, fig.key, fig.unit, fig.n,
                            "profiler" if fig.key.endswith("_profiler") and c == "asynccheck" else c,
                            *(("", "", "") if s is None else (s.med, s.lo, s.hi)), fig.added_unit,
                            *(("", "", "") if a is None else (a.med, a.lo, a.hi)),
                            "" if fig.ratio is None else round(fig.ratio, 3), fig.target, fig.met])


def svg_plot(figs, meta):
    """Bars: added ns per call, CUPTI floor vs asynccheck (and the baseline, where it ran), 1 and 8 threads, with
    min..max whiskers and the absolute target as a dashed line."""
    groups = [f for f in figs if f.key in ("percall1", "percall8")]
    bars = ("floor", "asynccheck") + (("baseline",) if any(g.added.get("baseline") for g in groups) else ())
    W, H, left, right, top, bottom = 640, 400, 70, 20, 60, 70
    pw, ph = W - left - right, H - top - bottom
    vals = [0.0]
    targets = {"percall1": 1000.0, "percall8": 2000.0}
    rel_limit = {"percall1": 1.5, "percall8": 3.0}
    rel = {}  # the relative target: a multiple of the floor's added cost
    for g in groups:
        for c in bars:
            s = g.added.get(c)
            if s is not None and s.med is not None:
                vals += [s.med, s.lo, s.hi]
        vals.append(targets[g.key])
        fl = g.added.get("floor")
        if fl is not None and fl.med is not None and fl.med > 0:
            rel[g.key] = rel_limit[g.key] * fl.med
            vals.append(rel[g.key])
    lo, hi = min(vals), max(vals)
    step = nice_step((hi - lo) / 5 if hi > lo else 1.0)
    lo = step * int(lo // step) if lo < 0 else 0.0
    hi = step * (int(hi // step) + 1)
    y = lambda v: top + ph - (v - lo) / (hi - lo) * ph
    colors = {"floor": "#9e9e9e", "asynccheck": "#1f77b4", "baseline": "#2ca02c"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">Added host time per watched CUDA call</text>',
           f'<text x="{W / 2}" y="40" text-anchor="middle" fill="#555">{escape(str(meta.get("gpu", "?")))}, driver '
           f'{escape(str(meta.get("driver", "?")))}, {escape(str(meta.get("date", "?")))} (median, min..max)</text>']
    v = lo
    while v <= hi + step / 2:
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e0e0e0"/>')
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:,.0f}</text>')
        v += step
    out.append(f'<text x="16" y="{top + ph / 2}" transform="rotate(-90 16 {top + ph / 2})" text-anchor="middle">'
               'ns per call, vs bare</text>')
    out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="black"/>')
    gw = pw / max(1, len(groups))
    bw = gw / 4
    for i, g in enumerate(groups):
        gx = left + i * gw
        for j, c in enumerate(bars):
            s = g.added.get(c)
            x = gx + gw / 2 - len(bars) * bw / 2 + j * bw
            if s is None or s.med is None:
                out.append(f'<text x="{x + bw / 2:.1f}" y="{y(0) - 4:.1f}" text-anchor="middle">n/a</text>')
                continue
            y0, y1 = sorted((y(0), y(s.med)))
            out.append(f'<rect x="{x + 2:.1f}" y="{y0:.1f}" width="{bw - 4:.1f}" height="{max(y1 - y0, 0.5):.1f}" '
                       f'fill="{colors[c]}"/>')
            cx = x + bw / 2
            out.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(s.lo):.1f}" y2="{y(s.hi):.1f}" stroke="black"/>')
            for e in (s.lo, s.hi):
                out.append(f'<line x1="{cx - 5:.1f}" x2="{cx + 5:.1f}" y1="{y(e):.1f}" y2="{y(e):.1f}" '
                           'stroke="black"/>')
            out.append(f'<text x="{cx:.1f}" y="{min(y(s.hi), y(s.med)) - 5:.1f}" text-anchor="middle">'
                       f'{s.med:,.0f}</text>')
        t = targets[g.key]
        out.append(f'<line x1="{gx + gw * 0.15:.1f}" x2="{gx + gw * 0.85:.1f}" y1="{y(t):.1f}" y2="{y(t):.1f}" '
                   'stroke="#d62728" stroke-dasharray="6 4"/>')
        out.append(f'<text x="{gx + gw * 0.15:.1f}" y="{y(t) - 4:.1f}" fill="#d62728">target {t / 1000:g} us</text>')
        if g.key in rel:
            t = rel[g.key]
            x = gx + gw / 2 - len(bars) * bw / 2 + bw  # over the asynccheck bar
            out.append(f'<line x1="{x:.1f}" x2="{x + bw:.1f}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#ff7f0e" '
                       'stroke-width="2" stroke-dasharray="3 3"/>')
            # Right of the asynccheck bar, or above its line where the baseline's bar stands there.
            lx, ly = (x + bw + 3, y(t) + 4) if len(bars) == 2 else (x, y(t) - 4)
            out.append(f'<text x="{lx:.1f}" y="{ly:.1f}" fill="#ff7f0e">'
                       f'{rel_limit[g.key]:g}x floor</text>')
        label = "1 thread" if g.key == "percall1" else f"{meta.get('plan', {}).get('threads8', 8)} threads"
        out.append(f'<text x="{gx + gw / 2:.1f}" y="{top + ph + 20}" text-anchor="middle">{label}</text>')
    lx = left + 10
    names = {"floor": "CUPTI floor (empty handlers)", "asynccheck": "asynccheck",
             "baseline": "baseline " + str(meta.get("baseline", {}).get("commit") or "")[:12]}
    for j, c in enumerate(bars):
        out.append(f'<rect x="{lx + j * 200}" y="{H - 28}" width="14" height="14" fill="{colors[c]}"/>')
        out.append(f'<text x="{lx + j * 200 + 20}" y="{H - 16}">{escape(names[c].strip())}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def nice_step(raw):
    mag = 10 ** len(str(int(max(raw, 1)))) / 10
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def cmd_report(args):
    out = os.path.abspath(args.out)
    rows, meta = read_raw(out)
    figs = build_figures(rows, meta)
    text = ("\n".join(header_lines(meta)) + "\n\n" + render_text(figs, meta) + "\n\n" +
            "\n".join(legend_lines(figs)) + "\n")
    against = baseline_lines(rows, figs, meta)
    if against:
        text += "\n" + "\n".join(against) + "\n"
    notes = notes_lines(rows, figs)
    if notes:
        text += "\n" + "\n".join(notes) + "\n"
    print(text, end="")
    with open(os.path.join(out, "table.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("\n\n".join(header_lines(meta)) + "\n\n" + render_markdown(figs) + "\n\n")
        f.write("\n".join("-" + l[1:] for l in legend_lines(figs)) + "\n")
        if against:
            f.write("\n" + against[0] + "\n\n" + "\n".join("-" + l[1:] for l in against[1:]) + "\n")
        if notes:
            f.write("\n" + "\n".join("- " + n for n in notes) + "\n")
    write_summary_csv(out, figs)
    with open(os.path.join(out, "overhead.svg"), "w") as f:
        f.write(svg_plot(figs, meta))
    print(f"\nfiles: {out}/raw.csv, summary.csv, table.txt, table.md, overhead.svg, meta.json, logs/")
    return 0


def cmd_fake(args):
    """Synthetic numbers with the shape of a real run (for testing `report` without a GPU); --baseline adds a
    baseline that costs 60 ns a call more than asynccheck."""
    import random
    rnd = random.Random(1)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    plan = PLANS["full"]
    rows = []
    base = {"percall1": 1800.0, "percall8": 2600.0}
    added = {"bare": 0.0, "floor": 350.0, "asynccheck": 520.0, "baseline": 580.0}
    percall_configs = CONFIGS + (("baseline",) if args.baseline else ())
    for bench in ("percall1", "percall8"):
        threads = 1 if bench == "percall1" else 8
        calls = plan["calls1"] if bench == "percall1" else plan["calls8"] * 8
        for r in range(7):
            for o, c in enumerate(percall_configs):
                nsc = base[bench] + added[c] * (1.5 if threads > 1 else 1) + rnd.gauss(0, 40)
                prog = nsc * calls * 1.3
                exit_s = {"bare": 0.25, "floor": 0.3, "asynccheck": 1.9, "baseline": 2.5}[c]
                rows.append(dict(bench=bench, config=c, round=r, order=o, rc=0, timed_out=0, valid=1,
                                 wall_ns=int(prog + exit_s * 1e9), threads=threads, calls=calls,
                                 ns_per_call=f"{nsc:.1f}", prog_wall_ns=int(prog),
                                 max_rss_kb=int((310 + {"bare": 0, "floor": 40, "asynccheck": 420, "baseline": 450}[c])
                                                * 1024)))
    for o, c in enumerate(CONFIGS):
        rows.append(dict(bench="large", config=c, round=0, order=o, rc=0 if c != "asynccheck" else -9,
                         timed_out=int(c == "asynccheck"), valid=int(c != "asynccheck"), wall_ns=int(30e9),
                         max_rss_kb=int((310 + {"bare": 0, "floor": 41, "asynccheck": 4100}[c]) * 1024),
                         note="killed after 300 s" if c == "asynccheck" else ""))
    for r in range(15):
        for o, c in enumerate(CONFIGS):
            rows.append(dict(bench="startup", config=c, round=r, order=o, rc=0, timed_out=0, valid=1,
                             wall_ns=int((180 + {"bare": 0, "floor": 35, "asynccheck": 70}[c] + rnd.gauss(0, 5)) * 1e6),
                             max_rss_kb=200000))
    for r in range(5):
        for o, c in enumerate(CONFIGS + ("profiler",)):
            sp = 400 / (1 + {"bare": 0, "floor": 0.2, "asynccheck": 0.25, "profiler": 0.35}[c]) + rnd.gauss(0, 3)
            gp = 150 / (1 + {"bare": 0, "floor": 0.002, "asynccheck": 0.004, "profiler": 0.03}[c]) + rnd.gauss(0, 0.3)
            rows.append(dict(bench="torch", config=c, round=r, order=o, rc=0, timed_out=0, valid=1, wall_ns=int(9e9),
                             max_rss_kb=900000, launch_steps_per_s=f"{sp:.3f}", gpu_steps_per_s=f"{gp:.3f}"))
    rows.append(dict(bench="torch", config="floor", round=5, order=0, rc=1, timed_out=0, valid=0, note="exit code 1"))
    meta = dict(date="2000-01-01 00:00 UTC (FAKE DATA)", mode="full", plan=plan, gpu="FAKE GPU", driver="0.0",
                cpus=16, kernel="fake", torch="2.11.0+fake", elapsed_s=0,
                asynccheck_check={"monitoring": "on", "calls_watched": 4017})
    if args.baseline:
        meta["baseline"] = dict(library=args.baseline.partition("@")[0], options=args.baseline.partition("@")[2],
                                commit="0000000")
    write_raw(out, rows, meta)
    print(f"fake raw numbers in {out}", file=sys.stderr)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["run", "report", "all", "fake"])
    ap.add_argument("--build", help="the build directory (with bench/ and lib/libasynccheck.so)")
    ap.add_argument("--out", required=True, help="where raw.csv, the table, the plot and the logs go")
    ap.add_argument("--quick", action="store_true",
                    help="fewer calls, rounds and steps (about 3 minutes instead of 7-8)")
    ap.add_argument("--budget", type=float, help="seconds the measuring may take (default: 480 full, 200 quick)")
    ap.add_argument("--force", action="store_true", help="measure even when a tool failed its check")
    ap.add_argument("--baseline", metavar="LIB[@OPTIONS]",
                    help="another build of the library (e.g. an earlier commit's libasynccheck.so), run in the same "
                         "rounds of the per-call benchmarks with ASYNCCHECK_OPTIONS=OPTIONS (default: none; an older "
                         "build may not know summary=0; LIB is split at its first '@'); the report adds the "
                         "paired difference against it")
    args = ap.parse_args()
    if args.command in ("run", "all") and not args.build:
        ap.error("--build is required")
    if args.command == "fake":
        return cmd_fake(args)
    if args.command in ("run", "all"):
        rc = cmd_run(args)
        if rc != 0:
            return rc
    return cmd_report(args)


if __name__ == "__main__":
    sys.exit(main())
