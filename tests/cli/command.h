// Running the asynccheck command from a test: its output, error and exit status, in a fresh directory per test.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace asynccheck::testing {

inline const fs::path kSource = ASYNCCHECK_SOURCE_DIR;
inline const fs::path kCommand = ASYNCCHECK_COMMAND;
inline const fs::path kLibrary = ASYNCCHECK_LIBRARY;
inline const fs::path kRecording = kSource / "tests/fixtures/recordings/seed000_answer.pageable.rec";

struct Result {
  int status = 0;  // as from waitpid
  std::string out, err;
  int code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
  std::string first_err_line() const { return err.substr(0, err.find('\n')); }
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("asynccheck-cli-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `argv` with `env` added, stdout and stderr captured.
  Result run(std::vector<std::string> argv, std::vector<std::string> env = {}) {
    const fs::path out = dir_ / "stdout", err = dir_ / "stderr";
    pid_t pid = fork();
    if (pid == 0) {
      freopen(out.c_str(), "w", stdout);
      freopen(err.c_str(), "w", stderr);
      for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> args;
      for (std::string& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    Result r;
    waitpid(pid, &r.status, 0);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  Result asynccheck(std::vector<std::string> args) {
    args.insert(args.begin(), kCommand.string());
    return run(args);
  }
  fs::path dir_;
};

}  // namespace asynccheck::testing
