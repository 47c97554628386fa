// Status and Result<T>: the one error model of Tessera. Every fallible function at a module
// boundary returns one of these; exceptions from libraries are caught at the boundary and turned
// into a Status with context. ErrorCode maps one-to-one onto HTTP errors at the serve edge.
// Thread-safety: plain values; safe to copy and move between threads.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "tessera/base/check.h"

namespace tessera {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,    // the caller passed something malformed (bad flag, bad request field)
  kNotFound,           // a file, tensor, key or model that does not exist
  kCorruptData,        // a file or message whose bytes contradict its own format
  kUnsupported,        // well-formed but not handled (unknown architecture, tensor type)
  kOutOfRange,         // a value past a limit (context length, vocabulary)
  kResourceExhausted,  // out of memory, KV blocks, queue slots
  kIoError,            // the OS refused a read, write or map
  kUnavailable,        // try again later (loading, draining)
  kCancelled,
  kDeadlineExceeded,
  kPermissionDenied,
  kInternal,  // a bug in Tessera
};

// Returns a stable lower_snake_case name for `code`, e.g. "invalid_argument".
std::string_view error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message reads "<context>: <message>", for adding the caller's view
  // ("loading m.gguf: tensor blk.3.attn_q: offset past end of file").
  Status with_context(std::string_view context) const;
  // "invalid_argument: <message>", or "ok".
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
inline Status not_found(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
inline Status corrupt_data(std::string m) { return {ErrorCode::kCorruptData, std::move(m)}; }
inline Status unsupported(std::string m) { return {ErrorCode::kUnsupported, std::move(m)}; }
inline Status out_of_range(std::string m) { return {ErrorCode::kOutOfRange, std::move(m)}; }
inline Status resource_exhausted(std::string m) {
  return {ErrorCode::kResourceExhausted, std::move(m)};
}
inline Status io_error(std::string m) { return {ErrorCode::kIoError, std::move(m)}; }
inline Status internal_error(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }

// Either a T or a non-ok Status. Accessing value() of an error is a checked failure.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    TS_CHECK_MSG(!std::get<Status>(v_).is_ok(), "Result constructed from an ok Status");
  }

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return is_ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & {
    check_ok();
    return std::get<T>(v_);
  }
  const T& value() const& {
    check_ok();
    return std::get<T>(v_);
  }
  T&& value() && {
    check_ok();
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void check_ok() const {
    TS_CHECK_MSG(is_ok(), "value() of an error Result: " + std::get<Status>(v_).to_string());
  }
  std::variant<T, Status> v_;
};

}  // namespace tessera

#define TS_CONCAT_INNER_(a, b) a##b
#define TS_CONCAT_(a, b) TS_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function if it is not ok.
#define TS_RETURN_IF_ERROR(expr)                       \
  do {                                                 \
    ::tessera::Status ts_status_ = (expr);             \
    if (!ts_status_.is_ok()) return ts_status_;        \
  } while (0)

// `lhs` = value of the Result `expr`, or returns its Status from the enclosing function.
#define TS_ASSIGN_OR_RETURN(lhs, expr) \
  TS_ASSIGN_OR_RETURN_IMPL_(TS_CONCAT_(ts_result_, __LINE__), lhs, expr)
#define TS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.is_ok()) return tmp.status();          \
  lhs = std::move(tmp).value()
