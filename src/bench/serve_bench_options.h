// The options of the serving benchmark (`tessera bench serve`), as plain values: the target (an
// OpenAI-compatible http:// URL, inproc:MODEL for the in-process engine, or null), the scenario or
// sweep, the workload (synthetic lengths, a JSONL prompt file, or a trace, optionally under a
// structured-output constraint) and the HTTP client.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tessera/base/status.h"
#include "tessera/engine/engine_options.h"
#include "tessera/model/model.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::bench {

// What an inproc: target runs: the model, its tokenizer and the speculation settings.
struct InprocModel {
  std::shared_ptr<model::Model> model;
  std::shared_ptr<const model::Tokenizer> tokenizer;
  engine::SpecOptions spec;
};

struct ServeBenchOptions {
  std::string target;                  // http(s)://HOST:PORT, inproc:MODEL_PATH, null[:...]
  std::string model;                   // model name sent in requests (HTTP)
  std::string tokenizer;               // HTTP: a GGUF whose vocabulary makes prompts exact
  std::string api = "completions";     // HTTP: completions or chat
  std::string api_key;                 // empty: $OPENAI_API_KEY
  std::string scenario = "server";     // a Scenario name, or "sweep"
  std::string request_rate = "inf";    // server: requests/s; sweep: a series
  std::string arrival = "poisson";
  double burstiness = 1.0;             // != 1 with poisson: gamma arrivals
  std::string concurrency;             // an integer; sweep: a series
  int64_t num_prompts = 100;           // minimum measured queries
  int64_t library_size = 0;            // distinct synthetic prompts; 0: min(num_prompts, 4096)
  double min_duration = 0.0;
  int32_t warmup = 1;
  std::string input_len = "128";       // length specs (parse_length_spec)
  std::string output_len = "128";
  std::string prompts;                 // a JSONL prompt file
  std::string trace;                   // a trace to replay
  std::string trace_format;            // empty: detect
  double time_scale = 1.0;
  int32_t max_input_len = 0;
  int32_t trace_block_tokens = 0;
  int32_t max_output_len = 0;
  uint64_t seed = 0;
  bool shuffle = false;
  std::string slo;                     // ttft=MS,tpot=MS,e2e=MS
  double slo_attainment = 0.99;
  double timeout = 600.0;              // HTTP: seconds without a byte
  int io_threads = 1;
  bool ignore_eos = false;
  bool no_usage = false;
  std::string body_variants;           // HTTP: JSONL of objects merged into the request bodies
  std::string response_format;         // a response_format object or JSON Schema file, every query
  int threads = 0;                     // inproc: compute threads; 0: all cores
  int parallel = engine::EngineOptions{}.max_running;
  int64_t ctx_size = 0;                // inproc: 0: the model's
  // inproc: loads MODEL_PATH with its tokenizer and the speculation settings (the caller's
  // --tokenizer and --spec flags). Required for an inproc: target.
  std::function<Result<InprocModel>(const std::string& path)> load_inproc;
};

}  // namespace tessera::bench
