#include "tessera/serve/api_error.h"

#include <nlohmann/json.hpp>

#include "tessera/serve/json_util.h"

namespace tessera::serve {

ApiError api_error_from_status(const Status& status, std::string param) {
  ApiError e;
  e.message = status.message().empty() ? std::string(error_code_name(status.code()))
                                       : status.message();
  e.param = std::move(param);
  switch (status.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kCorruptData:
    case ErrorCode::kUnsupported:
      e.http_status = 400;
      e.type = "invalid_request_error";
      break;
    case ErrorCode::kOutOfRange:
      e.http_status = 400;
      e.type = "invalid_request_error";
      e.code = "context_length_exceeded";
      break;
    case ErrorCode::kNotFound:
      e.http_status = 404;
      e.type = "not_found_error";
      break;
    case ErrorCode::kPermissionDenied:
      e.http_status = 403;
      e.type = "permission_error";
      break;
    case ErrorCode::kResourceExhausted:
      e.http_status = 429;
      e.type = "rate_limit_error";
      e.retry_after_s = 1;
      break;
    case ErrorCode::kUnavailable:
    case ErrorCode::kCancelled:
      e.http_status = 503;
      e.type = "unavailable_error";
      e.retry_after_s = 1;
      break;
    case ErrorCode::kDeadlineExceeded:
      e.http_status = 504;
      e.type = "timeout_error";
      break;
    case ErrorCode::kOk:
    case ErrorCode::kIoError:
    case ErrorCode::kInternal:
      e.http_status = 500;
      e.type = "server_error";
      break;
  }
  return e;
}

ApiError invalid_request(std::string message, std::string param, std::string code) {
  ApiError e;
  e.http_status = 400;
  e.type = "invalid_request_error";
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

ApiError server_error(std::string message) {
  ApiError e;
  e.http_status = 500;
  e.type = "server_error";
  e.message = std::move(message);
  return e;
}

std::string api_error_json(const ApiError& error) {
  nlohmann::json inner = {
      {"message", error.message},
      {"type", error.type},
      {"param", error.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(error.param)},
      {"code", error.code.empty() ? nlohmann::json(nullptr) : nlohmann::json(error.code)},
  };
  return dump_json(nlohmann::json{{"error", std::move(inner)}});
}

HttpResponse api_error_response(const ApiError& error) {
  HttpResponse r;
  r.status = error.http_status;
  r.body = api_error_json(error);
  if (error.retry_after_s > 0) r.headers.emplace_back("Retry-After", std::to_string(error.retry_after_s));
  return r;
}

}  // namespace tessera::serve
