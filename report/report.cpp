#include "report/report.h"
#include "report/trace_stream.h"
#include "report/source_root.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "analysis/monitoring.h"
#include "analysis/recording.h"
#include "report/baseline.h"
#include "report/plural.h"
#include "report/suppressions.h"

namespace asynccheck::report {
namespace fs = std::filesystem;
namespace {

// Our lines share stderr with the program: one write(2) each, so they are never interleaved mid-line.
void say(const std::string& line) {
  std::string out = "asynccheck: " + printable(line) + "\n";
  ssize_t ignored = write(STDERR_FILENO, out.data(), out.size());
  (void)ignored;
}

void write_fd(int fd, const std::string& text) {
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string exists_error(const std::string& path) {
  return "'" + path +
         "': it already exists (valid: a new path, overwrite=1 to replace it, or %p or %r in the name "
         "for one file per process or rank)";
}

// The report is first written as NAME.tmp.PID beside its path (write_file): the name must leave room for that suffix
// within the file system's limit, and the whole path fit PATH_MAX, or the report would be lost at the end.
bool name_fits(const std::string& path, const std::string& dir, std::string& error) {
  constexpr size_t kTmpSuffix = 5 + 10;  // ".tmp." and a pid of up to 10 digits
  if (path.size() + kTmpSuffix >= PATH_MAX) {
    error = "cannot write '" + path + "': the path is " + std::to_string(path.size()) + " bytes long (valid: at most " +
            std::to_string(PATH_MAX - 1 - kTmpSuffix) + ")";
    return false;
  }
  const long max = pathconf(dir.c_str(), _PC_NAME_MAX);
  const size_t name_max = max > 0 ? static_cast<size_t>(max) : NAME_MAX;
  const size_t slash = path.rfind('/');
  const size_t name = slash == std::string::npos ? path.size() : path.size() - slash - 1;
  if (name + kTmpSuffix > name_max) {
    error = "cannot write '" + path + "': its file name is " + std::to_string(name) + " bytes long (valid: at most " +
            std::to_string(name_max - kTmpSuffix) + ", the file system's " + std::to_string(name_max) +
            " less room for the temporary name it is written under)";
    return false;
  }
  return true;
}

bool is_stream(const std::string& path) { return path.empty() || path == "stderr" || path == "stdout"; }

// Every file the options write, unexpanded, with the option that names it.
std::vector<std::pair<std::string, std::string>> output_paths(const Options& o) {
  std::vector<std::pair<std::string, std::string>> out;
  OutputFiles files;
  std::string ignored;
  output_files(o, files, ignored);  // validated when the options were parsed
  for (const auto& [name, path] : {std::pair<std::string, std::string>{"json", files.json},
                                   {"sarif", files.sarif},
                                   {"trace", files.trace},
                                   {"html", files.html},
                                   {"save", o.save},
                                   {"handoff", o.handoff},
                                   {"save_baseline", o.save_baseline}}) {
    if (!path.empty()) out.emplace_back(name, path);
  }
  if (!is_stream(o.log_file)) out.emplace_back("log_file", o.log_file);
  return out;
}

}  // namespace

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

bool check_input_file(const std::string& path, std::string_view kind, uint64_t max_bytes, std::string& error) {
  const std::string prefix = "cannot read " + std::string(kind) + " '" + path + "': ";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    error = prefix + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {  // a FIFO would block forever, /dev/zero never end
    error = prefix + "it is " + file_kind(st.st_mode) + " (valid: a regular file)";
    return false;
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    error = prefix + "larger than " + std::to_string(max_bytes) + " bytes (valid: at most " +
            std::to_string(max_bytes) + ")";
    return false;
  }
  return true;
}

bool check_output_path(const std::string& path, bool overwrite, std::string& error) {
  const std::string dir = directory_of(path);
  if (path.empty() || path.back() == '/') {
    error = "cannot write '" + path + "': it names a directory (valid: a file name, e.g. '" + path + "report')";
    return false;
  }
  if (!name_fits(path, dir, error)) return false;
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    error = "cannot write '" + path + "': " +
            (errno == ENOENT ? "directory '" + dir + "' does not exist"
                             : "directory '" + dir + "' cannot be reached: " + std::strerror(errno));
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    error = "cannot write '" + path + "': '" + dir + "' is " +
            (S_ISREG(st.st_mode) ? "a file" : file_kind(st.st_mode)) + ", not a directory";
    return false;
  }
  if (access(dir.c_str(), W_OK) != 0) {
    error = "cannot write '" + path + "': directory '" + dir + "' is not writable";
    return false;
  }
  if (lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      error = "cannot write '" + path + "': it is a symbolic link (asynccheck never writes through links)";
      return false;
    }
    if (!S_ISREG(st.st_mode)) {  // overwrite=1 must not replace /dev/null or a FIFO with a file
      error = "cannot write '" + path + "': it is " + file_kind(st.st_mode) +
              ", not a regular file (asynccheck only replaces files)";
      return false;
    }
    if (!overwrite) {
      error = "cannot write " + exists_error(path);
      return false;
    }
  }
  return true;
}

