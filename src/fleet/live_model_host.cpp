#include "tessera/fleet/live_model_host.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "tessera/base/check.h"
#include "tessera/base/log.h"
#include "tessera/engine/kv_manager.h"
#include "tessera/fleet/file_backed_region.h"
#include "tessera/fleet/fleet_controller.h"
#include "tessera/fleet/fleet_manager.h"
#include "tessera/fleet/image_file_region.h"
#include "tessera/model/architecture.h"

namespace tessera::fleet {

using engine::Event;
using engine::EventSink;
using engine::FinishEvent;
using engine::FinishReason;
using engine::RequestId;

namespace {

// The KV pool the engine will allocate for `o`: the engine's own sizing rule (0 when the
// options are invalid; Engine::create then refuses them with the reason).
int64_t kv_pool_bytes(const model::ModelConfig& c, const engine::EngineOptions& o) {
  const Result<engine::KvPoolSize> size = engine::size_kv_pool(c, o);
  return size.is_ok() ? size.value().bytes() : 0;
}

FinishEvent finish_with(const Status& why) {
  FinishEvent f;
  f.reason = why.code() == ErrorCode::kCancelled ? FinishReason::kCancelled : FinishReason::kError;
  if (f.reason == FinishReason::kError) f.error = why;
  return f;
}

}  // namespace

LiveModelHost::LiveModelHost(LiveHostOptions options) : options_(std::move(options)) {
  if (options_.clock == nullptr) options_.clock = real_clock();
  if (options_.io_threads < 1) options_.io_threads = 1;
}

LiveModelHost::~LiveModelHost() = default;

void LiveModelHost::add(const FleetModelSpec& spec) {
  auto s = std::make_unique<Model>();
  s->name = spec.name;
  s->path = spec.path;
  s->tokenizer_path = spec.tokenizer;
  s->device = spec.device;
  s->engine_options = spec.engine;
  if (!spec.parent.empty()) {
    for (size_t i = 0; i < models_.size(); ++i) {
      if (models_[i]->name == spec.parent && models_[i]->parent < 0) {
        s->parent = static_cast<ModelIndex>(i);
      }
    }
    TS_CHECK_MSG(s->parent >= 0, "LiveModelHost::add: an adapter's base must be added first");
    s->adapter_id = static_cast<int32_t>(models_.size());  // unique within the base's engine
    s->engine_options = models_[static_cast<size_t>(s->parent)]->engine_options;
  }
  if (Status st = s->parent >= 0 ? open_adapter(*s) : open(*s); !st.is_ok()) {
    std::lock_guard<std::mutex> lock(open_mu_);
    s->open_error = st.message();
    log_warn("fleet: {} does not open: {}", s->name, s->open_error);
  }
  models_.push_back(std::move(s));
  staged_.emplace_back();
  std::lock_guard<std::mutex> lock(engines_mu_);
  engines_.emplace_back();
}

Status LiveModelHost::open(Model& s) {
  // A model that repacks its weights at load (model/load_options.h) builds the image in an
  // unlinked file mapping, so it moves between tiers as a model file's mapping does.
  std::unique_ptr<ImageFileRegion> image;
  model::LoadOptions load_options;
  load_options.allocate_image = [&image](size_t n) -> Result<std::byte*> {
    TS_ASSIGN_OR_RETURN(image, ImageFileRegion::create(n));
    return image->mutable_bytes().data();
  };
  load_options.device = s.device;  // a device model reads the file in place: no image
  auto loaded = model::load_model(s.path, load_options);
  if (!loaded.is_ok()) return loaded.status().with_context("loading fleet model " + s.name);
  std::shared_ptr<model::Model> m(std::move(loaded).value());
  // An Unloaded model holds no device memory: the weights go up with the model.
  TS_RETURN_IF_ERROR(m->release_device_memory());
  auto tok = model::load_tokenizer_for(*m, s.tokenizer_path);
  if (!tok.is_ok()) return tok.status().with_context("loading the tokenizer of " + s.name);
  std::unique_ptr<TieredRegion> region;
  int64_t weight_bytes = 0;
  if (image != nullptr) {
    // Unloaded until started: the image waits in the host tier (RAM outside the process), or
    // on disk when host memory is budgeted (Unloaded models are not counted against it).
    const Tier rest = options_.images_on_disk ? Tier::kDisk : Tier::kHost;
    auto moved = image->move_to(rest, options_.io_threads);
    if (!moved.is_ok()) return moved.status().with_context("setting aside the image of " + s.name);
    weight_bytes = static_cast<int64_t>(image->size());
    region = std::move(image);
  } else if (m->file().mapping != nullptr) {
    region = std::make_unique<FileBackedRegion>(m->file().mapping);
    weight_bytes = static_cast<int64_t>(region->size());
  } else {
    weight_bytes = static_cast<int64_t>(m->file().tensor_bytes());
  }
  // A context larger than the model's is clamped to it (as `tessera serve --model` does).
  const int64_t model_ctx = m->config().context_length;
  if (s.engine_options.ctx_size <= 0 || s.engine_options.ctx_size > model_ctx) {
    s.engine_options.ctx_size = model_ctx;
  }
  std::lock_guard<std::mutex> lock(open_mu_);
  s.region = std::move(region);
  s.weight_bytes = weight_bytes;
  s.tokenizer = std::shared_ptr<const model::Tokenizer>(std::move(tok).value());
  s.model = std::move(m);
  s.open_error.clear();
  if (s.engine_options.n_blocks == 0 && s.engine_options.kv_memory_bytes == 0 && kv_share_ >= 0) {
    engine::EngineOptions one = s.engine_options;
    one.max_running = 1;
    one.kv_memory_bytes = 0;
    s.engine_options.kv_memory_bytes = std::max<int64_t>(kv_share_, kv_pool_bytes(s.model->config(), one));
  }
  s.kv_bytes = kv_pool_bytes(s.model->config(), s.engine_options);
  return Status();
}

Status LiveModelHost::open_adapter(Model& s) {
  // Read once to check it against the base and learn its size, then dropped: an Unloaded adapter
  // is only its file.
  std::shared_ptr<model::Model> base;
  {
    std::lock_guard<std::mutex> lock(open_mu_);
    base = model(s.parent).model;
  }
  if (base == nullptr) {
    return Status(ErrorCode::kUnavailable,
                  fmt::format("adapter {}: its base model {} did not open", s.name,
                              model(s.parent).name));
  }
  auto loaded = model::load_lora_adapter(s.path, base->file());
  if (!loaded.is_ok()) return loaded.status().with_context("loading adapter " + s.name);
  std::lock_guard<std::mutex> lock(open_mu_);
  s.weight_bytes = static_cast<int64_t>(loaded->bytes());
  s.kv_bytes = 0;
  s.open_error.clear();
  return Status();
}

void LiveModelHost::size_kv_pools(int64_t active_budget_bytes) {
  // A model with neither kv_blocks nor kv_memory set gets an equal share of the memory left
  // after every model's weights: of the active budget, or unbudgeted, of the engine's default
  // share of the memory available now; at least one full sequence. The engine's own sizing rule
  // (engine::size_kv_pool) turns each budget into blocks. Models that did not open get the same
  // share when they do.
  int64_t weights = 0;
  size_t n_bases = 0;
  for (const auto& s : models_) {
    weights += s->weight_bytes;  // adapters' bytes too: they share the budget
    if (s->parent < 0) ++n_bases;
  }
  int64_t left = -1;  // unknown: such models keep max_running full contexts
  if (active_budget_bytes > 0) {
    left = std::max<int64_t>(0, active_budget_bytes - weights);
  } else if (const int64_t kv = engine::default_kv_memory_bytes(weights); kv > 0) {
    left = kv;
  }
  std::lock_guard<std::mutex> lock(open_mu_);
  kv_share_ = left >= 0 ? left / static_cast<int64_t>(std::max<size_t>(1, n_bases)) : -1;
  for (auto& s : models_) {
    if (s->model == nullptr || s->parent >= 0) continue;
    engine::EngineOptions& e = s->engine_options;
    if (e.n_blocks == 0 && e.kv_memory_bytes == 0 && kv_share_ >= 0) {
      engine::EngineOptions one = e;
      one.max_running = 1;
      one.kv_memory_bytes = 0;
      e.kv_memory_bytes = std::max<int64_t>(kv_share_, kv_pool_bytes(s->model->config(), one));
    }
    s->kv_bytes = kv_pool_bytes(s->model->config(), e);
  }
}

std::shared_ptr<model::Model> LiveModelHost::model_ptr(ModelIndex m) const {
  std::lock_guard<std::mutex> lock(open_mu_);
  return model(m).model;
}

std::shared_ptr<const model::Tokenizer> LiveModelHost::tokenizer_ptr(ModelIndex m) const {
  std::lock_guard<std::mutex> lock(open_mu_);
  return model(m).tokenizer;
}

std::string LiveModelHost::open_error(ModelIndex m) const {
  std::lock_guard<std::mutex> lock(open_mu_);
  return model(m).open_error;
}

void LiveModelHost::begin_move(ModelIndex m, Move move) {
  if (move == Move::kSuspend && model(m).parent < 0) {
    // New requests queue in the controller from here on; in-flight ones drain in carry_out().
    std::lock_guard<std::mutex> lock(engines_mu_);
    staged_[static_cast<size_t>(m)] = std::move(engines_[static_cast<size_t>(m)]);
  }
  moves_.emplace_back(m, move);
}

std::optional<std::pair<ModelIndex, Move>> LiveModelHost::take_move() {
  if (moves_.empty()) return std::nullopt;
  auto mv = moves_.front();
  moves_.erase(moves_.begin());
  return mv;
}

Status LiveModelHost::carry_out_adapter(Model& s, Move move) {
  // The controller keeps the base Active from before an adapter's bring-up until after its
  // suspension, so the base's engine is there for every move but an eviction.
  switch (move) {
    case Move::kLoad:
    case Move::kResume: {
      if (s.adapter == nullptr) {
        const std::shared_ptr<model::Model> base = model_ptr(s.parent);
        if (base == nullptr) return Status(ErrorCode::kUnavailable, "the base model is not open");
        auto loaded = model::load_lora_adapter(s.path, base->file());
        if (!loaded.is_ok()) return loaded.status().with_context("loading adapter " + s.name);
        s.adapter = std::make_shared<const model::LoraAdapter>(std::move(loaded).value());
        std::lock_guard<std::mutex> lock(open_mu_);
        s.weight_bytes = static_cast<int64_t>(s.adapter->bytes());
        s.open_error.clear();
      }
      const std::shared_ptr<engine::Engine> e = engine(s.parent);
      if (!e) return Status(ErrorCode::kUnavailable, "the base model is not active");
      return e->set_adapter(s.adapter_id, s.adapter).with_context("registering adapter " + s.name);
    }
    case Move::kSuspend: {
      // New requests queue in the controller; the engine refuses the unregistration while any of
      // the adapter's requests is unfinished, so wait for them. Past the drain timeout (real
      // time, as the base's drain) they are cancelled, as a draining base cancels its own.
      const std::shared_ptr<engine::Engine> e = engine(s.parent);
      if (!e) return Status();
      constexpr int64_t kPollNs = 2'000'000;
      constexpr int64_t kAfterCancelNs = 1'000'000'000;
      bool cancelled = false;
      for (int64_t waited = 0;; waited += kPollNs) {
        Status st = e->set_adapter(s.adapter_id, nullptr);
        if (st.is_ok()) return Status();
        if (st.code() != ErrorCode::kUnavailable ||
            waited >= options_.drain_timeout_ns + kAfterCancelNs) {
          return st.with_context("suspending adapter " + s.name);
        }
        if (!cancelled && waited >= options_.drain_timeout_ns) {
          log_warn("fleet: {}: in-flight requests cancelled after the drain timeout", s.name);
          cancel_all_running(s.adapter_id, *e);
          cancelled = true;
        }
        std::this_thread::sleep_for(std::chrono::nanoseconds(kPollNs));
      }
    }
    case Move::kEvict:
      s.adapter.reset();  // the host copy goes; the file remains
      return Status();
  }
  return Status();
}

Status LiveModelHost::carry_out(ModelIndex m, Move move) {
  Model& s = model(m);
  if (s.parent >= 0) return carry_out_adapter(s, move);
  std::shared_ptr<engine::Engine>& staged = staged_[static_cast<size_t>(m)];
  switch (move) {
    case Move::kLoad:
    case Move::kResume: {
      if (s.model == nullptr) TS_RETURN_IF_ERROR(open(s));
      if (s.region) {
        auto moved = s.region->move_to(Tier::kActive, options_.io_threads);
        if (!moved.is_ok()) return moved.status().with_context("prefaulting " + s.name);
      }
      // On a device: the upload (from the pages just brought in, which it then gives back).
      TS_RETURN_IF_ERROR(s.model->restore_device_memory().with_context("uploading " + s.name));
      engine::EngineOptions eo = s.engine_options;
      if (options_.device && !eo.device) {
        eo.device = options_.device;
        eo.device_client = s.name;
      }
      auto created = engine::Engine::create(s.model, s.tokenizer, eo);
      if (!created.is_ok()) return created.status().with_context("creating the engine of " + s.name);
      std::shared_ptr<engine::Engine> e = std::move(created).value();
      s.kept.restore(*e, options_.io_threads, s.name);
      e->start();
      staged = std::move(e);
      return Status();
    }
    case Move::kSuspend: {
      // In-flight requests finish (the engine refuses new ones meanwhile); the engine and its KV
      // pool are freed when it goes.
      if (std::shared_ptr<engine::Engine> e = std::move(staged)) {
        if (!e->drain(std::chrono::milliseconds(options_.drain_timeout_ns / 1'000'000))) {
          log_warn("fleet: {}: in-flight requests cancelled after the drain timeout", s.name);
        }
        s.kept.keep(*e, options_.keep_prefix_bytes, s.name);
        e.reset();  // its KV pool (on a device: device memory) goes with it
      }
      TS_RETURN_IF_ERROR(s.model->release_device_memory());
      if (s.region) {
        auto moved = s.region->move_to(Tier::kHost, options_.io_threads);
        if (!moved.is_ok()) return moved.status();
      }
      return Status();
    }
    case Move::kEvict: {
      if (s.region) {
        auto moved = s.region->move_to(Tier::kDisk, options_.io_threads);
        if (!moved.is_ok()) return moved.status().with_context("evicting " + s.name);
      }
      s.kept.evict(options_.io_threads, s.name);
      return Status();
    }
  }
  return Status();
}

void LiveModelHost::complete_move(ModelIndex m, Move move, Status result) {
  std::shared_ptr<engine::Engine> e = std::move(staged_[static_cast<size_t>(m)]);
  if ((move == Move::kLoad || move == Move::kResume) && result.is_ok()) {
    std::lock_guard<std::mutex> lock(engines_mu_);
    engines_[static_cast<size_t>(m)] = std::move(e);
  } else if (e) {
    deferred_.push_back([e] { e->stop(); });
  }
  TS_CHECK(controller_ != nullptr);
  if (result.is_ok() && (move == Move::kLoad || move == Move::kResume)) {
    const Model& s = model(m);
    const ControlledModel& c = controller_->model(m);
    if (c.active_bytes != s.active_bytes() || c.weight_bytes != s.weight_bytes) {
      result = controller_->resize(m, s.active_bytes(), s.weight_bytes);  // opened just now
      if (!result.is_ok()) {
        std::lock_guard<std::mutex> lock(engines_mu_);
        if (auto gone = std::move(engines_[static_cast<size_t>(m)])) {
          deferred_.push_back([gone] { gone->stop(); });
        }
      }
    }
  }
  controller_->move_done(m, result);
}

std::vector<std::function<void()>> LiveModelHost::take_deferred() {
  std::vector<std::function<void()>> out;
  out.swap(deferred_);
  return out;
}

void LiveModelHost::stash(ModelIndex m, RequestId id, engine::Request request, EventSink sink,
                          int64_t submit_ns) {
  payloads_[id] = Payload{m, std::move(request), std::move(sink), submit_ns, std::nullopt};
}

void LiveModelHost::stash_embedding(ModelIndex m, RequestId id, std::vector<int32_t> tokens,
                                    engine::Pooling pooling, engine::Engine::EmbedCallback done,
                                    int64_t submit_ns) {
  Payload p;
  p.model = m;
  p.submit_ns = submit_ns;
  p.embed = EmbedJob{std::move(tokens), pooling, std::move(done)};
  payloads_[id] = std::move(p);
}

void LiveModelHost::forget(RequestId id) { payloads_.erase(id); }

Status LiveModelHost::dispatch(ModelIndex m, RequestId id) {
  auto it = payloads_.find(id);
  TS_CHECK_MSG(it != payloads_.end(), "LiveModelHost::dispatch: unknown request");
  std::shared_ptr<engine::Engine> e = engine(m);
  if (!e) return Status(ErrorCode::kUnavailable, "the model is not active");
  if (it->second.embed) {
    Payload p = std::move(it->second);
    payloads_.erase(it);
    return dispatch_embedding(m, id, *e, std::move(p));
  }
  Payload& p = it->second;
  p.request.adapter_id = model(m).adapter_id;  // -1 for a base
  {
    std::lock_guard<std::mutex> ids(ids_mu_);
    running_[id] = {m, 0};
  }
  EventSink keep = p.sink;  // the engine drops its copy on refusal
  auto r = e->submit(std::move(p.request), wrap_sink(m, id, p.submit_ns, std::move(p.sink)));
  std::lock_guard<std::mutex> ids(ids_mu_);
  if (!r.is_ok()) {
    running_.erase(id);
    p.sink = std::move(keep);
    return r.status();
  }
  payloads_.erase(it);
  auto run = running_.find(id);
  if (run != running_.end()) run->second.second = *r;
  return Status();
}

Status LiveModelHost::dispatch_embedding(ModelIndex m, RequestId id, engine::Engine& e,
                                         Payload p) {
  // The result may come at once (Engine::embed reports some errors on this thread, which holds
  // the controller's lock): then `done` is deferred past the lock; else it runs on the engine's
  // thread. `call` tells the two apart.
  struct Call {
    std::mutex mu;
    bool returned = false;
    std::optional<Result<std::vector<float>>> early;
  };
  auto call = std::make_shared<Call>();
  auto done = std::make_shared<engine::Engine::EmbedCallback>(std::move(p.embed->done));
  const int64_t slo_ns = model(m).engine_options.ttft_slo_ns;
  {
    std::lock_guard<std::mutex> ids(ids_mu_);
    running_[id] = {m, 0};  // no engine id: an embedding cannot be cancelled
  }
  e.embed(std::move(p.embed->tokens), p.embed->pooling,
          [this, m, id, submit_ns = p.submit_ns, slo_ns, call,
           done](Result<std::vector<float>> r) {
            {
              std::lock_guard<std::mutex> ids(ids_mu_);
              running_.erase(id);
            }
            const int64_t now = options_.clock->now_ns();
            record_finished(m, id, now, r.is_ok() && now - submit_ns <= slo_ns);
            {
              std::lock_guard<std::mutex> lock(call->mu);
              if (!call->returned) {
                call->early = std::move(r);
                return;
              }
            }
            (*done)(std::move(r));
          });
  std::lock_guard<std::mutex> lock(call->mu);
  call->returned = true;
  if (call->early) {
    deferred_.push_back([done, r = std::move(*call->early)]() mutable { (*done)(std::move(r)); });
  }
  return Status();
}

void LiveModelHost::record_finished(ModelIndex m, RequestId id, int64_t at_ns, bool slo_met) {
  {
    std::lock_guard<std::mutex> lock(finished_mu_);
    finished_.push_back({m, id, at_ns, slo_met});
  }
  if (options_.on_finished) options_.on_finished();
}

void LiveModelHost::reject(ModelIndex /*m*/, RequestId id, const Status& why) {
  auto it = payloads_.find(id);
  if (it == payloads_.end()) return;
  if (it->second.embed) {
    engine::Engine::EmbedCallback done = std::move(it->second.embed->done);
    payloads_.erase(it);
    deferred_.push_back([done = std::move(done), why] { done(why); });
    return;
  }
  EventSink sink = std::move(it->second.sink);
  payloads_.erase(it);
  deferred_.push_back([sink = std::move(sink), id, why] { sink(Event{id, finish_with(why)}); });
}

ModelCosts LiveModelHost::costs(ModelIndex m) const {
  const Model& s = model(m);
  std::lock_guard<std::mutex> lock(open_mu_);
  ModelCosts c;
  c.host_bytes = s.weight_bytes + s.kept.bytes();  // an adapter: its A and B
  // Without a measurement: page cache at ~4 GiB/s, disk at ~0.5 GiB/s.
  const double gib = static_cast<double>(s.weight_bytes) / (1u << 30);
  c.resume_estimate_s = gib / 4.0;
  c.reload_estimate_s = gib / 0.5;
  return c;
}

EventSink LiveModelHost::wrap_sink(ModelIndex m, RequestId fleet_id, int64_t submit_ns,
                                   EventSink sink) {
  // The TTFT SLO counts from the fleet's submit (a resume's wait included) to the first token,
  // or to the finish of a request that ends without one (an error never meets it).
  const int64_t slo_ns = model(m).engine_options.ttft_slo_ns;
  return [this, m, fleet_id, submit_ns, slo_ns, sink = std::move(sink),
          first_ns = int64_t{-1}](Event&& ev) mutable {
    ev.id = fleet_id;
    const int64_t now = options_.clock->now_ns();
    if (first_ns < 0 && !ev.is_finish()) first_ns = now;
    if (ev.is_finish()) {
      {
        std::lock_guard<std::mutex> ids(ids_mu_);
        running_.erase(fleet_id);
      }
      const auto& f = std::get<FinishEvent>(ev.body);
      const bool ok = f.reason == FinishReason::kStop || f.reason == FinishReason::kLength;
      const int64_t ttft = (first_ns < 0 ? now : first_ns) - submit_ns;
      record_finished(m, fleet_id, now, ok && ttft <= slo_ns);
    }
    sink(std::move(ev));
  };
}

void LiveModelHost::drain_finished() {
  std::vector<Finished> done;
  {
    std::lock_guard<std::mutex> lock(finished_mu_);
    done.swap(finished_);
  }
  for (const Finished& f : done) controller_->finished(f.model, f.id, f.slo_met, f.at_ns);
}

std::shared_ptr<engine::Engine> LiveModelHost::engine(ModelIndex m) const {
  const ModelIndex runs_on = model(m).parent >= 0 ? model(m).parent : m;
  std::lock_guard<std::mutex> lock(engines_mu_);
  return engines_[static_cast<size_t>(runs_on)];
}

void LiveModelHost::cancel_all_running(int32_t adapter_id, engine::Engine& e) {
  std::vector<RequestId> engine_ids;
  {
    std::lock_guard<std::mutex> ids(ids_mu_);
    for (const auto& [fleet_id, where] : running_) {
      if (where.second != 0 && model(where.first).adapter_id == adapter_id) {
        engine_ids.push_back(where.second);
      }
    }
  }
  for (RequestId id : engine_ids) e.cancel(id);
}

void LiveModelHost::cancel_running(ModelIndex m, RequestId id) {
  std::shared_ptr<engine::Engine> e = engine(m);
  RequestId engine_id = 0;
  {
    std::lock_guard<std::mutex> ids(ids_mu_);
    auto it = running_.find(id);
    if (it != running_.end()) engine_id = it->second.second;
  }
  if (e && engine_id != 0) e->cancel(engine_id);
}

std::vector<std::shared_ptr<engine::Engine>> LiveModelHost::take_engines() {
  std::vector<std::shared_ptr<engine::Engine>> out;
  std::lock_guard<std::mutex> lock(engines_mu_);
  for (auto& e : engines_) {
    if (e) out.push_back(std::move(e));
  }
  for (auto& e : staged_) {
    if (e) out.push_back(std::move(e));
  }
  return out;
}

}  // namespace tessera::fleet
