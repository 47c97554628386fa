#include "tessera/serve/adapter_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "tessera/model/lora_adapter.h"

namespace tessera::serve {
namespace {

class AdapterBackend final : public ModelBackend {
 public:
  AdapterBackend(std::shared_ptr<ModelBackend> base, int32_t id) : base_(std::move(base)), id_(id) {}
  Result<engine::RequestId> submit(engine::Request request, engine::EventSink sink) override {
    request.adapter_id = id_;
    return base_->submit(std::move(request), std::move(sink));
  }
  void cancel(engine::RequestId id) override { base_->cancel(id); }
  engine::EngineStats stats() const override { return base_->stats(); }
  const model::Tokenizer& tokenizer() const override { return base_->tokenizer(); }
  int64_t context_length() const override { return base_->context_length(); }
  Status ready() const override { return base_->ready(); }

 private:
  std::shared_ptr<ModelBackend> base_;
  int32_t id_;
};

bool valid_name(const std::string& n) {
  return !n.empty() && n.size() <= 128 && std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
  });
}

}  // namespace

std::shared_ptr<ModelBackend> adapter_backend(std::shared_ptr<ModelBackend> base, int32_t adapter_id) {
  return std::make_shared<AdapterBackend>(std::move(base), adapter_id);
}

AdapterRegistry::AdapterRegistry(std::shared_ptr<ModelRouter> router, ModelEntry base,
                                 std::shared_ptr<engine::Engine> engine,
                                 std::shared_ptr<const model::ModelFile> file, bool runtime_loading,
                                 std::string lora_dir)
    : router_(std::move(router)),
      base_(std::move(base)),
      engine_(std::move(engine)),
      file_(std::move(file)),
      runtime_loading_(runtime_loading),
      lora_dir_(std::move(lora_dir)) {}

Result<AdapterInfo> AdapterRegistry::load(const std::string& name, const std::string& path) {
  if (!valid_name(name)) {
    return invalid_argument(fmt::format("adapter name '{}' must be 1-128 characters of A-Z a-z 0-9 . _ -", name));
  }
  int32_t id = 0;
  {
    std::lock_guard lk(mu_);
    if (adapters_.count(name) != 0 ||
        std::find(loading_.begin(), loading_.end(), name) != loading_.end()) {
      return invalid_argument(fmt::format("an adapter named '{}' is already loaded", name));
    }
    loading_.push_back(name);
    id = next_id_++;
  }
  auto done_loading = [&] {
    std::lock_guard lk(mu_);
    loading_.erase(std::find(loading_.begin(), loading_.end(), name));
  };
  auto adapter = model::load_lora_adapter(path, *file_);
  if (!adapter.is_ok()) {
    done_loading();
    return adapter.status();
  }
  auto shared = std::make_shared<const model::LoraAdapter>(std::move(*adapter));
  if (Status s = engine_->set_adapter(id, shared); !s.is_ok()) {
    done_loading();
    return s;
  }
  AdapterInfo info;
  info.name = name;
  info.model = base_.name + ":" + name;
  info.path = path;
  info.format = shared->format == model::LoraFormat::kPeft ? "peft" : "gguf";
  info.id = id;
  info.rank = shared->max_rank();
  info.alpha = shared->alpha;
  info.matrices = static_cast<int64_t>(shared->matrices.size());
  info.bytes = static_cast<int64_t>(shared->bytes());
  info.created = static_cast<int64_t>(std::time(nullptr));
  ModelEntry entry = base_;
  entry.name = info.model;
  entry.backend = adapter_backend(base_.backend, id);
  entry.created = info.created;
  entry.base = base_.name;
  entry.adapter = name;
  if (Status s = router_->add(std::move(entry)); !s.is_ok()) {
    (void)engine_->set_adapter(id, nullptr);
    done_loading();
    return s;
  }
  std::lock_guard lk(mu_);
  loading_.erase(std::find(loading_.begin(), loading_.end(), name));
  adapters_[name] = info;
  return info;
}

Status AdapterRegistry::unload(const std::string& name) {
  AdapterInfo info;
  {
    std::lock_guard lk(mu_);
    const auto it = adapters_.find(name);
    if (it == adapters_.end()) return not_found(fmt::format("no adapter named '{}' is loaded", name));
    info = it->second;
  }
  auto entry = router_->find(info.model);
  router_->remove(info.model);  // new requests now get 404
  if (Status s = engine_->set_adapter(info.id, nullptr); !s.is_ok()) {
    if (entry.is_ok()) (void)router_->add(std::move(*entry));  // still serving it
    return s;
  }
  std::lock_guard lk(mu_);
  adapters_.erase(name);
  return Status::ok();
}

std::vector<AdapterInfo> AdapterRegistry::list() const {
  std::lock_guard lk(mu_);
  std::vector<AdapterInfo> out;
  for (const auto& [_, info] : adapters_) out.push_back(info);
  return out;
}

}  // namespace tessera::serve