int open_beside(const std::string& path, std::string& tmp, std::string& error) {
  tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) error = "cannot write '" + path + "': " + std::strerror(errno);
  return fd;
}

bool write_all(int fd, std::string_view content, const std::string& path, std::string& error) {
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = write(fd, content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = "cannot write '" + path + "': " + std::strerror(n < 0 ? errno : ENOSPC);
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

bool move_into_place(const std::string& tmp, const std::string& path, bool overwrite, std::string& error) {
  // rename() replaces a symbolic link itself, never its target; link() fails if the path exists, atomically, so
  // two processes never overwrite each other's report.
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    error = "cannot write '" + path + "': it is " + file_kind(st.st_mode) +
            (S_ISLNK(st.st_mode) ? " (asynccheck never writes through links)"
                                 : ", not a regular file (asynccheck only replaces files)");
    unlink(tmp.c_str());
    return false;
  }
  const bool moved = overwrite ? rename(tmp.c_str(), path.c_str()) == 0 : link(tmp.c_str(), path.c_str()) == 0;
  const int err = errno;
  if (!overwrite || !moved) unlink(tmp.c_str());
  if (!moved) {
    error = err == EEXIST ? "cannot write " + exists_error(path) : "cannot write '" + path + "': " + std::strerror(err);
    return false;
  }
  return true;
}

namespace {

// A temporary file beside `path`, filled by `fill` (false: failed, `error` said why), then moved into place.
template <typename Fill>
bool write_beside(const std::string& path, bool overwrite, std::string& error, Fill fill) {
  std::string tmp;
  const int fd = open_beside(path, tmp, error);
  if (fd < 0) return false;
  const bool written = fill(fd);
  close(fd);
  if (!written) {
    unlink(tmp.c_str());
    return false;
  }
  return move_into_place(tmp, path, overwrite, error);
}

}  // namespace

bool write_file(const std::string& path, const std::string& content, bool overwrite, std::string& error) {
  return write_beside(path, overwrite, error, [&](int fd) { return write_all(fd, content, path, error); });
}

bool copy_into_place(const std::string& from, const std::string& path, bool overwrite, std::string& error) {
  std::ifstream in(from, std::ios::binary);
  if (!in) {
    error = "cannot read '" + from + "'";
    return false;
  }
  return write_beside(path, overwrite, error, [&](int fd) {
    std::vector<char> buffer(size_t{1} << 20);
    while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())).gcount() > 0) {
      if (!write_all(fd, std::string_view(buffer.data(), static_cast<size_t>(in.gcount())), path, error)) return false;
    }
    if (in.bad()) error = "cannot read '" + from + "'";
    return !in.bad();
  });
}

bool place_file(const std::string& from, const std::string& path, bool overwrite, std::string& error) {
  struct stat a {
  }, b{};
  const std::string parent = fs::path(path).parent_path().string();
  if (stat(from.c_str(), &a) == 0 && stat(parent.empty() ? "." : parent.c_str(), &b) == 0 && a.st_dev == b.st_dev)
    return move_into_place(from, path, overwrite, error);
  return copy_into_place(from, path, overwrite, error);
}

