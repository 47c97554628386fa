// Minimal leveled logging to stderr. Level from TESSERA_LOG (debug|info|warn|error), default warn,
// so command output on stdout stays clean. Thread-safety: each call writes one whole line.
#pragma once

#include <string_view>

#include <fmt/format.h>

namespace tessera {

enum class LogLevel { kDebug = 0, kInfo, kWarn, kError };

LogLevel log_level();
void set_log_level(LogLevel level);
void log_line(LogLevel level, std::string_view message);

template <typename... Args>
void log_info(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::kInfo) log_line(LogLevel::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_warn(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::kWarn) log_line(LogLevel::kWarn, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_debug(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::kDebug) log_line(LogLevel::kDebug, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace tessera
