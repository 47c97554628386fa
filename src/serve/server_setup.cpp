#include "tessera/serve/server_setup.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "tessera/serve/byte_size.h"

namespace tessera::serve {
namespace server_setup {

// The flag's value, else the environment's.
std::string key_or_env(const std::string& flag, const char* env) {
  if (!flag.empty()) return flag;
  const char* k = std::getenv(env);
  return k != nullptr ? k : "";
}

}  // namespace server_setup

Result<ServerSetup> make_server_setup(const ServeSettings& a) {
  ServerSetup s;
  s.options.http.host = a.host;
  s.options.http.port = a.port;
  s.options.http.n_threads = a.io_threads;
  if (a.work_threads < 1) return invalid_argument("--work-threads must be >= 1");
  s.options.work.n_threads = a.work_threads;
  // A model's slow work takes at most half the pool: another model always finds a thread.
  s.options.work.max_running_per_key = std::max(1, a.work_threads / 2);
  auto template_memory = parse_byte_size(a.template_memory);
  if (!template_memory.is_ok()) return template_memory.status().with_context("--template-memory");
  if (*template_memory < (int64_t{1} << 20)) return invalid_argument("--template-memory must be at least 1M");
  s.render_limits.max_memory_bytes = static_cast<size_t>(*template_memory);
  if (a.template_timeout_ms < 1) return invalid_argument("--template-timeout-ms must be >= 1");
  s.render_limits.max_time_ms = a.template_timeout_ms;
  s.options.api_key = server_setup::key_or_env(a.api_key, "TESSERA_API_KEY");
  s.options.admin_api_key = server_setup::key_or_env(a.admin_api_key, "TESSERA_ADMIN_API_KEY");
  if (!s.options.admin_api_key.empty() && s.options.admin_api_key == s.options.api_key) {
    return invalid_argument("--admin-api-key must differ from --api-key");
  }
  return s;
}

Result<kernels::DType> parse_kv_type(const std::string& name) {
  if (name == "f32") return kernels::DType::kF32;
  if (name != "f16") return invalid_argument("--kv-type must be f16 or f32");
  return kernels::DType::kF16;
}

Status resolve_lora_dir(ServeSettings& a) {
  if (!a.lora_dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(a.lora_dir, ec)) {
      return invalid_argument(fmt::format("--lora-dir '{}' is not a directory", a.lora_dir));
    }
    a.lora_runtime = true;
  } else if (a.lora_runtime) {
    return invalid_argument("--lora-runtime needs --lora-dir DIR: clients may load adapters only "
                            "from a directory the operator names");
  }
  return Status::ok();
}

engine::EngineOptions engine_options(const ServeSettings& a, kernels::DType kv_dtype,
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
  eo.spec.max_draft = a.spec_tokens;
  eo.spec.max_rows = a.spec_max_rows;
  return eo;
}

}  // namespace tessera::serve
