// `tessera serve`: an OpenAI-compatible HTTP server over one model with continuous batching.
// The port is bound first (/health answers 503 while the model loads), then the model is loaded,
// the engine started and the server switched to serving. SIGINT/SIGTERM drain in-flight requests
// for up to --drain-seconds, then exit 0.
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "spec_args.h"
#include "common.h"
#include "tessera/serve/chat_template.h"
#include "tessera/serve/fleet_service.h"
#include "tessera/serve/model_service.h"
#include "tessera/serve/server_setup.h"

namespace tessera::cli {
namespace {

struct ServeArgs {
  serve::ServeSettings settings;
  std::string tokenizer;
  std::string chat_template;            // --chat-template NAME|FILE
  double drain_seconds = 30.0;
  SpecArgs spec;
  int device_index = -1;  // settings.device, parsed
};

// A line for the operator on stdout, flushed (scripts wait for these).
void print_line(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// Signals are taken by sigwait(): block them before any thread starts so every thread inherits
// the mask.
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// Waits for SIGINT/SIGTERM, then drains the server for up to --drain-seconds.
void wait_and_drain(sigset_t& signals, double drain_seconds, serve::Server& server) {
  int sig = 0;
  sigwait(&signals, &sig);
  std::printf("tessera serve: %s, draining (up to %.0f s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
              drain_seconds);
  std::fflush(stdout);
  server.shutdown(std::chrono::milliseconds(static_cast<int64_t>(drain_seconds * 1000)));
}

// --models DIR / --config FILE: one FleetManager, models suspended and resumed on demand.
int run_fleet(const ServeArgs& a, const serve::ServeContext& context, sigset_t& signals) {
  auto fleet = serve::serve_fleet(a.settings, context);
  if (!fleet.is_ok()) return fail(fleet.status());
  wait_and_drain(signals, a.drain_seconds, *context.server);
  (*fleet)->stop();
  std::printf("tessera serve: stopped\n");
  return 0;
}

int run_model(const ServeArgs& a, const serve::ServeContext& context, sigset_t& signals) {
  auto loaded = load_model_and_tokenizer(a.settings.model, a.tokenizer, a.device_index);
  if (!loaded.is_ok()) return fail(loaded.status());
  auto engine = serve::serve_model(a.settings, context, std::move(loaded->model),
                                   std::move(loaded->tokenizer));
  if (!engine.is_ok()) return fail(engine.status());
  wait_and_drain(signals, a.drain_seconds, *context.server);
  (*engine)->drain(std::chrono::milliseconds(1000));
  std::printf("tessera serve: stopped\n");
  return 0;
}

int run_serve(const ServeArgs& args) {
  ServeArgs a = args;
  serve::ServeSettings& s = a.settings;
  s.spec_tokens = a.spec.tokens;
  s.spec_max_rows = a.spec.max_rows;
  s.draft_model = !a.spec.draft_model.empty() || !a.spec.skip_layers.empty();
  s.speculation = [&a](std::shared_ptr<model::Model> target,
                       std::shared_ptr<const model::Tokenizer> tokenizer) {
    return spec_options(a.spec, a.tokenizer, std::move(target), std::move(tokenizer));
  };
  auto device = parse_device(s.device);
  if (!device.is_ok()) return fail(device.status());
  a.device_index = *device;
  if (a.device_index >= 0) {
    if (s.draft_model || !a.spec.method.empty()) {
      return fail("speculative decoding does not run on the OpenCL device yet: use --device cpu");
    }
  }
  auto chat = serve::chat_template_override(a.chat_template);
  if (!chat.is_ok()) return fail(chat.status());
  sigset_t signals = block_stop_signals();
  auto kv_dtype = serve::parse_kv_type(s.kv_type);
  if (!kv_dtype.is_ok()) return fail(kv_dtype.status());
  auto setup = serve::make_server_setup(s);
  if (!setup.is_ok()) return fail(setup.status());
  auto router = std::make_shared<serve::ModelRouter>();
  serve::Server server(setup->options, router);
  serve::ServeContext context{&server, router, *kv_dtype, std::move(chat).value(),
                              setup->render_limits, print_line};
  context.render_limits.cancel = server.render_cancel();
  if (Status st = server.start(); !st.is_ok()) return fail(st.with_context("starting the HTTP server"));
  std::printf("tessera serve: listening on http://%s:%d\n", s.host.c_str(), server.port());
  std::fflush(stdout);
  if (Status st = serve::resolve_lora_dir(s); !st.is_ok()) return fail(st);
  if (s.models_dir.empty() && s.config.empty()) return run_model(a, context, signals);
  if (s.lora_runtime) {
    return fail("--lora-dir works with --model (one base model) for now; in a fleet, list "
                "adapters with --lora BASE:NAME=PATH or in the --config file");
  }
  return run_fleet(a, context, signals);
}

// What to serve: one model, a folder or a fleet config, and the fleet's budgets and policy.
void add_source_flags(CLI::App* cmd, ServeArgs* a) {
  serve::ServeSettings& s = a->settings;
  auto* model_opt = cmd->add_option("-m,--model", s.model, "Model file (GGUF or llama2.c checkpoint)");
  auto* models_opt = cmd->add_option(
      "--models", s.models_dir,
      "Serve every *.gguf in DIR (name = file stem), suspending idle models and resuming on demand");
  auto* config_opt = cmd->add_option(
      "--config", s.config,
      "Serve the models a fleet config file lists, each with its own settings (JSON; see "
      "docs/SERVING.md)");
  model_opt->excludes(models_opt);
  models_opt->excludes(model_opt);
  config_opt->excludes(model_opt);
  config_opt->excludes(models_opt);
  cmd->add_option("--mem-budget", s.mem_budget,
                  "With --models: active memory (weights + KV) for resumed models, e.g. 8G "
                  "(default: unlimited)");
  cmd->add_option("--device-mem-budget", s.device_mem_budget,
                  "With --models/--config and models on an OpenCL device: that device's memory "
                  "for its resumed models (weights + KV), e.g. 70G; idle models on the device "
                  "are suspended to make room (default: unlimited)");
  cmd->add_option("--host-budget", s.host_budget,
                  "With --models/--config: memory for suspended models' weights (page cache), "
                  "e.g. 4G; above it the least likely to be needed soon go to disk (default: "
                  "unlimited)");
  cmd->add_option("--idle-policy", s.idle_policy,
                  "With --models/--config: fixed (keep-alive), adaptive (hybrid histogram) or always-on; "
                  "a config entry's idle_policy/keep_alive_s override it for that model")
      ->capture_default_str();
  cmd->add_option("--keep-alive", s.keep_alive_s,
                  "With --models: idle seconds before a model is suspended (adaptive: fallback)")
      ->capture_default_str();
  cmd->add_option("--keep-prefix-cache", s.keep_prefix,
                  "With --models/--config: bytes of prefix-cache blocks each suspended model keeps "
                  "(host tier) so its warm prompts stay warm after a resume; 0: none")
      ->capture_default_str();
  cmd->add_option("--resume-deadline", s.resume_deadline_s,
                  "With --models: seconds a request waits for its model to resume before a 503")
      ->capture_default_str();
}

// The model, the HTTP address and the engine: threads, batching, the KV pool.
void add_engine_flags(CLI::App* cmd, ServeArgs* a) {
  serve::ServeSettings& s = a->settings;
  cmd->add_option("--tokenizer", a->tokenizer, "Tokenizer file (default: the model's own)");
  cmd->add_option("--name", s.name, "Served model name (default: the file name without extension)");
  cmd->add_option("--host", s.host, "Address to bind")->capture_default_str();
  cmd->add_option("--port", s.port, "Port to bind (0: any free port)")->capture_default_str();
  cmd->add_option("-t,--threads", s.threads, "Compute threads (0: all cores)")->capture_default_str();
  cmd->add_option("--parallel", s.parallel,
                  "Sequences running at once, at most (admission is by KV blocks and the token "
                  "budget; this only caps it)")
      ->capture_default_str();
  cmd->add_option("-c,--ctx-size", s.ctx_size,
                  "Positions of one sequence at most (capped at the model's; reserves nothing)")
      ->capture_default_str();
  cmd->add_option("--kv-blocks", s.kv_blocks, "KV blocks in the pool (0: sized by --kv-memory)")
      ->capture_default_str();
  cmd->add_option("--kv-memory", s.kv_memory,
                  "KV pool budget: bytes (8G, 512M) or a percentage of the memory available at "
                  "start less the weights (30%); the pool takes up to this, no more than "
                  "--parallel full-length sequences need (default: 50%; with --models/--config: "
                  "an equal share of --mem-budget, or of 50% of available memory, after the weights)");
  cmd->add_option("--block-size", s.block_size, "Positions per KV block")->capture_default_str();
  cmd->add_option("--batch-tokens", s.batch_tokens, "Rows per forward step (prefill chunk budget)")
      ->capture_default_str();
  cmd->add_option("--max-queue", s.max_queue, "Waiting requests beyond which new ones get 429")
      ->capture_default_str();
  cmd->add_flag("--no-prefix-cache", s.no_prefix_cache, "Do not reuse cached prompt prefixes");
  cmd->add_option("--kv-type", s.kv_type, "KV cache type: f16 or f32")->capture_default_str();
}

// Keys, adapters, chat templates and the HTTP edge's threads and limits.
void add_edge_flags(CLI::App* cmd, ServeArgs* a) {
  serve::ServeSettings& s = a->settings;
  cmd->add_option("--api-key", s.api_key, "Require 'Authorization: Bearer KEY' (or TESSERA_API_KEY)");
  cmd->add_option("--admin-api-key", s.admin_api_key,
                  "The key of the operator routes (/admin/..., loading adapters), which refuse "
                  "the --api-key (or TESSERA_ADMIN_API_KEY); with --api-key alone they are off");
  cmd->add_option("--lora", s.loras,
                  "LoRA adapter served on the base model as MODEL:NAME, given as NAME=PATH (PEFT "
                  "directory or GGUF LoRA; in a fleet BASE:NAME=PATH, where it lives in the fleet's "
                  "memory tiers like a model); repeatable. Requests of every adapter share the batches");
  cmd->add_option("--lora-dir", s.lora_dir,
                  "Let POST /v1/adapters load adapters from this directory (only; paths are "
                  "resolved and kept inside it)");
  cmd->add_flag("--lora-runtime", s.lora_runtime,
                "Allow POST /v1/adapters and DELETE /v1/adapters/{name} to load and unload adapters "
                "while serving (needs --lora-dir, which implies it)");
  cmd->add_option("--chat-template", a->chat_template,
                  fmt::format("Chat template: a built-in ({}) or a .jinja file; default: the "
                              "model's own tokenizer.chat_template",
                              serve::chat_template_names()));
  cmd->add_option("--embedding-pooling", s.embedding_pooling,
                  "How /v1/embeddings pools the final hidden states: mean or last (default: the "
                  "model's pooling_type metadata, else mean)")
      ->check(CLI::IsMember({"mean", "last"}));
  cmd->add_option("--io-threads", s.io_threads, "HTTP I/O threads")->capture_default_str();
  cmd->add_option("--work-threads", s.work_threads,
                  "Threads that render chat templates and tokenize off the I/O threads (a model "
                  "uses at most half of them)")
      ->capture_default_str();
  cmd->add_option("--template-timeout-ms", s.template_timeout_ms,
                  "Wall time one chat-template render may take")
      ->capture_default_str();
  cmd->add_option("--template-memory", s.template_memory,
                  "Memory the values of one chat-template render may hold (K/M/G suffix)")
      ->capture_default_str();
  cmd->add_option("--drain-seconds", a->drain_seconds, "On SIGTERM, time allowed to finish requests")
      ->capture_default_str();
}

}  // namespace

void add_serve_command(CLI::App& app, RunFn& run) {
  auto* cmd = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
  auto a = std::make_shared<ServeArgs>();
  add_source_flags(cmd, a.get());
  add_engine_flags(cmd, a.get());
  add_edge_flags(cmd, a.get());
  add_spec_options(cmd, &a->spec);
  add_device_option(cmd, &a->settings.device);
  cmd->callback([a, &run] {
    run = [a] {
      const serve::ServeSettings& set = a->settings;
      const int sources = !set.model.empty() + !set.models_dir.empty() + !set.config.empty();
      if (sources != 1) return fail("pass one of --model FILE, --models DIR or --config FILE");
      return run_serve(*a);
    };
  });
}

}  // namespace tessera::cli
