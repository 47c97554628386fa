// Helpers shared by the tests: where ../shared is, and temporary files.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace tessera::testing {

// The shared data directory: $TESSERA_SHARED_DIR, else ../shared beside the source tree.
inline std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("TESSERA_SHARED_DIR")) return env;
  return TESSERA_SHARED_DIR_DEFAULT;
}

// Path of a file under shared/, or empty if it does not exist (callers GTEST_SKIP with a message).
inline std::filesystem::path shared_file(const std::string& rel) {
  auto p = shared_dir() / rel;
  return std::filesystem::exists(p) ? p : std::filesystem::path();
}

// A fresh temporary directory, removed when the object goes away.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tessera-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

#if defined(__linux__)
// The CPUs the calling thread may run on, ascending (empty if the kernel refuses to say).
inline std::vector<int> affinity_of_this_thread() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}
#endif

}  // namespace tessera::testing

#define TS_SKIP_WITHOUT_SHARED(path_var, rel)                                          \
  const auto path_var = ::tessera::testing::shared_file(rel);                          \
  if (path_var.empty()) {                                                              \
    GTEST_SKIP() << "shared data '" << (rel) << "' not found under "                   \
                 << ::tessera::testing::shared_dir() << " (set TESSERA_SHARED_DIR)";   \
  }