bool prepare_report(const Options& options, int pid, const Rank& rank, ReportInputs& inputs, std::string& error) {
  if (!options.suppressions.empty() && !load_suppressions(options.suppressions, inputs.suppressions, error))
    return false;
  if (!options.baseline.empty()) {
    if (!load_baseline(options.baseline, inputs.baseline, error)) return false;
    inputs.baseline_path = options.baseline;
  }
  std::vector<std::pair<std::string, std::string>> expanded;  // (option, path) checked so far
  for (const auto& [name, path] : output_paths(options)) {
    if (path == kStdout && name != "handoff") continue;  // standard output (options.h: only where it makes sense)
    const std::string file = expand_path(path, pid, rank.value);
    for (const auto& [other, other_file] : expanded) {
      if (other_file != file) continue;
      // The second write would find the first's file at the end, after the whole run.
      error = "option '" + name + "': '" + file + "' is also the path of option '" + other +
              "' (valid: a file of its own for each report)";
      return false;
    }
    expanded.emplace_back(name, file);
    // With %p or %r every process writes its own file: whether it exists can only be known at the end.
    const bool per_process = per_process_path(path);
    if (!per_process && rank.world_size > 1) {
      // Every rank would write this one file: all but the first would fail at exit, after the whole job ran.
      error = "option '" + name + "': '" + path + "' would be written by each of the " +
              std::to_string(rank.world_size) + " processes of this job (" + rank.size_variable + "=" +
              std::to_string(rank.world_size) + ") (valid: a name with %r, the rank, or %p, the pid; docs/mpi.md)";
      return false;
    }
    if (!check_output_path(file, options.overwrite || per_process, error)) {
      error = "option '" + name + "': " + error;
      return false;
    }
  }
  return true;
}

bool range_never_entered(const ReportData& data) {
  return !data.run.capture_range.empty() &&
         data.totals.outside_range_calls + data.run.unanalyzed_calls >= data.totals.calls_watched;
}

ReportData make_report(const EventLog& log, const Analysis& analysis, const SiteOptions& sites) {
  ReportData data;
  data.library_patterns = sites.library_patterns;
  data.log = &log;
  data.analysis = &analysis;
  data.run = log.run;
  data.totals.calls_watched = analysis.calls_watched;
  data.totals.gpu_operations = log.ops.size() + log.carried.ops;
  data.totals.captured_calls = analysis.captured_calls;
  data.totals.outside_range_calls = analysis.outside_range_calls;
  data.totals.context_creation_ns = analysis.context_creation_ns;
  data.totals.kind_disagreements = analysis.kind_disagreements;
  data.totals.not_observed = analysis.not_observed;
  data.rows =
      aggregate(log, analysis, call_sites(log, kernel_names(log), sites.library_patterns), sites.site_threshold_ns);
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd)) data.source_root = cwd;
  return data;
}

void symbolize_within_limit(EventLog& log) {
  if (const size_t left = resolve_symbols(log)) {
    say("WARNING: symbolization stopped after " + std::to_string(kSymbolizeLimit.count() / 1000) +
        " s (addr2line too slow): " + counted(left, "return address", "return addresses") +
        (left == 1 ? " is" : " are") + " left as module+offset");
  }
}

Emitted emit(EventLog& log, const Analysis* analysis, const Options& options, const ReportInputs& inputs) {
  OutputFiles files;
  std::string error;
  output_files(options, files, error);
  // Call sites are resolved while the binaries are still on disk, before the events are saved, so that a saved
  // run replays with its call sites anywhere.
  const bool writes_report = options.summary || !files.json.empty() || !files.sarif.empty() || !files.trace.empty() ||
                             !files.html.empty() || !options.save_baseline.empty();
  if (options.symbolize && (writes_report || !options.save.empty())) symbolize_within_limit(log);
  bool save_failed = false;
  if (!options.save.empty()) {
    std::ostringstream rec;
    write_recording(rec, log);
    if (!write_file(expand_path(options.save, log.run.pid, log.run.rank), rec.str(), options.overwrite, error)) {
      say("ERROR: " + error);
      save_failed = true;
    }
  }
  Analysis analyzed_here;
  if (!analysis) {
    AnalysisOptions ao = analysis_options(log);
    if (ao.threshold_ns == 0) ao.threshold_ns = options.threshold;
    analyzed_here = analyze(log, ao);
    analysis = &analyzed_here;
  }
  SiteOptions sites;
  sites.site_threshold_ns = options.site_threshold;
  sites.library_patterns = library_patterns(options.library_frames);
  ReportData data = make_report(log, *analysis, sites);
  Emitted result = write_report(data, options, inputs, log.run.pid, log.run.rank);
  result.write_failed |= save_failed;
  return result;
}

