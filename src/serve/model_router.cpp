#include "tessera/serve/model_router.h"

#include <fmt/format.h>

#include <filesystem>
#include <mutex>

namespace tessera::serve {

Status ModelRouter::add(ModelEntry entry) {
  if (entry.name.empty()) return invalid_argument("a served model needs a non-empty name");
  if (!entry.backend) return invalid_argument(fmt::format("model '{}' has no backend", entry.name));
  std::unique_lock lock(mu_);
  models_[entry.name] = std::move(entry);
  return Status::ok();
}

bool ModelRouter::remove(const std::string& name) {
  std::unique_lock lock(mu_);
  return models_.erase(name) > 0;
}

Result<ModelEntry> ModelRouter::find(const std::string& name) const {
  std::shared_lock lock(mu_);
  if (name.empty() && models_.size() == 1) return models_.begin()->second;
  auto it = models_.find(name);
  if (it == models_.end()) {
    if (name.empty()) return not_found("'model' is required (GET /v1/models lists the served models)");
    return not_found(fmt::format("the model '{}' does not exist (GET /v1/models lists the served models)", name));
  }
  return it->second;
}

std::vector<ModelEntry> ModelRouter::list() const {
  std::shared_lock lock(mu_);
  std::vector<ModelEntry> out;
  for (const auto& [name, e] : models_) out.push_back(e);
  return out;
}

std::string model_name_from_path(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

}  // namespace tessera::serve
