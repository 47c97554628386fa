#include "tessera/engine/model_ops.h"

#include <fmt/format.h>

#include <utility>

namespace tessera::engine {

void ModelOps::start() {
  std::lock_guard lk(mu_);
  if (state_ == State::kDirect) state_ = State::kQueued;
}

void ModelOps::close() {
  std::vector<std::unique_ptr<AdapterOp>> adapters;
  std::vector<EmbedOp> embeds;
  {
    std::lock_guard lk(mu_);
    state_ = State::kClosed;
    adapters.swap(adapter_ops_);
    embeds.swap(embed_ops_);
  }
  for (auto& op : adapters) op->done.set_value(model_.set_adapter(op->id, std::move(op->adapter)));
  for (EmbedOp& e : embeds) e.done(Status(ErrorCode::kUnavailable, "the engine is stopping"));
}

bool ModelOps::pending() const {
  std::lock_guard lk(mu_);
  return !adapter_ops_.empty() || !embed_ops_.empty();
}

void ModelOps::take(std::vector<std::unique_ptr<AdapterOp>>& adapters,
                    std::vector<EmbedOp>& embeds) {
  std::lock_guard lk(mu_);
  adapters.swap(adapter_ops_);
  embeds.swap(embed_ops_);
}

void ModelOps::run() {
  std::vector<std::unique_ptr<AdapterOp>> adapters;
  std::vector<EmbedOp> embeds;
  take(adapters, embeds);
  for (auto& op : adapters) op->done.set_value(model_.set_adapter(op->id, std::move(op->adapter)));
  for (EmbedOp& e : embeds) e.done(compute(e.tokens, e.pooling));
}

Status ModelOps::set_adapter(int32_t id, std::shared_ptr<const model::LoraAdapter> adapter) {
  std::future<Status> done;
  {
    std::lock_guard lk(mu_);
    if (state_ == State::kClosed) return Status(ErrorCode::kUnavailable, "the engine is stopped");
    if (adapter == nullptr) {
      const auto users = adapter_users_.find(id);
      if (users != adapter_users_.end()) {
        return Status(ErrorCode::kUnavailable,
                      fmt::format("adapter id {} is in use by {} unfinished request(s)", id,
                                  users->second));
      }
      adapters_.erase(id);  // from now on new requests naming it are refused
    }
    if (state_ == State::kDirect) {
      Status st = model_.set_adapter(id, adapter);
      if (st.is_ok() && adapter != nullptr) adapters_.insert(id);
      return st;
    }
    auto op = std::make_unique<AdapterOp>();
    op->id = id;
    op->adapter = adapter;
    done = op->done.get_future();
    adapter_ops_.push_back(std::move(op));
  }
  if (opt_.wake) opt_.wake();
  Status st = done.get();
  if (st.is_ok() && adapter != nullptr) {
    std::lock_guard lk(mu_);
    adapters_.insert(id);
  }
  return st;
}

Status ModelOps::acquire_adapter(int32_t id) {
  if (id < 0) return Status::ok();
  std::lock_guard lk(mu_);
  if (adapters_.count(id) == 0) {
    return invalid_argument(fmt::format("adapter id {} is not loaded", id));
  }
  ++adapter_users_[id];
  return Status::ok();
}

void ModelOps::release_adapter(int32_t id) {
  if (id < 0) return;
  std::lock_guard lk(mu_);
  if (--adapter_users_[id] == 0) adapter_users_.erase(id);
}

void ModelOps::embed(std::vector<int32_t> tokens, Pooling pooling, EmbedCallback done) {
  const int64_t n_vocab = model_.config().n_vocab;
  if (tokens.empty()) return done(invalid_argument("nothing to embed: the input has no tokens"));
  for (int32_t t : tokens) {
    if (t < 0 || t >= n_vocab) {
      return done(invalid_argument(
          fmt::format("token id {} is outside the vocabulary [0, {})", t, n_vocab)));
    }
  }
  if (static_cast<int64_t>(tokens.size()) > opt_.max_tokens) {
    return done(invalid_argument(fmt::format("the input has {} tokens; at most {} (the context)",
                                             tokens.size(), opt_.max_tokens)));
  }
  State state;
  {
    std::lock_guard lk(mu_);
    state = state_;
    if (state == State::kQueued) {
      embed_ops_.push_back({std::move(tokens), pooling, std::move(done)});
    }
  }
  switch (state) {
    case State::kQueued:
      if (opt_.wake) opt_.wake();
      return;
    case State::kClosed:
      return done(Status(ErrorCode::kUnavailable, "the engine is shutting down"));
    case State::kDirect:
      return done(compute(tokens, pooling));
  }
}

Result<std::vector<float>> ModelOps::compute(const std::vector<int32_t>& tokens, Pooling pooling) {
  return compute_embedding(model_, tokens, pooling, opt_.max_rows, opt_.pool);
}

}  // namespace tessera::engine