Emitted write_report(ReportData& data, const Options& options, const ReportInputs& inputs, int pid, int64_t rank) {
  Emitted result;
  OutputFiles files;
  std::string error;
  output_files(options, files, error);
  set_source_root(data, options.source_root);
  auto save = [&](const std::string& path, const std::string& content) {
    if (path.empty()) return;
    if (path == kStdout) {  // after the program's own output: the report is written at its end
      write_fd(STDOUT_FILENO, content);
      return;
    }
    if (!write_file(expand_path(path, pid, rank), content, options.overwrite, error)) {
      say("ERROR: " + error);
      result.write_failed = true;
    }
  };
  // This report's suppressions are applied; those a merge carries from its reports (already applied there) follow
  // with their counts, added to an entry of the same rule, pattern and origin.
  std::vector<SuppressionUse> carried = std::move(data.suppressions);
  data.suppressions = inputs.suppressions;
  apply_suppressions(data);
  for (const SuppressionUse& c : carried) {
    auto same = std::find_if(data.suppressions.begin(), data.suppressions.end(), [&](const SuppressionUse& u) {
      return u.rule == c.rule && u.pattern == c.pattern && u.origin == c.origin;
    });
    if (same == data.suppressions.end()) {
      data.suppressions.push_back(c);
    } else {
      same->sites += c.sites;
      same->calls += c.calls;
    }
  }
  data.baseline = inputs.baseline_path;
  if (!inputs.baseline_path.empty()) mark_baseline(data.rows, inputs.baseline);
  for (const SiteRow& r : data.rows) {
    if (!r.in_baseline && r.level > result.worst_new) result.worst_new = r.level;
  }
  result.sites = data.rows.size();
  result.range_never_entered = range_never_entered(data);
  // In a merge, any process: part of the program went unchecked.
  auto any_run = [&](bool (*state)(std::string_view)) {
    if (data.processes.empty()) return state(data.run.monitoring);
    return std::any_of(data.processes.begin(), data.processes.end(),
                       [&](const ProcessInfo& p) { return state(p.run.monitoring); });
  };
  result.monitoring_off = any_run(monitoring_off);
  result.monitoring_stopped = any_run(monitoring_stopped);
  auto render = [&](void (*writer)(std::ostream&, const ReportData&)) {
    std::ostringstream out;
    writer(out, data);
    return out.str();
  };
  if (!files.json.empty()) save(files.json, render(write_json));
  if (!files.sarif.empty()) save(files.sarif, render(write_sarif));
  if (!files.trace.empty() && inputs.trace_stream) {
    if (!write_streamed_trace(*inputs.trace_stream, files.trace, options.overwrite, pid, rank, data, error)) {
      say("ERROR: " + error);
      result.write_failed = true;
    }
  } else if (!files.trace.empty() && data.log && data.analysis) {
    save(files.trace, render(write_trace));
  }
  if (!files.html.empty()) save(files.html, render(write_html));
  if (!options.save_baseline.empty()) save(options.save_baseline, baseline_text(data.rows));
  if (!options.summary) return result;
  std::ostringstream summary;
  write_summary(summary, data, options.print_limit);
  const std::string text = printable(summary.str(), /*keep_newlines=*/true);
  if (text.empty()) return result;
  if (options.log_file == "stdout") {
    write_fd(STDOUT_FILENO, text);
  } else if (is_stream(options.log_file)) {
    write_fd(STDERR_FILENO, text);
  } else if (!write_file(expand_path(options.log_file, pid, rank), text, options.overwrite, error)) {
    say("ERROR: " + error + "; the summary follows on stderr");
    write_fd(STDERR_FILENO, text);
    result.write_failed = true;
  }
  return result;
}

}  // namespace asynccheck::report
