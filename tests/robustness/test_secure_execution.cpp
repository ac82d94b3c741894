// Under secure execution (a setuid or setgid program, or one with file capabilities: AT_SECURE) the environment
// belongs to whoever started the program, not to the program's owner: ASYNCCHECK_OPTIONS could otherwise make a
// privileged program write files where its caller chooses (json=, log_file=, save=). The library ignores it there,
// says so in one line, and reports with the defaults (the summary on stderr, no file). That the options were read
// or not shows in two ways that need no GPU: the report files they ask for, and help=1's text on stderr.
//
// How the test gets secure execution without another user: root runs a copy of secure_probe that is setgid to
// another group (nogroup): its effective group differs from its real one, so the kernel sets AT_SECURE, while it
// keeps root's access to files, so a report file it was asked for would be written if the option were honoured.
// The same copy without the setgid bit is the control. Skipped, saying why, where this cannot be arranged (not
// root, a nosuid mount or no_new_privs).
#include <errno.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "launch.h"
#include "test_dir.h"

namespace {

using namespace asynccheck_test;

const fs::path kProbe = ASYNCCHECK_SECURE_PROBE;
const fs::path kLibrary = ASYNCCHECK_LIBRARY;

class SecureExecution : public TestDir {
 protected:
  void SetUp() override {
    make_dir("asynccheck-secure", {"run", "reports"});
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    probe_ = dir_ / "secure_probe";
    fs::copy_file(kProbe, probe_);
  }
  void TearDown() override {
    fs::remove(probe_);  // a setgid copy that loads any path it is given: never left behind, failed or not
    TestDir::TearDown();
  }
  // help=1 prints the options on stderr: a visible sign that the options were read, with or without a GPU.
  Result run_probe() {
    return run({{probe_.string(), kLibrary.string()},
                {"ASYNCCHECK_OPTIONS=help=1:json=" + (dir_ / "reports" / "r.json").string() +
                 ":log_file=" + (dir_ / "reports" / "r.txt").string()},
                dir_ / "run"});
  }
  size_t reports() const {
    size_t n = 0;
    for ([[maybe_unused]] const fs::directory_entry& e : fs::directory_iterator(dir_ / "reports")) ++n;
    return n;
  }
  fs::path probe_;
};

TEST_F(SecureExecution, EnvironmentOptionsAreIgnoredAndSaidSo) {
  // The control: an ordinary run honours the options (report files, no summary on stderr).
  const Result plain = run_probe();
  ASSERT_EQ(describe(plain.status), "exit code 0") << plain.err;
  ASSERT_EQ(plain.out, "secure=0\n");
  EXPECT_EQ(reports(), 2u) << plain.err;
  EXPECT_EQ(plain.err.find("secure execution"), std::string::npos) << plain.err;
  const std::string help_line = "device_buffer_kb";  // a line of options_help()
  EXPECT_NE(plain.err.find(help_line), std::string::npos) << "help=1 was honoured: " << plain.err;
  // One option a line, as written (not folded into one line of \x0a escapes).
  EXPECT_NE(plain.err.find("\n  " + help_line + " ("), std::string::npos) << plain.err;
  EXPECT_EQ(plain.err.find("\\x0a"), std::string::npos) << plain.err;

  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root, to make a setgid copy of secure_probe for another group";
  const group* other = getgrnam("nogroup");
  if (other == nullptr) other = getgrnam("nobody");
  if (other == nullptr || other->gr_gid == getgid())
    GTEST_SKIP() << "SKIPPED: no group 'nogroup' or 'nobody' to setgid to";
  // chown clears the set-id bits: set it after. A rootless container may not map that group.
  if (chown(probe_.c_str(), 0, other->gr_gid) != 0 || chmod(probe_.c_str(), 02755) != 0) {
    GTEST_SKIP() << "SKIPPED: cannot make a setgid copy for group " << other->gr_name << ": " << strerror(errno);
  }
  empty("reports");

  const Result secure = run_probe();
  ASSERT_EQ(describe(secure.status), "exit code 0") << secure.err;
  if (secure.out != "secure=1\n") {
    GTEST_SKIP() << "SKIPPED: the setgid bit did not make the run secure here (" << secure.out
                 << "): a nosuid mount or no_new_privs";
  }
  EXPECT_EQ(reports(), 0u) << "a file was written where ASYNCCHECK_OPTIONS asked: " << secure.err;
  EXPECT_EQ(count(secure.err,
                  "asynccheck: ASYNCCHECK_OPTIONS is ignored under secure execution (a setuid or setgid program, or "
                  "one with file capabilities): the defaults apply\n"),
            1u)
      << secure.err;
  EXPECT_EQ(secure.err.find(help_line), std::string::npos) << "help=1 came from the environment: " << secure.err;
}

}  // namespace
