// HttpBackend: any OpenAI-compatible endpoint as a SystemUnderTest (Tessera's server, llama.cpp's
// llama-server, vLLM, ...). An async Boost.Beast client on one or two io threads sends streaming
// POSTs to /v1/completions or /v1/chat/completions and parses the server-sent events as they
// arrive: each chunk with output text is one on_chunk, and the final usage (requested with
// stream_options.include_usage) gives exact token counts; without it output is counted as one
// token per content chunk. Connections are kept alive and reused.
// Errors are classified: non-2xx status (with the body's message), connect (resolve, connect,
// write, or a connection dropped mid-response), timeout (no byte for timeout_s), bad stream.
// Thread-safety: issue() from the harness thread; callbacks come from the io threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tessera/bench/system_under_test.h"

namespace tessera::bench {

enum class HttpApi { kCompletions, kChat };

struct HttpBackendOptions {
  std::string url;            // http://host[:port][/prefix]; the API path is appended
  std::string model;          // the "model" field sent
  HttpApi api = HttpApi::kCompletions;
  std::string api_key;        // sent as "Authorization: Bearer KEY" when non-empty
  double timeout_s = 600.0;   // longest wait for any byte of a response
  int io_threads = 1;         // 1 or 2
  bool ignore_eos = false;    // sent as "ignore_eos" (vLLM, llama.cpp): exact output lengths
  bool include_usage = true;  // stream_options.include_usage
  double temperature = 0.0;
  int max_idle_connections = 4096;
  // Per-query changes to the body: query `id` gets body_variants[id % size] merged in (RFC 7386
  // merge patch: a null value removes the field). For mixes such as requests spread over LoRA
  // adapters ({"model": "base:a1"}, ... or llama-server's {"lora": [{"id": 1, "scale": 1}]}).
  std::vector<nlohmann::json> body_variants;
};

struct ParsedUrl {
  std::string host;
  std::string port;
  std::string prefix;  // without a trailing slash; "" for the root
};
// Parses "http://host[:port][/prefix]". Errors: kInvalidArgument (https is not supported).
Result<ParsedUrl> parse_http_url(const std::string& url);

class HttpBackend final : public SystemUnderTest {
 public:
  // Resolves the host once. Errors: kInvalidArgument (bad URL), kUnavailable (cannot resolve).
  static Result<std::unique_ptr<HttpBackend>> create(const HttpBackendOptions& options);
  ~HttpBackend() override;  // stops the io threads; queries in flight get no further calls

  nlohmann::json describe() const override;
  void issue(const Query& query, QueryObserver* observer) override;

  // The JSON body sent for `sample` as query `query_id` (for tests and --dry-run).
  std::string request_body(const QuerySample& sample, uint64_t query_id = 0) const;

  struct Impl;  // the io_context, threads and connection pool (http_backend.cpp)

 private:
  explicit HttpBackend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::bench
