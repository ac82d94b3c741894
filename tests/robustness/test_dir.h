// The robustness tests' fixture: a fresh directory per test, PREFIX-PID-TEST under the temporary directory, with
// the subdirectories the test runs programs and collects reports in; removed after the test, kept for a look when
// it failed.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <initializer_list>
#include <string>

namespace asynccheck_test {

class TestDir : public ::testing::Test {
 protected:
  void make_dir(const std::string& prefix, std::initializer_list<const char*> subdirs) {
    dir_ = std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    for (const char* d : subdirs) std::filesystem::create_directories(dir_ / d);
  }
  // Empties one subdirectory, between the runs of one test.
  void empty(const char* subdir) {
    std::filesystem::remove_all(dir_ / subdir);
    std::filesystem::create_directories(dir_ / subdir);
  }
  void TearDown() override {
    if (!HasFailure() && !dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
};

}  // namespace asynccheck_test
