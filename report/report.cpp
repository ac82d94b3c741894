#include "report/report.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "analysis/recording.h"

namespace asynccheck::report {
namespace {

void say(const std::string& line) {
  std::string out = "asynccheck: " + line + "\n";
  ssize_t ignored = write(STDERR_FILENO, out.data(), out.size());
  (void)ignored;
}

}  // namespace

bool write_file(const std::string& path, const std::string& content, std::string& error) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = write(fd, content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = "cannot write '" + path + "': " + std::strerror(errno);
      close(fd);
      unlink(tmp.c_str());
      return false;
    }
    off += static_cast<size_t>(n);
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

void emit(EventLog& log, const Options& options, bool) {
  std::string error;
  // Resolve call sites here only when this process reports; the asynccheck command resolves them itself, outside
  // the program under test.
  if (options.symbolize && (options.summary || !options.json.empty())) resolve_symbols(log);
  if (!options.record.empty()) {
    std::ostringstream rec;
    write_recording(rec, log);
    if (!write_file(expand_path(options.record, log.run.pid), rec.str(), error)) say("ERROR: " + error);
  }
  AnalysisOptions ao;
  ao.threshold_ns = log.run.threshold_ns ? log.run.threshold_ns : options.threshold_us * 1000;
  const Analysis analysis = analyze(log, ao);
  const std::vector<CallSite> sites = call_sites(log, kernel_names(log));
  const std::vector<SiteRow> rows = aggregate(log, analysis, sites);
  if (!options.json.empty()) {
    std::ostringstream js;
    write_json(js, log, analysis, rows);
    if (!write_file(expand_path(options.json, log.run.pid), js.str(), error)) say("ERROR: " + error);
  }
  if (!options.summary) return;
  std::ostringstream summary;
  write_summary(summary, log, analysis, rows, options.print_limit);
  const std::string text = summary.str();
  if (text.empty()) return;
  if (options.log_path == "stderr" || options.log_path.empty()) {
    ssize_t ignored = write(STDERR_FILENO, text.data(), text.size());
    (void)ignored;
  } else if (options.log_path == "stdout") {
    ssize_t ignored = write(STDOUT_FILENO, text.data(), text.size());
    (void)ignored;
  } else if (!write_file(expand_path(options.log_path, log.run.pid), text, error)) {
    say("ERROR: " + error + "; the summary follows on stderr");
    ssize_t ignored = write(STDERR_FILENO, text.data(), text.size());
    (void)ignored;
  }
}

}  // namespace asynccheck::report
