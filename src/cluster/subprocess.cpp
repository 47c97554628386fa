#include "tessera/cluster/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "tessera/base/clock.h"

extern char** environ;

namespace tessera::cluster {

std::string SubprocessResult::describe() const {
  if (timed_out) return "timed out after the limit (killed)";
  if (term_signal != 0) return "killed by signal " + std::to_string(term_signal);
  return "exit status " + std::to_string(exit_code);
}

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// KEY=VALUE strings: this process's environment with `additions` replacing or added.
std::vector<std::string> merged_environment(
    const std::vector<std::pair<std::string, std::string>>& additions) {
  std::map<std::string, std::string> vars;
  std::vector<std::string> order;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    std::string key(kv.substr(0, eq));
    if (vars.emplace(key, eq == std::string_view::npos ? "" : std::string(kv.substr(eq + 1)))
            .second)
      order.push_back(key);
  }
  for (const auto& [key, value] : additions) {
    if (vars.count(key) == 0) order.push_back(key);
    vars[key] = value;
  }
  std::vector<std::string> out;
  out.reserve(order.size());
  for (const auto& key : order) out.push_back(key + "=" + vars[key]);
  return out;
}

// Closes both ends of a pipe and destroys spawn attributes whatever path leaves run_subprocess.
struct SpawnResources {
  int fds[2] = {-1, -1};
  posix_spawn_file_actions_t actions{};
  posix_spawnattr_t attr{};
  bool have_actions = false;
  bool have_attr = false;
  ~SpawnResources() {
    for (int fd : fds)
      if (fd >= 0) close(fd);
    if (have_actions) posix_spawn_file_actions_destroy(&actions);
    if (have_attr) posix_spawnattr_destroy(&attr);
  }
};

void decode_status(int status, SubprocessResult& result) {
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = -1;
    result.term_signal = WTERMSIG(status);
  }
}

// Reads whatever is available now without blocking (the pipe is non-blocking); true at EOF.
bool drain(int fd, std::string& out) {
  char buf[4096];
  while (true) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return true;
    if (errno == EINTR) continue;
    return false;  // EAGAIN: nothing more for now
  }
}

}  // namespace

Result<SubprocessResult> run_subprocess(const std::vector<std::string>& argv,
                                        const SubprocessOptions& options) {
  if (argv.empty()) return invalid_argument("run_subprocess: empty argv");
  for (const auto& a : argv) {
    if (a.find('\0') != std::string::npos)
      return invalid_argument("run_subprocess: an argument of '" + argv[0] + "' has a NUL byte");
  }
  for (const auto& [key, value] : options.env) {
    if (key.empty() || key.find('=') != std::string::npos || key.find('\0') != std::string::npos ||
        value.find('\0') != std::string::npos)
      return invalid_argument("run_subprocess: bad environment variable name '" + key + "'");
  }
  const std::string& program = argv[0];

  SpawnResources res;
  if (pipe2(res.fds, O_CLOEXEC) != 0) return io_error("pipe: " + errno_text(errno));
  if (posix_spawn_file_actions_init(&res.actions) != 0) return io_error("spawn file actions");
  res.have_actions = true;
  if (posix_spawnattr_init(&res.attr) != 0) return io_error("spawn attributes");
  res.have_attr = true;
  // stdin from /dev/null; stdout and stderr both into the pipe (dup2 clears O_CLOEXEC there).
  posix_spawn_file_actions_addopen(&res.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&res.actions, res.fds[1], 1);
  posix_spawn_file_actions_adddup2(&res.actions, res.fds[1], 2);
  // A process group of its own, so a timeout kills what it started too; default signal handling
  // and an empty mask, whatever this process has set.
  sigset_t empty, all;
  sigemptyset(&empty);
  sigfillset(&all);
  posix_spawnattr_setpgroup(&res.attr, 0);
  posix_spawnattr_setsigmask(&res.attr, &empty);
  posix_spawnattr_setsigdefault(&res.attr, &all);
  posix_spawnattr_setflags(&res.attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> c_argv;
  for (const auto& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  std::vector<std::string> env = merged_environment(options.env);
  std::vector<char*> c_env;
  for (auto& e : env) c_env.push_back(e.data());
  c_env.push_back(nullptr);

  pid_t pid = -1;
  int err =
      posix_spawnp(&pid, program.c_str(), &res.actions, &res.attr, c_argv.data(), c_env.data());
  if (err != 0) {
    return Status(ErrorCode::kUnavailable, "cannot run '" + program + "': " + errno_text(err));
  }
  close(res.fds[1]);
  res.fds[1] = -1;
  int fd = res.fds[0];
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);

  SubprocessResult result;
  Clock* clock = real_clock();
  const bool limited = options.timeout_s > 0;
  const int64_t deadline_ns =
      clock->now_ns() + static_cast<int64_t>(std::max(0.0, options.timeout_s) * 1e9);
  bool eof = false;
  bool exited = false;
  int status = 0;
  while (!exited) {
    // Wake at least every 10 ms to notice the exit of a program whose output pipe is still held
    // open by something it left running.
    int wait_ms = 10;
    if (limited) {
      int64_t left_ms = (deadline_ns - clock->now_ns()) / 1'000'000;
      wait_ms = static_cast<int>(std::clamp<int64_t>(left_ms, 0, wait_ms));
    }
    pollfd p{eof ? -1 : fd, POLLIN, 0};
    if (poll(&p, 1, wait_ms) < 0 && errno != EINTR) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      return io_error("poll: " + errno_text(errno));
    }
    if (!eof) eof = drain(fd, result.output);
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      exited = true;
    } else if (r < 0 && errno != EINTR) {
      return io_error("waitpid for '" + program + "': " + errno_text(errno));
    } else if (limited && clock->now_ns() >= deadline_ns) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);  // in case it left its group
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      result.timed_out = true;
      exited = true;
    }
  }
  if (!eof) drain(fd, result.output);
  decode_status(status, result);
  return result;
}

}  // namespace tessera::cluster
