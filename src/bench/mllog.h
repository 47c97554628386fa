// MLPerf-style training logs: one line per event, ":::MLLOG " then a JSON object whose keys come
// in MLPerf's order (namespace, time_ms, event_type, key, value, metadata; metadata carries the
// calling file and line as MLPerf's logger does). Event types: POINT_IN_TIME for a value
// (submission fields, hyperparameters, eval_accuracy), INTERVAL_START / INTERVAL_END for the
// init_, run_, block_ and eval_ intervals. The key names are MLPerf's (mlperf_logging constants);
// kMlPerfRequiredKeys lists the ones a training result must log.
// Thread-safety: an MlLogger is used by one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::bench {

inline constexpr std::string_view kMlLogPrefix = ":::MLLOG ";

// The calling file and line, as a default argument takes them at the call site: the part of
// std::source_location MLPerf's metadata carries (clang 14, CI's sanitizer compiler, has no
// std::source_location over libstdc++ 12; both compilers have these builtins).
struct CallSite {
  const char* file = "";
  unsigned line = 0;
  static constexpr CallSite current(const char* file = __builtin_FILE(),
                                    unsigned line = __builtin_LINE()) {
    return CallSite{file, line};
  }
};

// The keys a run's log must contain (each at least once), in the order a run first logs them.
extern const std::vector<std::string_view> kMlPerfRequiredKeys;

class MlLogger {
 public:
  // `sink` receives each line, prefix included, without a newline. `wall_ms` is the time source
  // for time_ms (milliseconds since the Unix epoch in a real run; a fake in tests).
  MlLogger(std::function<void(const std::string&)> sink, std::function<int64_t()> wall_ms);

  // POINT_IN_TIME: `key` has `value` now.
  void event(std::string_view key, nlohmann::ordered_json value = nullptr,
             nlohmann::ordered_json metadata = nlohmann::ordered_json::object(),
             CallSite at = CallSite::current());
  // INTERVAL_START / INTERVAL_END of `key` (run_start/run_stop and the like: the key names the
  // boundary, as in MLPerf's logs).
  void start(std::string_view key, nlohmann::ordered_json value = nullptr,
             nlohmann::ordered_json metadata = nlohmann::ordered_json::object(),
             CallSite at = CallSite::current());
  void end(std::string_view key, nlohmann::ordered_json value = nullptr,
           nlohmann::ordered_json metadata = nlohmann::ordered_json::object(),
           CallSite at = CallSite::current());

  // Every line logged so far, in order.
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  void log(std::string_view type, std::string_view key, nlohmann::ordered_json value,
           nlohmann::ordered_json metadata, const CallSite& at);

  std::function<void(const std::string&)> sink_;
  std::function<int64_t()> wall_ms_;
  std::vector<std::string> lines_;
};

// The JSON object of one ":::MLLOG " line. Errors: kInvalidArgument (no prefix, not JSON, not an
// object with the six fields in MLPerf's order).
Result<nlohmann::ordered_json> parse_mllog_line(std::string_view line);

// Checks a whole log: every line parses, each of kMlPerfRequiredKeys appears, run_start comes
// before run_stop (and after init_stop), run_stop is the last interval event and carries a
// metadata status. Errors: kInvalidArgument naming the first problem.
Status check_mllog(const std::vector<std::string>& lines);

}  // namespace tessera::bench
