// What `tessera serve` is asked to serve, as plain values: one model (model) or a fleet (a
// folder of models or a fleet config), the HTTP edge, the engine and KV settings, keys, adapters
// and chat-template limits. Sizes are strings as the operator wrote them (byte_size.h).
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/engine/engine_options.h"
#include "tessera/model/model.h"
#include "tessera/model/tokenizer/tokenizer.h"
#include "tessera/serve/model_chat_template.h"
#include "tessera/serve/work_pool.h"

namespace tessera::serve {

// The speculation settings for a target model (null in a fleet, which speculates by n-grams
// only): the caller's --spec flags, with the draft model loaded.
using SpeculationFactory = std::function<Result<engine::SpecOptions>(
    std::shared_ptr<model::Model> target, std::shared_ptr<const model::Tokenizer> tokenizer)>;

struct ServeSettings {
  std::string model;                  // one model file
  std::string models_dir;             // a fleet: every *.gguf in it
  std::string config;                 // a fleet: a fleet config file (fleet_config.h)
  std::string mem_budget;             // fleet: active memory; empty: unlimited
  std::string host_budget;            // fleet: suspended models' weights; empty: unlimited
  std::string device_mem_budget;      // fleet: per device, its models' weights + KV; empty: unlimited
  std::string keep_prefix = "64M";    // fleet: prefix-cache blocks a suspended model keeps
  std::string idle_policy = "fixed";  // fixed | adaptive | always-on
  double keep_alive_s = 300.0;
  double resume_deadline_s = 30.0;
  std::string name;                   // the served name; empty: the file's stem
  std::string host = "127.0.0.1";
  int port = 8080;
  int threads = 0;
  int parallel = engine::EngineOptions{}.max_running;
  int64_t ctx_size = 4096;
  int32_t kv_blocks = 0;
  std::string kv_memory;              // BYTES or PERCENT; empty: the engine's default
  int32_t block_size = 16;
  int32_t batch_tokens = 512;
  int32_t max_queue = engine::EngineOptions{}.max_waiting;
  bool no_prefix_cache = false;
  std::string kv_type = "f16";        // f16 | f32
  std::string device = "cpu";         // cpu | opencl[:N]; a fleet config's entries may override
  std::string api_key;                // empty: $TESSERA_API_KEY
  std::string admin_api_key;          // empty: $TESSERA_ADMIN_API_KEY
  std::string embedding_pooling;      // mean | last; empty: the model's metadata
  std::vector<std::string> loras;     // NAME=PATH (fleet: BASE:NAME=PATH)
  bool lora_runtime = false;          // clients may load adapters (needs lora_dir)
  std::string lora_dir;               // runtime adapters load only from here (implies lora_runtime)
  int io_threads = 2;
  int work_threads = WorkPoolOptions{}.n_threads;
  int64_t template_timeout_ms = ChatRenderLimits{}.max_time_ms;
  std::string template_memory = "128M";
  int32_t spec_tokens = 5;            // the engine's speculation bounds
  int32_t spec_max_rows = 4;
  bool draft_model = false;           // a draft model (or self-speculation) was asked for
  SpeculationFactory speculation;     // may be empty: no speculation
};

}  // namespace tessera::serve
