// Runs another program to completion: an argv vector (no shell, so nothing in an argument is ever
// interpreted), an optional addition to the environment, stdout and stderr captured together, and
// a wall-clock timeout after which the program and everything in its process group is killed.
// Thread-safety: run_subprocess may be called from several threads at once; it reads `environ`,
// so it must not race with setenv()/putenv() in another thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::cluster {

struct SubprocessOptions {
  // Added to this process's environment; an entry replaces a variable of the same name.
  std::vector<std::pair<std::string, std::string>> env;
  // Seconds before the program (and its process group) gets SIGKILL; <= 0: no limit.
  double timeout_s = 10;
};

struct SubprocessResult {
  int exit_code = -1;      // the exit status, or -1 when a signal ended the program
  int term_signal = 0;     // the signal that ended it; 0 when it exited
  bool timed_out = false;  // killed because the timeout passed (term_signal is then SIGKILL)
  std::string output;      // stdout and stderr, interleaved in the order they were written

  bool succeeded() const { return exit_code == 0; }
  // "exit status 3", "killed by signal 9", "timed out after the limit".
  std::string describe() const;
};

// Runs argv[0] (looked up in this process's PATH, not options.env's, when it has no '/') with
// argv[1..] as its arguments, stdin from /dev/null, in a process group of its own. Returns when
// the program has exited; output written after that by background processes it left behind
// (daemons) is not waited for.
// A program that fails or times out is not an error: look at the result.
// Errors: kInvalidArgument for an empty argv or an argument with a NUL byte; kUnavailable when the
// program cannot be started (not found, not executable), naming it; kIoError when a pipe or
// waitpid fails.
Result<SubprocessResult> run_subprocess(const std::vector<std::string>& argv,
                                        const SubprocessOptions& options = {});

}  // namespace tessera::cluster
