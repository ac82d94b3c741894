/* asynccheck's entry points for programs that want to label their work (docs/python.md, docs/report-format.md).
 *
 * They exist only while the program runs under asynccheck (LD_PRELOAD=libasynccheck.so, the asynccheck command, or
 * CUDA_INJECTION64_PATH). A program that must also run without it looks them up instead of linking them:
 *
 *     int (*push)(const char*) = (int (*)(const char*))dlsym(RTLD_DEFAULT, "asynccheck_region_push");
 *     if (push) push("warm-up");
 *
 * Python: asynccheck.region("name") (python/asynccheck) does exactly that through ctypes. */
#ifndef ASYNCCHECK_H
#define ASYNCCHECK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Opens a region named `name` (copied; UTF-8, cut at 512 bytes) for the whole process: every CUDA call of every
 * thread made until the matching asynccheck_region_pop() is in it, with the thread's own NVTX ranges nested inside.
 * A region is an NVTX range of domain "asynccheck" in reports (nvtx_ranges, with its path) and for
 * --capture-range=nvtx:NAME. Regions nest. Returns the number of regions open after the call, or -1 (a null name,
 * or 1024 already open). Safe from any thread; never calls CUDA. */
int asynccheck_region_push(const char* name);

/* Ends the innermost region, whichever thread opened it: regions are one stack for the process, so they must end in
 * the reverse order they began (open them from one thread; label a thread's own work with NVTX ranges, which are per
 * thread). Returns the number of regions still open, or -1 when none was. */
int asynccheck_region_pop(void);

/* Finishes monitoring and writes the reports now, exactly as the program's exit would (which then writes nothing
 * more): for a program that reads its own report before it ends (the pytest plugin). Returns 0 when written, 1 when
 * there was nothing more to write (written already; monitoring off, whose report saying why is written as at exit),
 * 2 when a report file could not be written. CUDA calls made after it are not watched. */
int asynccheck_report_now(void);

#ifdef __cplusplus
}
#endif

#endif /* ASYNCCHECK_H */
