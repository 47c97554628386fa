// `tessera serve`: an OpenAI-compatible HTTP server over one model with continuous batching.
// The port is bound first (/health answers 503 while the model loads), then the model is loaded,
// the engine started and the server switched to serving. SIGINT/SIGTERM drain in-flight requests
// for up to --drain-seconds, then exit 0.
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "commands.h"
#include "spec_args.h"
#include "common.h"
#include "tessera/base/log.h"
#include "tessera/engine/engine.h"
#include "tessera/engine/kv_manager.h"
#include "tessera/fleet/fleet_manager.h"
#include "tessera/fleet/idle_policy.h"
#include "tessera/serve/chat_template.h"
#include "tessera/serve/fleet_backend.h"
#include "tessera/serve/fleet_config.h"
#include "tessera/serve/adapter_registry.h"
#include "tessera/serve/model_chat_template.h"
#include "tessera/serve/model_router.h"
#include "tessera/serve/server.h"

namespace tessera::cli {
namespace {

struct ServeArgs {
  std::string model;
  std::string models_dir;            // --models: every *.gguf in it, served by a FleetManager
  std::string config;                // --config: a fleet config file (serve/fleet_config.h)
  std::string mem_budget;            // bytes with an optional K/M/G/T suffix; empty: unlimited
  std::string host_budget;           // the same, for suspended models' weights (host tier)
  std::string keep_prefix = "64M";   // prefix-cache blocks a suspended model keeps
  std::string idle_policy = "fixed";  // fixed | adaptive | always-on
  double keep_alive_s = 300.0;
  double resume_deadline_s = 30.0;
  std::string tokenizer;
  std::string name;
  std::string host = "127.0.0.1";
  int port = 8080;
  int threads = 0;
  int parallel = engine::EngineOptions{}.max_running;
  int64_t ctx_size = 4096;
  int32_t kv_blocks = 0;
  std::string kv_memory;             // BYTES or PERCENT of (available memory - weights); empty: default
  int32_t block_size = 16;
  int32_t batch_tokens = 512;
  int32_t max_queue = engine::EngineOptions{}.max_waiting;
  bool no_prefix_cache = false;
  std::string kv_type = "f16";
  std::string api_key;
  std::string admin_api_key;
  std::string chat_template;            // --chat-template NAME|FILE
  serve::ChatTemplateOverride chat_override;  // what it names, read once at start
  std::string embedding_pooling;   // mean | last; empty: the model's metadata (pooling_type)
  std::vector<std::string> loras;  // NAME=PATH
  bool lora_runtime = false;
  std::string lora_dir;  // --lora-dir: runtime adapters load only from here
  int io_threads = 2;
  int work_threads = serve::WorkPoolOptions{}.n_threads;
  int64_t template_timeout_ms = serve::ChatRenderLimits{}.max_time_ms;
  std::string template_memory = "128M";
  serve::ChatRenderLimits render_limits;  // from the two above and the server, at start
  double drain_seconds = 30.0;
  SpecArgs spec;
};

// --chat-template NAME|FILE: a built-in name, else a .jinja file, read and checked here so a bad
// file stops the server at start instead of failing every chat request.
Result<serve::ChatTemplateOverride> chat_template_override(const std::string& spec) {
  serve::ChatTemplateOverride o;
  if (spec.empty()) return o;
  if (serve::chat_template_from_name(spec).is_ok()) {
    o.name = spec;
    return o;
  }
  std::ifstream f(spec, std::ios::binary);
  if (!f) {
    return invalid_argument(fmt::format(
        "--chat-template '{}': neither a built-in name ({}) nor a readable .jinja file", spec,
        serve::chat_template_names()));
  }
  std::stringstream text;
  text << f.rdbuf();
  o.file = spec;
  o.jinja_source = text.str();
  auto parsed = jinja::Template::parse(o.jinja_source);
  if (!parsed.is_ok()) return parsed.status().with_context("--chat-template " + spec);
  return o;
}

// The wall-clock date a template's strftime_now formats (local time, as HF's datetime.now()).
std::tm local_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

// A renderer for the model's chat template, or one that explains why there is none (the chat
// route answers 400 with that message; completions keep working).
serve::ChatRenderer make_chat_renderer(const model::Metadata& metadata,
                                       std::shared_ptr<const model::Tokenizer> tokenizer,
                                       const serve::ChatTemplateOverride& override_spec,
                                       const serve::ChatRenderLimits& limits) {
  auto resolved = serve::resolve_model_chat_template(metadata, override_spec);
  if (!resolved.is_ok()) {
    log_warn("chat route disabled: {}", resolved.status().message());
    // The model's file is at fault, whatever the code of the reason: the route answers 500
    // chat_template_unavailable (never a status a client would retry).
    Status why(ErrorCode::kInternal,
               "it was refused when the model was loaded: " + resolved.status().message());
    return [why](const std::vector<serve::ChatTurn>&,
                 const nlohmann::ordered_json*) -> Result<serve::RenderedChat> { return why; };
  }
  auto tmpl = std::make_shared<const serve::ModelChatTemplate>(std::move(resolved).value());
  std::printf("tessera serve: chat template: %s\n", tmpl->origin.c_str());
  std::fflush(stdout);
  if (!tmpl->note.empty()) log_warn("chat template: {}", tmpl->note);
  const std::string bos =
      tokenizer->bos_id() >= 0 ? std::string(tokenizer->token_text(tokenizer->bos_id())) : "";
  const std::string eos =
      tokenizer->eos_id() >= 0 ? std::string(tokenizer->token_text(tokenizer->eos_id())) : "";
  // The route encodes with the vocabulary's own BOS rule; when the template also writes BOS at
  // the start, drop that one so the prompt does not begin with two.
  const bool tokenizer_adds_bos = !tokenizer->encode("", true, false).empty() &&
                                  tokenizer->encode("", true, false).front() == tokenizer->bos_id();
  return [tmpl, bos, eos, tokenizer_adds_bos, limits](const std::vector<serve::ChatTurn>& turns,
                                                      const nlohmann::ordered_json* tools)
             -> Result<serve::RenderedChat> {
    std::vector<serve::ChatMessage> messages;
    messages.reserve(turns.size());
    for (const auto& t : turns) {
      messages.push_back({t.role, t.content, t.tool_calls, t.tool_call_id, t.name});
    }
    bool used_fallback = false;
    TS_ASSIGN_OR_RETURN(std::string text,
                        serve::render_model_chat(*tmpl, messages, true, bos, eos, local_now(),
                                                 &used_fallback, tools, limits));
    if (used_fallback) {
      log_warn("chat template: the interpreter refused a render; used the built-in {}",
               serve::chat_template_name(*tmpl->builtin));
    }
    if (tokenizer_adds_bos && !bos.empty() && text.starts_with(bos)) text.erase(0, bos.size());
    return serve::RenderedChat{std::move(text), tmpl->tool_syntax};
  };
}

// "512M" -> 536870912. Suffixes K, M, G, T (powers of 1024), optionally followed by "B"/"iB".
Result<int64_t> parse_bytes(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (...) {
    return invalid_argument("'" + text + "' is not a size (e.g. 8G, 512M, 1073741824)");
  }
  std::string suffix = text.substr(used);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.ends_with("IB")) suffix.resize(suffix.size() - 2);
  else if (suffix.size() > 1 && suffix.ends_with("B")) suffix.resize(suffix.size() - 1);
  double scale = 1;
  if (suffix.empty() || suffix == "B") scale = 1;
  else if (suffix == "K") scale = 1024.0;
  else if (suffix == "M") scale = 1024.0 * 1024;
  else if (suffix == "G") scale = 1024.0 * 1024 * 1024;
  else if (suffix == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  else return invalid_argument("'" + text + "': unknown suffix (K, M, G or T)");
  if (v < 0) return invalid_argument("a size must be >= 0");
  return static_cast<int64_t>(v * scale);
}

// --kv-memory: "4G" (bytes) or "30%" (of the memory available now less the weights). Empty: 0,
// the engine's default share. Percent needs `weight_bytes` (the fleet divides its own budget).
Result<int64_t> parse_kv_memory(const std::string& text, int64_t weight_bytes) {
  if (text.empty()) return int64_t{0};
  if (text.ends_with("%")) {
    double pct = 0;
    size_t used = 0;
    try {
      pct = std::stod(text.substr(0, text.size() - 1), &used);
    } catch (...) {
      used = 0;
    }
    if (used != text.size() - 1 || !(pct > 0 && pct <= 100)) {
      return invalid_argument("'" + text + "' is not a percentage in (0, 100]");
    }
    const int64_t b = engine::default_kv_memory_bytes(weight_bytes, pct / 100.0);
    if (b <= 0) return invalid_argument("available memory is unknown here: give bytes");
    return b;  // 1 when the weights leave nothing: the engine then names what one sequence needs
  }
  TS_ASSIGN_OR_RETURN(const int64_t b, parse_bytes(text));
  if (b <= 0) return invalid_argument("the KV memory must be > 0");
  return b;
}

engine::EngineOptions engine_options(const ServeArgs& a, kernels::DType kv_dtype,
                                     int64_t model_context) {
  engine::EngineOptions eo;
  eo.n_threads = a.threads;
  eo.max_running = a.parallel;
  eo.max_waiting = a.max_queue;
  eo.ctx_size = std::min<int64_t>(a.ctx_size, model_context);
  eo.block_size = a.block_size;
  eo.n_blocks = a.kv_blocks;
  eo.max_batch_tokens = a.batch_tokens;
  eo.prefix_cache = !a.no_prefix_cache;
  eo.kv_dtype = kv_dtype;
  eo.spec.max_draft = a.spec.tokens;
  eo.spec.max_rows = a.spec.max_rows;
  return eo;
}

// --models DIR: one FleetManager over every *.gguf in DIR, each a router entry named by its
// stem; idle models are suspended by the idle policy and resumed by requests.
int run_fleet(const ServeArgs& a, kernels::DType kv_dtype, serve::Server& server,
              serve::ModelRouter& router, sigset_t& signals) {
  fleet::FleetOptions fo;
  if (!a.mem_budget.empty()) {
    auto b = parse_bytes(a.mem_budget);
    if (!b.is_ok()) return fail(b.status().with_context("--mem-budget"));
    fo.active_budget_bytes = *b;
  }
  if (!a.host_budget.empty()) {
    auto b = parse_bytes(a.host_budget);
    if (!b.is_ok()) return fail(b.status().with_context("--host-budget"));
    fo.host_budget_bytes = *b;
  }
  {
    auto b = parse_bytes(a.keep_prefix);
    if (!b.is_ok()) return fail(b.status().with_context("--keep-prefix-cache"));
    fo.keep_prefix_bytes = *b;
  }
  const fleet::IdlePolicySettings idle{a.idle_policy, a.keep_alive_s};
  auto policy = fleet::make_idle_policy(idle);
  if (!policy.is_ok()) return fail(policy.status().with_context("--idle-policy/--keep-alive"));
  fo.idle_policy = std::move(policy).value();
  fo.request_deadline_ns = static_cast<int64_t>(a.resume_deadline_s * 1e9);
  // One device for every model: their engines take turns on one pool of --threads cores.
  engine::DeviceSchedulerOptions dso;
  dso.n_threads = a.threads;
  fo.device = std::make_shared<engine::DeviceScheduler>(dso);

  // The model context caps ctx_size when the fleet opens the file (FleetManager clamps).
  engine::EngineOptions defaults = engine_options(a, kv_dtype, a.ctx_size);
  if (!a.spec.draft_model.empty() || !a.spec.skip_layers.empty()) {
    return fail("a draft model serves one model (--model); a fleet speculates with --spec ngram");
  }
  auto spec = spec_options(a.spec, a.tokenizer, nullptr, nullptr);
  if (!spec.is_ok()) return fail(spec.status());
  defaults.spec = std::move(spec).value();
  if (a.kv_memory.ends_with("%")) {
    return fail("with --models/--config, --kv-memory takes bytes per model (the fleet divides "
                "--mem-budget among models by default)");
  }
  auto kv_memory = parse_kv_memory(a.kv_memory, 0);
  if (!kv_memory.is_ok()) return fail(kv_memory.status().with_context("--kv-memory"));
  defaults.kv_memory_bytes = *kv_memory;
  std::vector<fleet::FleetModelSpec> specs;
  if (!a.config.empty()) {
    auto parsed = serve::read_fleet_config(a.config, defaults, idle);
    if (!parsed.is_ok()) return fail(parsed.status());
    specs = std::move(parsed).value();
  } else {
    auto listed = serve::fleet_specs_from_dir(a.models_dir, defaults);
    if (!listed.is_ok()) return fail(listed.status());
    specs = std::move(listed).value();
  }
  if (Status s = serve::add_lora_flags(a.loras, &specs); !s.is_ok()) return fail(s);
  const size_t n_models = specs.size();
  auto created = fleet::FleetManager::create(std::move(specs), fo);
  if (!created.is_ok()) return fail(created.status());
  std::shared_ptr<fleet::FleetManager> fleet = std::move(created).value();
  serve::attach_fleet_metrics(fleet, server.metrics());
  fleet->add_listener([](const fleet::TransitionEvent& ev) {
    const std::string line = fmt::format(
        "tessera serve: fleet: {} {} -> {} ({}; {:.3f} s in {})\n", ev.model,
        fleet::model_state_name(ev.from), fleet::model_state_name(ev.to), ev.reason,
        static_cast<double>(ev.time_in_from_ns) * 1e-9, fleet::model_state_name(ev.from));
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
  });
  std::optional<engine::Pooling> pooling_override;
  if (!a.embedding_pooling.empty()) {
    auto pooling = engine::parse_pooling(a.embedding_pooling);
    if (!pooling.is_ok()) return fail(pooling.status().with_context("--embedding-pooling"));
    pooling_override = *pooling;
  }
  for (const std::string& name : fleet->names()) {
    serve::ModelEntry entry = serve::fleet_entry(fleet, name);
    if (pooling_override) entry.pooling = *pooling_override;
    if (fleet->opened(name).is_ok()) {
      entry.chat = make_chat_renderer(fleet->metadata(name), fleet->shared_tokenizer(name),
                                      a.chat_override, a.render_limits);
    } else {
      // The file did not open (the model is Failed; requests get 503 until a retry opens it):
      // the template comes from the file once it does.
      std::weak_ptr<fleet::FleetManager> weak = fleet;
      entry.chat = [weak, name, tmpl = a.chat_override, limits = a.render_limits](
                       const std::vector<serve::ChatTurn>& turns,
                       const nlohmann::ordered_json* tools) -> Result<serve::RenderedChat> {
        auto f = weak.lock();
        if (!f) return Status(ErrorCode::kUnavailable, "the server is stopping");
        TS_RETURN_IF_ERROR(f->opened(name));
        serve::ChatRenderer r =
            make_chat_renderer(f->metadata(name), f->shared_tokenizer(name), tmpl, limits);
        if (!r) return invalid_argument("the model has no usable chat template");
        return r(turns, tools);
      };
    }
    entry.created = static_cast<int64_t>(std::time(nullptr));
    if (Status s = router.add(std::move(entry)); !s.is_ok()) return fail(s);
  }
  if (Status s = fleet->start(); !s.is_ok()) log_warn("fleet: {}", s.message());
  size_t n_failed = 0;
  for (const auto& m : fleet->status()) {
    if (m.state == fleet::ModelState::kFailed) {
      ++n_failed;
      std::printf("tessera serve: model '%s' failed: %s (requests get 503; retried on request)\n",
                  m.name.c_str(), m.last_error.c_str());
      continue;
    }
    std::printf("tessera serve: model '%s' %s (%.1f MiB weights + KV, idle policy %s)\n",
                m.name.c_str(), std::string(fleet::model_state_name(m.state)).c_str(),
                static_cast<double>(m.active_bytes) / (1 << 20), m.idle_policy.c_str());
  }
  if (n_failed == n_models) {
    fleet->stop();
    return fail("none of the fleet's models could be loaded");
  }
  server.set_serving();
  std::printf("tessera serve: fleet of %zu models on one device of %d threads, default idle policy %s, "
              "keep-alive %.0f s, budget %s\n",
              n_models, fo.device->n_threads(), a.idle_policy.c_str(), a.keep_alive_s,
              a.mem_budget.empty() ? "unlimited" : a.mem_budget.c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  std::printf("tessera serve: %s, draining (up to %.0f s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
              a.drain_seconds);
  std::fflush(stdout);
  server.shutdown(std::chrono::milliseconds(static_cast<int64_t>(a.drain_seconds * 1000)));
  fleet->stop();
  std::printf("tessera serve: stopped\n");
  return 0;
}

int run_serve(const ServeArgs& args) {
  ServeArgs a = args;
  auto chat_override = chat_template_override(a.chat_template);
  if (!chat_override.is_ok()) return fail(chat_override.status());
  a.chat_override = std::move(chat_override).value();
  // Signals are taken by sigwait() below: block them before any thread starts so every thread
  // inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  kernels::DType kv_dtype = kernels::DType::kF16;
  if (a.kv_type == "f32") kv_dtype = kernels::DType::kF32;
  else if (a.kv_type != "f16") return fail("--kv-type must be f16 or f32");

  serve::ServerOptions options;
  options.http.host = a.host;
  options.http.port = a.port;
  options.http.n_threads = a.io_threads;
  if (a.work_threads < 1) return fail("--work-threads must be >= 1");
  options.work.n_threads = a.work_threads;
  // A model's slow work takes at most half the pool: another model always finds a thread.
  options.work.max_running_per_key = std::max(1, a.work_threads / 2);
  auto template_memory = parse_bytes(a.template_memory);
  if (!template_memory.is_ok()) return fail(template_memory.status().with_context("--template-memory"));
  if (*template_memory < (int64_t{1} << 20)) return fail("--template-memory must be at least 1M");
  a.render_limits.max_memory_bytes = static_cast<size_t>(*template_memory);
  if (a.template_timeout_ms < 1) return fail("--template-timeout-ms must be >= 1");
  a.render_limits.max_time_ms = a.template_timeout_ms;
  options.api_key = a.api_key;
  if (options.api_key.empty()) {
    if (const char* k = std::getenv("TESSERA_API_KEY")) options.api_key = k;
  }
  options.admin_api_key = a.admin_api_key;
  if (options.admin_api_key.empty()) {
    if (const char* k = std::getenv("TESSERA_ADMIN_API_KEY")) options.admin_api_key = k;
  }
  if (!options.admin_api_key.empty() && options.admin_api_key == options.api_key) {
    return fail("--admin-api-key must differ from --api-key");
  }
  auto router = std::make_shared<serve::ModelRouter>();
  serve::Server server(options, router);
  a.render_limits.cancel = server.render_cancel();
  if (Status s = server.start(); !s.is_ok()) return fail(s.with_context("starting the HTTP server"));
  std::printf("tessera serve: listening on http://%s:%d\n", a.host.c_str(), server.port());
  std::fflush(stdout);
  if (!a.lora_dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(a.lora_dir, ec)) {
      return fail(fmt::format("--lora-dir '{}' is not a directory", a.lora_dir));
    }
    a.lora_runtime = true;
  } else if (a.lora_runtime) {
    return fail("--lora-runtime needs --lora-dir DIR: clients may load adapters only from a "
                "directory the operator names");
  }
  if (!a.models_dir.empty() || !a.config.empty()) {
    if (a.lora_runtime) {
      return fail("--lora-dir works with --model (one base model) for now; in a fleet, list "
                  "adapters with --lora BASE:NAME=PATH or in the --config file");
    }
    return run_fleet(a, kv_dtype, server, *router, signals);
  }

  auto loaded = load_model_and_tokenizer(a.model, a.tokenizer);
  if (!loaded.is_ok()) return fail(loaded.status());
  std::shared_ptr<model::Model> model = std::move(loaded->model);
  std::shared_ptr<const model::Tokenizer> tokenizer = std::move(loaded->tokenizer);

  engine::EngineOptions eo = engine_options(a, kv_dtype, model->config().context_length);
  const auto weight_bytes = static_cast<int64_t>(model->file().tensor_bytes());
  auto kv_memory = parse_kv_memory(a.kv_memory, weight_bytes);
  if (!kv_memory.is_ok()) return fail(kv_memory.status().with_context("--kv-memory"));
  eo.kv_memory_bytes = *kv_memory;
  auto spec = spec_options(a.spec, a.tokenizer, model, tokenizer);
  if (!spec.is_ok()) return fail(spec.status());
  eo.spec = std::move(spec).value();
  auto created = engine::Engine::create(model, tokenizer, eo);
  if (!created.is_ok()) return fail(created.status().with_context("creating the engine"));
  std::shared_ptr<engine::Engine> engine = std::move(created).value();
  engine->start();

  const std::string name = a.name.empty() ? serve::model_name_from_path(a.model) : a.name;
  serve::ModelEntry entry;
  entry.name = name;
  entry.backend = serve::engine_backend(engine);
  entry.chat = make_chat_renderer(model->file().metadata, tokenizer, a.chat_override,
                                  a.render_limits);
  entry.pooling = engine::pooling_from_metadata(model->file().metadata);
  if (!a.embedding_pooling.empty()) {
    auto pooling = engine::parse_pooling(a.embedding_pooling);
    if (!pooling.is_ok()) return fail(pooling.status().with_context("--embedding-pooling"));
    entry.pooling = *pooling;
  }
  entry.created = static_cast<int64_t>(std::time(nullptr));
  const serve::ModelEntry base_entry = entry;
  if (Status s = router->add(std::move(entry)); !s.is_ok()) return fail(s);
  if (!a.loras.empty() || a.lora_runtime) {
    // The adapters are checked against the file the base weights came from (the model keeps it).
    auto adapters = std::make_shared<serve::AdapterRegistry>(
        router, base_entry, engine, std::shared_ptr<const model::ModelFile>(model, &model->file()),
        a.lora_runtime, a.lora_dir);
    for (const std::string& lora : a.loras) {
      const size_t eq = lora.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == lora.size()) {
        return fail(fmt::format("--lora '{}': expected NAME=PATH", lora));
      }
      auto info = adapters->load(lora.substr(0, eq), lora.substr(eq + 1));
      if (!info.is_ok()) return fail(info.status().with_context("--lora " + lora));
      std::printf("tessera serve: adapter '%s' (%s, rank %lld, %lld matrices, %.1f MiB) served as '%s'\n",
                  info->name.c_str(), info->format.c_str(), static_cast<long long>(info->rank),
                  static_cast<long long>(info->matrices), static_cast<double>(info->bytes) / (1 << 20),
                  info->model.c_str());
    }
    server.set_adapters(adapters);
  }
  server.set_serving();
  const engine::EngineOptions& o = engine->options();
  const auto pool = engine::size_kv_pool(model->config(), o);
  const int64_t pool_bytes = pool.is_ok() ? pool->bytes() : 0;
  const std::string budget =
      !a.kv_memory.empty() ? "--kv-memory " + a.kv_memory
                           : fmt::format("{:.0f}% of available memory less the weights",
                                         engine::kDefaultKvMemoryShare * 100);
  std::string kv_source = "--kv-blocks";
  if (a.kv_blocks <= 0 && pool.is_ok()) {
    kv_source = pool->n_blocks == pool->blocks_per_seq * o.max_running
                    ? fmt::format("what {} full-length sequences need, under a budget of {:.0f} "
                                  "MiB ({})", o.max_running,
                                  static_cast<double>(o.kv_memory_bytes) / (1 << 20), budget)
                    : fmt::format("a budget of {:.0f} MiB, {}",
                                  static_cast<double>(o.kv_memory_bytes) / (1 << 20), budget);
  }
  const int64_t positions = static_cast<int64_t>(o.n_blocks) * o.block_size;
  std::printf("tessera serve: model '%s' ready: KV pool %.1f MiB (%d blocks of %d positions, "
              "%lld positions; %s), up to %d sequences of up to %lld positions (%lld at full "
              "length), %d tokens per step, %d threads, speculation %s\n",
              name.c_str(), static_cast<double>(pool_bytes) / (1 << 20), o.n_blocks,
              o.block_size, static_cast<long long>(positions), kv_source.c_str(),
              std::min(o.max_running, o.max_batch_tokens), static_cast<long long>(o.ctx_size),
              static_cast<long long>(positions / o.ctx_size), o.max_batch_tokens, o.n_threads,
              std::string(engine::spec_method_name(o.spec.method)).c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  std::printf("tessera serve: %s, draining (up to %.0f s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
              a.drain_seconds);
  std::fflush(stdout);
  const auto grace = std::chrono::milliseconds(static_cast<int64_t>(a.drain_seconds * 1000));
  server.shutdown(grace);
  engine->drain(std::chrono::milliseconds(1000));
  std::printf("tessera serve: stopped\n");
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, RunFn& run) {
  auto* cmd = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
  auto a = std::make_shared<ServeArgs>();
  auto* model_opt = cmd->add_option("-m,--model", a->model, "Model file (GGUF or llama2.c checkpoint)");
  auto* models_opt = cmd->add_option(
      "--models", a->models_dir,
      "Serve every *.gguf in DIR (name = file stem), suspending idle models and resuming on demand");
  auto* config_opt = cmd->add_option(
      "--config", a->config,
      "Serve the models a fleet config file lists, each with its own settings (JSON; see "
      "docs/SERVING.md)");
  model_opt->excludes(models_opt);
  models_opt->excludes(model_opt);
  config_opt->excludes(model_opt);
  config_opt->excludes(models_opt);
  cmd->add_option("--mem-budget", a->mem_budget,
                  "With --models: active memory (weights + KV) for resumed models, e.g. 8G "
                  "(default: unlimited)");
  cmd->add_option("--host-budget", a->host_budget,
                  "With --models/--config: memory for suspended models' weights (page cache), "
                  "e.g. 4G; above it the least likely to be needed soon go to disk (default: "
                  "unlimited)");
  cmd->add_option("--idle-policy", a->idle_policy,
                  "With --models/--config: fixed (keep-alive), adaptive (hybrid histogram) or always-on; "
                  "a config entry's idle_policy/keep_alive_s override it for that model")
      ->capture_default_str();
  cmd->add_option("--keep-alive", a->keep_alive_s,
                  "With --models: idle seconds before a model is suspended (adaptive: fallback)")
      ->capture_default_str();
  cmd->add_option("--keep-prefix-cache", a->keep_prefix,
                  "With --models/--config: bytes of prefix-cache blocks each suspended model keeps "
                  "(host tier) so its warm prompts stay warm after a resume; 0: none")
      ->capture_default_str();
  cmd->add_option("--resume-deadline", a->resume_deadline_s,
                  "With --models: seconds a request waits for its model to resume before a 503")
      ->capture_default_str();
  cmd->add_option("--tokenizer", a->tokenizer, "Tokenizer file (default: the model's own)");
  cmd->add_option("--name", a->name, "Served model name (default: the file name without extension)");
  cmd->add_option("--host", a->host, "Address to bind")->capture_default_str();
  cmd->add_option("--port", a->port, "Port to bind (0: any free port)")->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "Compute threads (0: all cores)")->capture_default_str();
  cmd->add_option("--parallel", a->parallel,
                  "Sequences running at once, at most (admission is by KV blocks and the token "
                  "budget; this only caps it)")
      ->capture_default_str();
  cmd->add_option("-c,--ctx-size", a->ctx_size,
                  "Positions of one sequence at most (capped at the model's; reserves nothing)")
      ->capture_default_str();
  cmd->add_option("--kv-blocks", a->kv_blocks, "KV blocks in the pool (0: sized by --kv-memory)")
      ->capture_default_str();
  cmd->add_option("--kv-memory", a->kv_memory,
                  "KV pool budget: bytes (8G, 512M) or a percentage of the memory available at "
                  "start less the weights (30%); the pool takes up to this, no more than "
                  "--parallel full-length sequences need (default: 50%; with --models/--config: "
                  "an equal share of --mem-budget, or of 50% of available memory, after the weights)");
  cmd->add_option("--block-size", a->block_size, "Positions per KV block")->capture_default_str();
  cmd->add_option("--batch-tokens", a->batch_tokens, "Rows per forward step (prefill chunk budget)")
      ->capture_default_str();
  cmd->add_option("--max-queue", a->max_queue, "Waiting requests beyond which new ones get 429")
      ->capture_default_str();
  cmd->add_flag("--no-prefix-cache", a->no_prefix_cache, "Do not reuse cached prompt prefixes");
  cmd->add_option("--kv-type", a->kv_type, "KV cache type: f16 or f32")->capture_default_str();
  cmd->add_option("--api-key", a->api_key, "Require 'Authorization: Bearer KEY' (or TESSERA_API_KEY)");
  cmd->add_option("--admin-api-key", a->admin_api_key,
                  "The key of the operator routes (/admin/..., loading adapters), which refuse "
                  "the --api-key (or TESSERA_ADMIN_API_KEY); with --api-key alone they are off");
  cmd->add_option("--lora", a->loras,
                  "LoRA adapter served on the base model as MODEL:NAME, given as NAME=PATH (PEFT "
                  "directory or GGUF LoRA; in a fleet BASE:NAME=PATH, where it lives in the fleet's "
                  "memory tiers like a model); repeatable. Requests of every adapter share the batches");
  cmd->add_option("--lora-dir", a->lora_dir,
                  "Let POST /v1/adapters load adapters from this directory (only; paths are "
                  "resolved and kept inside it)");
  cmd->add_flag("--lora-runtime", a->lora_runtime,
                "Allow POST /v1/adapters and DELETE /v1/adapters/{name} to load and unload adapters "
                "while serving (needs --lora-dir, which implies it)");
  cmd->add_option("--chat-template", a->chat_template,
                  fmt::format("Chat template: a built-in ({}) or a .jinja file; default: the "
                              "model's own tokenizer.chat_template",
                              serve::chat_template_names()));
  cmd->add_option("--embedding-pooling", a->embedding_pooling,
                  "How /v1/embeddings pools the final hidden states: mean or last (default: the "
                  "model's pooling_type metadata, else mean)")
      ->check(CLI::IsMember({"mean", "last"}));
  cmd->add_option("--io-threads", a->io_threads, "HTTP I/O threads")->capture_default_str();
  cmd->add_option("--work-threads", a->work_threads,
                  "Threads that render chat templates and tokenize off the I/O threads (a model "
                  "uses at most half of them)")
      ->capture_default_str();
  cmd->add_option("--template-timeout-ms", a->template_timeout_ms,
                  "Wall time one chat-template render may take")
      ->capture_default_str();
  cmd->add_option("--template-memory", a->template_memory,
                  "Memory the values of one chat-template render may hold (K/M/G suffix)")
      ->capture_default_str();
  cmd->add_option("--drain-seconds", a->drain_seconds, "On SIGTERM, time allowed to finish requests")
      ->capture_default_str();
  add_spec_options(cmd, &a->spec);
  cmd->callback([a, &run] {
    run = [a] {
      const int sources = !a->model.empty() + !a->models_dir.empty() + !a->config.empty();
      if (sources != 1) return fail("pass one of --model FILE, --models DIR or --config FILE");
      return run_serve(*a);
    };
  });
}

}  // namespace tessera::cli
