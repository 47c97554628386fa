// SystemUnderTest: what a benchmark measures, behind one small interface (MLPerf LoadGen's SUT).
// The harness owns time and traffic: it calls issue() at each query's scheduled moment, and the
// backend reports what happened through a QueryObserver; the harness stamps every report with
// its own Clock, so all backends are timed the same way. Backends: null (harness overhead),
// in-process engine, OpenAI-compatible HTTP.
//
// Thread-safety: issue() is called from the harness's issuing thread only. A backend may call a
// query's observer methods from any thread, but never concurrently for the same query, and in
// order: zero or more on_chunk, then exactly one of on_complete / on_error (the terminal call).
// Observer methods must not block.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tessera/base/status.h"
#include "tessera/bench/query_sample_library.h"

namespace tessera::bench {

// Why a query failed. Every failure is counted under one of these, never dropped.
enum class ErrorKind {
  kHttpStatus,  // the server answered with a non-2xx status
  kConnect,     // resolve/connect/write failed, or the connection broke before a response
  kTimeout,     // no progress within the backend's timeout
  kBadStream,   // a response that does not parse (SSE framing, JSON, missing fields)
  kRefused,     // an in-process engine refused the request (queue full, bad prompt)
  kServer,      // the server or engine reported an error inside the stream
  kCancelled,
};
std::string_view error_kind_name(ErrorKind kind);  // "http_status", "connect", ...

struct QueryError {
  ErrorKind kind = ErrorKind::kServer;
  int http_status = 0;  // for kHttpStatus
  std::string message;
};

// What the backend knows at completion. Counts are -1 when unknown; the harness then falls back
// to the sum of the chunks' token counts (and the sample's intended input length).
struct CompletionInfo {
  int32_t prompt_tokens = -1;
  int32_t output_tokens = -1;
  // The server's own account of the request when it reports one (llama.cpp's timings), in ms:
  // time to its first token (prompt processing) and to its last; -1 when not reported. Kept in
  // the records to cross-check the harness's client-side numbers.
  double server_ttft_ms = -1;
  double server_e2e_ms = -1;
};

struct Query {
  uint64_t id = 0;                      // dense, from 0, unique within a run
  size_t sample_index = 0;              // in the library given to prepare()
  const QuerySample* sample = nullptr;  // owned by the library; outlives the query
};

class QueryObserver {
 public:
  virtual ~QueryObserver() = default;
  // Output arrived: `n_tokens` new tokens (a best estimate for backends that only see text; 1 per
  // streamed chunk). The first call is the query's first token.
  virtual void on_chunk(uint64_t query_id, int32_t n_tokens) = 0;
  virtual void on_complete(uint64_t query_id, const CompletionInfo& info) = 0;
  virtual void on_error(uint64_t query_id, QueryError error) = 0;
};

class SystemUnderTest {
 public:
  virtual ~SystemUnderTest() = default;
  // A self-description for records (kind, target, options).
  virtual nlohmann::json describe() const = 0;
  // Called once, before any issue(), on the harness thread: load what samples need ahead of time
  // (e.g. tokenize every prompt) so that work is not charged to the queries. Errors end the run.
  virtual Status prepare(const QuerySampleLibrary& library) { return Status::ok(); }
  // Starts `query` and returns promptly (the send schedule depends on it). Observer calls may
  // happen inline, before issue() returns, or later from any thread. `observer` outlives the
  // query's terminal call.
  virtual void issue(const Query& query, QueryObserver* observer) = 0;
};

}  // namespace tessera::bench
