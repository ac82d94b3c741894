// The one in-process core behind both entry shims (LD_PRELOAD constructor and CUDA_INJECTION64_PATH's
// InitializeInjection). Starting twice, by both routes at once, is a no-op the second time.
//
// The report is written however the program ends (docs/robustness.md): at exit by an exit handler; on a fatal
// signal, _exit, _Exit or quick_exit by a reporter thread started here, which the ending thread wakes and waits for
// (at most signal_timeout seconds) before the process ends exactly as it would have. Only the process that started
// monitoring reports: a forked child (another pid) never does; one that execs gets the library anew.
#pragma once

namespace asynccheck::core {

enum class Origin { Preload, Injection };

void start(Origin origin);

// The ends that skip exit handlers and that the LD_PRELOAD shim (preload.cpp) sees first.
enum class End { UnderscoreExit, UpperExit };

// Called by the shim's _exit/_Exit before the process really exits: writes the report if this process started
// monitoring and nothing reported yet, waiting at most signal_timeout. Async-signal-safe (it is called from
// signal handlers and from vfork children, where it only compares pids).
void report_before(End end);

// asynccheck_report_now (report_now.cpp): the report, written now by the calling thread exactly as the exit
// handler would write it, once per process: every end after it (exit included) writes nothing more. The capture
// stops (capture::finish): calls made after it are not watched. 0: written; 1: nothing to write here (monitoring
// off: the report that says so is written all the same, as at exit; a report already written or being written;
// not started, or another copy of the library reports); 2: a report file could not be written (said on stderr).
// Not async-signal-safe.
int report_now();

// The code the process is to end with: the one its options asked for once the report was written
// (require_monitoring, error_exitcode), else `program_code`. Async-signal-safe (the shim's _exit calls it).
int exit_code(int program_code);

// Called by the shim's raise() and kill() of this very process: if `sig` is one we report on and its action is
// the default one (our handler was replaced by SIG_DFL, as Python does before re-raising SIGINT), the report is
// written first, since no handler of ours will run. Async-signal-safe.
void report_before_signal(int sig);

}  // namespace asynccheck::core
