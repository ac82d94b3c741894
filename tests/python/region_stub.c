/* A stand-in for libasynccheck.so's Python-facing entry points, for python/tests without a GPU: regions are
 * logged ("push NAME" / "pop" lines, read back with asynccheck_stub_log) and kept as a process-wide depth, as the
 * library keeps them; asynccheck_report_now answers 1 (nothing to write), as the library does with monitoring off. */
#include <stdio.h>
#include <string.h>

static char log_text[1 << 16];
static size_t log_len;
static int depth;

static void append(const char* a, const char* b) {
  int n = snprintf(log_text + log_len, sizeof log_text - log_len, "%s%s\n", a, b);
  if (n > 0 && log_len + (size_t)n < sizeof log_text) log_len += (size_t)n;
}

int asynccheck_region_push(const char* name) {
  append("push ", name);
  return ++depth;
}

int asynccheck_region_pop(void) {
  if (depth == 0) return -1;
  append("pop", "");
  return --depth;
}

int asynccheck_report_now(void) { return 1; }

const char* asynccheck_stub_log(void) { return log_text; }
