// run_subprocess: exit codes and signals, stdout and stderr captured, the environment addition,
// timeouts that kill the whole process group, a missing program, and a program that leaves a
// background process holding its output pipe.
#include "tessera/cluster/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "tessera/base/clock.h"

namespace tessera::cluster {
namespace subprocess_test {

SubprocessResult run_ok(const std::vector<std::string>& argv, SubprocessOptions options = {}) {
  auto r = run_subprocess(argv, options);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(r).value() : SubprocessResult{};
}

// True when `pid` is gone or a zombie, polled for at most 10 s (an orphan is reaped by whoever
// adopts it, on its own schedule).
bool process_ends(pid_t pid) {
  const double deadline = real_clock()->now_s() + 10;
  while (real_clock()->now_s() < deadline) {
    if (kill(pid, 0) != 0) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_field, comm, state;
    if (stat >> pid_field >> comm >> state && state == "Z") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(SubprocessTest, ReportsExitCodes) {
  EXPECT_EQ(run_ok({"true"}).exit_code, 0);
  EXPECT_TRUE(run_ok({"true"}).succeeded());
  SubprocessResult r = run_ok({"sh", "-c", "exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.succeeded());
  EXPECT_EQ(r.describe(), "exit status 3");
}

TEST(SubprocessTest, ReportsTheSignalThatEndedIt) {
  SubprocessResult r = run_ok({"sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.term_signal, SIGTERM);
  EXPECT_FALSE(r.timed_out);
}

TEST(SubprocessTest, CapturesStdoutAndStderrInOrder) {
  SubprocessResult r = run_ok({"sh", "-c", "echo one; echo two >&2; echo three"});
  EXPECT_EQ(r.output, "one\ntwo\nthree\n");
}

TEST(SubprocessTest, PassesArgumentsVerbatimWithoutAShell) {
  std::vector<std::string> argv = {"printf", "%s\\n", "a b", "it's", "$HOME", "`id`", "*", ";|&"};
  SubprocessResult r = run_ok(argv);
  EXPECT_EQ(r.output, "a b\nit's\n$HOME\n`id`\n*\n;|&\n");
}

TEST(SubprocessTest, CapturesLargeOutput) {
  // 2 MiB: far past a pipe's buffer, so the reader must keep draining while the child writes.
  SubprocessResult r = run_ok({"sh", "-c", "head -c 2097152 /dev/zero"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output.size(), 2097152u);
}

TEST(SubprocessTest, AddsAndOverridesEnvironment) {
  SubprocessOptions options;
  options.env = {{"TESSERA_SUBPROCESS_A", "x y"}, {"HOME", "/nowhere"}};
  SubprocessResult r =
      run_ok({"sh", "-c", "printf '%s|%s|%s' \"$TESSERA_SUBPROCESS_A\" \"$HOME\" \"${PATH:+p}\""},
             options);
  EXPECT_EQ(r.output, "x y|/nowhere|p");  // PATH is inherited
}

TEST(SubprocessTest, RejectsBadEnvironmentNames) {
  SubprocessOptions options;
  options.env = {{"A=B", "1"}};
  auto r = run_subprocess({"true"}, options);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
}

TEST(SubprocessTest, TimeoutKillsTheProgramAndItsChildren) {
  SubprocessOptions options;
  options.timeout_s = 0.3;
  const double t0 = real_clock()->now_s();
  // The shell prints its background child's pid, then waits on it.
  SubprocessResult r = run_ok({"sh", "-c", "sleep 60 & echo $!; wait"}, options);
  const double elapsed = real_clock()->now_s() - t0;
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_FALSE(r.succeeded());
  EXPECT_LT(elapsed, 10.0);
  const pid_t child = static_cast<pid_t>(std::stol(r.output));
  EXPECT_TRUE(process_ends(child)) << "the background sleep " << child << " survived";
}

TEST(SubprocessTest, ReturnsWhenTheProgramExitsEvenIfABackgroundChildHoldsThePipe) {
  SubprocessOptions options;
  options.timeout_s = 30;
  const double t0 = real_clock()->now_s();
  SubprocessResult r = run_ok({"sh", "-c", "sleep 60 & echo $!"}, options);
  const double elapsed = real_clock()->now_s() - t0;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(elapsed, 20.0);
  const pid_t child = static_cast<pid_t>(std::stol(r.output));
  kill(child, SIGKILL);  // it was left running by design; clean up
}

TEST(SubprocessTest, MissingProgramIsUnavailableAndNamed) {
  auto r = run_subprocess({"tessera-no-such-program-xyz", "arg"});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(r.status().message().find("tessera-no-such-program-xyz"), std::string::npos);
  auto abs = run_subprocess({"/nonexistent/dir/prog"});
  ASSERT_FALSE(abs.is_ok());
  EXPECT_EQ(abs.status().code(), ErrorCode::kUnavailable);
}

TEST(SubprocessTest, EmptyArgvIsInvalid) {
  auto r = run_subprocess({});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace subprocess_test
}  // namespace tessera::cluster
