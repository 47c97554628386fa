#include "tessera/serve/model_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "tessera/engine/kv_manager.h"
#include "tessera/serve/adapter_registry.h"
#include "tessera/serve/byte_size.h"

namespace tessera::serve {
namespace model_service {

Result<std::shared_ptr<engine::Engine>> start_engine(const ServeSettings& a, const ServeContext& c,
                                                     std::shared_ptr<model::Model> model,
                                                     std::shared_ptr<const model::Tokenizer> tokenizer) {
  engine::EngineOptions eo = engine_options(a, c.kv_dtype, model->config().context_length);
  const auto weight_bytes = static_cast<int64_t>(model->file().tensor_bytes());
  // On a device the percentage is of the device's free memory (model::Model::device_free_bytes).
  const int64_t device_free = model->device_free_bytes();
  auto kv_memory = device_free >= 0 ? parse_kv_memory(a.kv_memory, 0, device_free)
                                    : parse_kv_memory(a.kv_memory, weight_bytes);
  if (!kv_memory.is_ok()) return kv_memory.status().with_context("--kv-memory");
  eo.kv_memory_bytes = *kv_memory;
  if (a.speculation) {
    TS_ASSIGN_OR_RETURN(eo.spec, a.speculation(model, tokenizer));
  }
  auto created = engine::Engine::create(model, tokenizer, eo);
  if (!created.is_ok()) return created.status().with_context("creating the engine");
  std::shared_ptr<engine::Engine> engine = std::move(created).value();
  engine->start();
  return engine;
}

Result<ModelEntry> model_entry(const ServeSettings& a, const ServeContext& c,
                               const std::shared_ptr<engine::Engine>& engine,
                               const model::Model& model,
                               std::shared_ptr<const model::Tokenizer> tokenizer) {
  ModelEntry entry;
  entry.name = a.name.empty() ? model_name_from_path(a.model) : a.name;
  entry.backend = engine_backend(engine);
  entry.chat = make_chat_renderer(model.file().metadata, std::move(tokenizer), c.chat,
                                  c.render_limits, c.print);
  entry.pooling = engine::pooling_from_metadata(model.file().metadata);
  if (!a.embedding_pooling.empty()) {
    auto pooling = engine::parse_pooling(a.embedding_pooling);
    if (!pooling.is_ok()) return pooling.status().with_context("--embedding-pooling");
    entry.pooling = *pooling;
  }
  entry.created = static_cast<int64_t>(std::time(nullptr));
  return entry;
}

// --lora NAME=PATH adapters, and runtime loading from --lora-dir.
Status serve_adapters(const ServeSettings& a, const ServeContext& c, const ModelEntry& base,
                      const std::shared_ptr<engine::Engine>& engine,
                      const std::shared_ptr<model::Model>& model) {
  // The adapters are checked against the file the base weights came from (the model keeps it).
  auto adapters = std::make_shared<AdapterRegistry>(
      c.router, base, engine, std::shared_ptr<const model::ModelFile>(model, &model->file()),
      a.lora_runtime, a.lora_dir);
  for (const std::string& lora : a.loras) {
    const size_t eq = lora.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == lora.size()) {
      return invalid_argument(fmt::format("--lora '{}': expected NAME=PATH", lora));
    }
    auto info = adapters->load(lora.substr(0, eq), lora.substr(eq + 1));
    if (!info.is_ok()) return info.status().with_context("--lora " + lora);
    c.print(fmt::format("tessera serve: adapter '{}' ({}, rank {}, {} matrices, {:.1f} MiB) served as '{}'",
                        info->name, info->format, info->rank, info->matrices,
                        static_cast<double>(info->bytes) / (1 << 20), info->model));
  }
  c.server->set_adapters(adapters);
  return Status::ok();
}

// "model 'NAME' ready: KV pool ..., speculation ...".
std::string ready_line(const ServeSettings& a, const std::string& name, const model::Model& model,
                       const engine::EngineOptions& o) {
  const auto pool = engine::size_kv_pool(model.config(), o);
  const int64_t pool_bytes = pool.is_ok() ? pool->bytes() : 0;
  const double budget_mib = static_cast<double>(o.kv_memory_bytes) / (1 << 20);
  const std::string budget =
      !a.kv_memory.empty() ? "--kv-memory " + a.kv_memory
                           : fmt::format("{:.0f}% of available memory less the weights",
                                         engine::kDefaultKvMemoryShare * 100);
  std::string kv_source = "--kv-blocks";
  if (a.kv_blocks <= 0 && pool.is_ok()) {
    kv_source = pool->n_blocks == pool->blocks_per_seq * o.max_running
                    ? fmt::format("what {} full-length sequences need, under a budget of {:.0f} "
                                  "MiB ({})", o.max_running, budget_mib, budget)
                    : fmt::format("a budget of {:.0f} MiB, {}", budget_mib, budget);
  }
  const int64_t positions = static_cast<int64_t>(o.n_blocks) * o.block_size;
  return fmt::format("tessera serve: model '{}' ready: KV pool {:.1f} MiB ({} blocks of {} positions, "
                     "{} positions; {}), up to {} sequences of up to {} positions ({} at full "
                     "length), {} tokens per step, {} threads, speculation {}",
                     name, static_cast<double>(pool_bytes) / (1 << 20), o.n_blocks, o.block_size,
                     positions, kv_source, std::min(o.max_running, o.max_batch_tokens), o.ctx_size,
                     positions / o.ctx_size, o.max_batch_tokens, o.n_threads,
                     engine::spec_method_name(o.spec.method));
}

}  // namespace model_service

Result<std::shared_ptr<engine::Engine>> serve_model(const ServeSettings& a, const ServeContext& c,
                                                    std::shared_ptr<model::Model> model,
                                                    std::shared_ptr<const model::Tokenizer> tokenizer) {
  TS_ASSIGN_OR_RETURN(std::shared_ptr<engine::Engine> engine,
                      model_service::start_engine(a, c, model, tokenizer));
  TS_ASSIGN_OR_RETURN(ModelEntry entry, model_service::model_entry(a, c, engine, *model, tokenizer));
  const ModelEntry base_entry = entry;
  TS_RETURN_IF_ERROR(c.router->add(std::move(entry)));
  if (!a.loras.empty() || a.lora_runtime) {
    TS_RETURN_IF_ERROR(model_service::serve_adapters(a, c, base_entry, engine, model));
  }
  c.server->set_serving();
  c.print(model_service::ready_line(a, base_entry.name, *model, engine->options()));
  return engine;
}

}  // namespace tessera::serve
