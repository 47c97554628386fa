#include "tessera/bench/serve_target.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tessera/base/thread_pool.h"
#include "tessera/bench/engine_backend.h"
#include "tessera/bench/http_backend.h"
#include "tessera/bench/null_backend.h"
#include "tessera/bench/response_format.h"
#include "tessera/model/format/model_file.h"

namespace tessera::bench {
namespace serve_target {

Status make_inproc(const ServeBenchOptions& a, const std::string& path, ServeTarget& t) {
  if (!a.load_inproc) return invalid_argument("inproc: targets need a model loader");
  TS_ASSIGN_OR_RETURN(InprocModel loaded, a.load_inproc(path));
  t.model = std::move(loaded.model);
  t.tokenizer = std::move(loaded.tokenizer);
  engine::EngineOptions eo;
  eo.n_threads = a.threads > 0 ? a.threads : hardware_threads();
  eo.max_running = a.parallel;
  eo.ctx_size = a.ctx_size;
  eo.max_waiting = 1 << 20;  // the harness, not the queue limit, decides the load
  eo.spec = std::move(loaded.spec);
  TS_ASSIGN_OR_RETURN(t.engine, engine::Engine::create(t.model, t.tokenizer, eo));
  t.engine->start();
  EngineBackendOptions bo;
  bo.ignore_eos = true;
  if (!a.response_format.empty()) {
    TS_ASSIGN_OR_RETURN(BenchResponseFormat f, load_response_format(a.response_format));
    t.response_format = f.body;
    if (f.schema) {
      auto so = std::make_shared<engine::StructuredOutput>();
      so->schema = std::move(f.schema);
      so->vocab = engine::make_token_vocabulary(*t.tokenizer);
      bo.structured = std::move(so);
    }
  }
  t.sut = std::make_unique<EngineBackend>(
      t.engine.get(), bo,
      nlohmann::json{{"model_path", path},
                     {"threads", eo.n_threads},
                     {"max_running", eo.max_running},
                     {"speculation", std::string(engine::spec_method_name(eo.spec.method))},
                     {"ctx_size", t.engine->options().ctx_size},
                     {"kv_blocks", t.engine->options().n_blocks},
                     {"kv_block_size", t.engine->options().block_size}});
  t.name = "inproc:" + std::filesystem::path(path).filename().string();
  return Status::ok();
}

Status make_http(const ServeBenchOptions& a, ServeTarget& t) {
  HttpBackendOptions o;
  o.url = a.target;
  o.model = a.model;
  if (a.api == "chat") {
    o.api = HttpApi::kChat;
  } else if (a.api != "completions") {
    return invalid_argument("--api must be completions or chat, got '" + a.api + "'");
  }
  o.api_key = a.api_key;
  if (o.api_key.empty()) {
    if (const char* k = std::getenv("OPENAI_API_KEY")) o.api_key = k;
  }
  o.timeout_s = a.timeout;
  o.io_threads = a.io_threads;
  o.ignore_eos = a.ignore_eos;
  o.include_usage = !a.no_usage;
  if (!a.body_variants.empty()) {
    TS_ASSIGN_OR_RETURN(o.body_variants, read_body_variants(a.body_variants));
  }
  if (!a.response_format.empty()) {
    // Sent as a body change: merged into every variant (or the only one).
    TS_ASSIGN_OR_RETURN(BenchResponseFormat f, load_response_format(a.response_format));
    t.response_format = f.body;
    if (o.body_variants.empty()) o.body_variants.emplace_back(nlohmann::json::object());
    for (nlohmann::json& v : o.body_variants) v["response_format"] = f.body;
  }
  TS_ASSIGN_OR_RETURN(t.sut, HttpBackend::create(o));
  if (!a.tokenizer.empty()) {
    TS_ASSIGN_OR_RETURN(auto f, model::open_model_file(a.tokenizer));
    TS_ASSIGN_OR_RETURN(auto tok, model::make_tokenizer(f.metadata));
    t.tokenizer = std::shared_ptr<const model::Tokenizer>(std::move(tok));
  }
  t.name = a.target;
  if (a.target.starts_with("http://")) t.url = a.target;
  return Status::ok();
}

}  // namespace serve_target

std::optional<SpecCounters> ServeTarget::spec_counters() const {
  if (engine) {
    const engine::EngineStats st = engine->stats();
    return SpecCounters{static_cast<double>(st.spec_draft_tokens),
                        static_cast<double>(st.spec_accepted_tokens)};
  }
  if (!url.empty()) return scrape_spec_counters(url, 5.0);
  return std::nullopt;
}

std::optional<ConstraintCounters> ServeTarget::constraint_counters() const {
  if (engine) {
    const engine::EngineStats st = engine->stats();
    return ConstraintCounters{static_cast<double>(st.constraint_ns) * 1e-9,
                              static_cast<double>(st.constrained_tokens)};
  }
  if (!url.empty()) return scrape_constraint_counters(url, 5.0);
  return std::nullopt;
}

Result<ServeTarget> make_serve_target(const ServeBenchOptions& a) {
  ServeTarget t;
  const std::string& s = a.target;
  if (s == "null" || s.starts_with("null:")) {
    if (!a.response_format.empty()) {
      return invalid_argument("--response-format needs a target that generates (inproc: or http://)");
    }
    TS_ASSIGN_OR_RETURN(auto o, parse_null_options(s.size() > 5 ? s.substr(5) : ""));
    t.sut = std::make_unique<NullBackend>(o);
    t.name = s;
  } else if (s.starts_with("inproc:")) {
    TS_RETURN_IF_ERROR(serve_target::make_inproc(a, s.substr(7), t));
  } else if (s.starts_with("http://") || s.starts_with("https://")) {
    TS_RETURN_IF_ERROR(serve_target::make_http(a, t));
  } else {
    return invalid_argument("--target '" + s +
                            "': expected an http:// URL, inproc:MODEL_PATH or null[:ttft_ms=..,"
                            "itl_ms=..]");
  }
  return t;
}

Result<std::vector<nlohmann::json>> read_body_variants(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(ErrorCode::kNotFound, "--body-variants: cannot read '" + path + "'");
  std::vector<nlohmann::json> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
      return invalid_argument(
          fmt::format("--body-variants: {} line {} is not a JSON object", path, n));
    }
    out.push_back(std::move(j));
  }
  if (out.empty()) return invalid_argument("--body-variants: " + path + " has no JSON object");
  return out;
}

}  // namespace tessera::bench
