// ApiError: the OpenAI-style error every failed request gets,
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// with its HTTP status, and the one mapping from Tessera's ErrorCode to both.
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>

#include "tessera/base/status.h"
#include "tessera/serve/http_message.h"

namespace tessera::serve {

struct ApiError {
  int http_status = 500;
  std::string type;     // "invalid_request_error", "authentication_error", ...
  std::string message;  // for people: what was expected, what was found, what to do
  std::string param;    // the offending request field, or "" (JSON null)
  std::string code;     // a machine-readable code, or "" (JSON null)
  int retry_after_s = 0;  // > 0 adds a Retry-After header (429, 503)
};

// The one mapping from a Status to an HTTP status and error type:
//   kInvalidArgument, kCorruptData, kUnsupported  400 invalid_request_error
//   kOutOfRange                                   400 invalid_request_error  context_length_exceeded
//   kNotFound                                     404 not_found_error
//   kPermissionDenied                             403 permission_error
//   kResourceExhausted                            429 rate_limit_error (Retry-After)
//   kUnavailable, kCancelled                      503 unavailable_error (Retry-After)
//   kDeadlineExceeded                             504 timeout_error
//   kIoError, kInternal (and kOk, a caller bug)   500 server_error
// `param` names the request field at fault, if any.
ApiError api_error_from_status(const Status& status, std::string param = {});

// A 400 invalid_request_error.
ApiError invalid_request(std::string message, std::string param = {}, std::string code = {});

// A 500 server_error.
ApiError server_error(std::string message);

// The error's JSON body.
std::string api_error_json(const ApiError& error);
// The complete response: status, JSON body, Retry-After when set.
HttpResponse api_error_response(const ApiError& error);

}  // namespace tessera::serve
