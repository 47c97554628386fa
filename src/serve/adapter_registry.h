// AdapterRegistry: the LoRA adapters served on one base model. Each loaded adapter is a router
// entry named "<base>:<adapter>" (listed in /v1/models; a request picks it by its "model" field)
// whose backend is the base engine with the request's adapter id set, so requests of every
// adapter and of the base share the engine's batches, KV cache (prefix blocks keyed by adapter)
// and the one copy of the base weights. Adapters come from `tessera serve --lora name=PATH` at
// start-up and, with runtime loading allowed, from POST /v1/adapters and DELETE
// /v1/adapters/{name} (adapters_route.h).
// Thread-safety: every method is safe from any thread (one mutex; loading reads the files
// outside it).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/engine/engine.h"
#include "tessera/model/format/model_file.h"
#include "tessera/serve/model_backend.h"
#include "tessera/serve/model_router.h"

namespace tessera::serve {

struct AdapterInfo {
  std::string name;   // the adapter's own name ("sql")
  std::string model;  // its served name ("base:sql")
  std::string path;
  std::string format;  // "peft" or "gguf"
  int32_t id = -1;     // engine adapter id
  int64_t rank = 0;    // largest rank of its matrices
  double alpha = 0.0;
  int64_t matrices = 0;
  int64_t bytes = 0;
  int64_t created = 0;  // Unix seconds
};

class AdapterRegistry {
 public:
  // `base` is the base model's router entry (its name, backend and chat renderer are reused);
  // `engine` runs it and `file` is the file its weights came from (adapters are checked against
  // it). `runtime_loading`: whether POST/DELETE /v1/adapters may change the set; they load only
  // from `lora_dir` (confined_path.h), and not at all while it is empty.
  AdapterRegistry(std::shared_ptr<ModelRouter> router, ModelEntry base,
                  std::shared_ptr<engine::Engine> engine, std::shared_ptr<const model::ModelFile> file,
                  bool runtime_loading, std::string lora_dir = {});

  // Loads the adapter at `path` as `name` and serves it. Errors: kInvalidArgument (a name that is
  // empty, has characters outside [A-Za-z0-9._-], or is taken), the loader's and the engine's.
  Result<AdapterInfo> load(const std::string& name, const std::string& path);
  // Stops serving `name` (new requests get 404) and frees it once no unfinished request uses
  // it. Errors: kNotFound; kUnavailable while requests still use it (the entry is restored).
  Status unload(const std::string& name);
  std::vector<AdapterInfo> list() const;

  bool runtime_loading() const { return runtime_loading_; }
  const std::string& lora_dir() const { return lora_dir_; }
  const std::string& base_name() const { return base_.name; }

 private:
  std::shared_ptr<ModelRouter> router_;
  ModelEntry base_;
  std::shared_ptr<engine::Engine> engine_;
  std::shared_ptr<const model::ModelFile> file_;
  bool runtime_loading_;
  std::string lora_dir_;
  mutable std::mutex mu_;
  std::map<std::string, AdapterInfo> adapters_;
  std::vector<std::string> loading_;  // names being loaded (taken)
  int32_t next_id_ = 0;
};

// A backend that forwards to `base` with every request's adapter_id set to `adapter_id`.
std::shared_ptr<ModelBackend> adapter_backend(std::shared_ptr<ModelBackend> base, int32_t adapter_id);

}  // namespace tessera::serve
