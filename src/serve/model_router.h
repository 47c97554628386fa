// ModelRouter: the served models by name - what a request's "model" field resolves to. One model
// today; a fleet later adds and removes entries (or replaces this with its own resolver) while the
// server runs.
// Thread-safety: every method is safe from any thread (a reader-writer lock).
#pragma once

#include <map>
#include <shared_mutex>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/serve/model_backend.h"

namespace tessera::serve {

class ModelRouter {
 public:
  // Adds or replaces the entry named entry.name. Errors: kInvalidArgument for an empty name or a
  // null backend.
  Status add(ModelEntry entry);
  // Removes `name`; true if it was there.
  bool remove(const std::string& name);

  // The entry for `name`. An empty name resolves when exactly one model is served (a convenience;
  // OpenAI requires the field). Errors: kNotFound naming the model and how to list them.
  Result<ModelEntry> find(const std::string& name) const;
  // All entries, by name.
  std::vector<ModelEntry> list() const;

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, ModelEntry> models_;
};

// The default served name of a model file: its stem ("/m/llama-7b.Q4_0.gguf" -> "llama-7b.Q4_0").
std::string model_name_from_path(const std::string& path);

}  // namespace tessera::serve
