// engine_backend(): ModelBackend over a local engine::Engine.
#include "tessera/base/check.h"
#include "tessera/serve/model_backend.h"

namespace tessera::serve {

namespace {

class EngineBackend final : public ModelBackend {
 public:
  explicit EngineBackend(std::shared_ptr<engine::Engine> engine) : engine_(std::move(engine)) {}

  Result<engine::RequestId> submit(engine::Request request, engine::EventSink sink) override {
    return engine_->submit(std::move(request), std::move(sink));
  }
  void cancel(engine::RequestId id) override { engine_->cancel(id); }
  engine::EngineStats stats() const override { return engine_->stats(); }
  const model::Tokenizer& tokenizer() const override { return engine_->tokenizer(); }
  int64_t context_length() const override {
    const int64_t ctx = engine_->options().ctx_size;
    return ctx > 0 ? ctx : engine_->config().context_length;
  }
  int64_t embedding_width() const override { return engine_->config().dim; }
  void embed(std::vector<int32_t> tokens, engine::Pooling pooling,
             engine::Engine::EmbedCallback done) override {
    engine_->embed(std::move(tokens), pooling, std::move(done));
  }

 private:
  std::shared_ptr<engine::Engine> engine_;
};

}  // namespace

std::shared_ptr<ModelBackend> engine_backend(std::shared_ptr<engine::Engine> engine) {
  TS_CHECK_MSG(engine != nullptr, "engine_backend: null engine");
  return std::make_shared<EngineBackend>(std::move(engine));
}

}  // namespace tessera::serve
