#include "tessera/serve/fleet_backend.h"

#include <map>
#include <string_view>

#include "tessera/base/check.h"

namespace tessera::serve {

namespace {

class FleetBackend final : public ModelBackend {
 public:
  FleetBackend(std::shared_ptr<fleet::FleetManager> fleet, std::string name)
      : fleet_(std::move(fleet)), name_(std::move(name)) {}

  Result<engine::RequestId> submit(engine::Request request, engine::EventSink sink) override {
    return fleet_->submit(name_, std::move(request), std::move(sink));
  }
  void cancel(engine::RequestId id) override { fleet_->cancel(name_, id); }
  engine::EngineStats stats() const override { return fleet_->stats(name_); }
  // Precondition: ready() (the model's file opened; it stays open).
  const model::Tokenizer& tokenizer() const override { return fleet_->tokenizer(name_); }
  int64_t context_length() const override { return fleet_->context_length(name_); }
  Status ready() const override { return fleet_->opened(name_); }
  int64_t embedding_width() const override { return fleet_->embedding_width(name_); }
  // Admitted like a request: a suspended or unloaded model is brought up for it.
  void embed(std::vector<int32_t> tokens, engine::Pooling pooling,
             engine::Engine::EmbedCallback done) override {
    fleet_->embed(name_, std::move(tokens), pooling, std::move(done));
  }

 private:
  std::shared_ptr<fleet::FleetManager> fleet_;
  std::string name_;
};

}  // namespace

std::shared_ptr<ModelBackend> fleet_backend(std::shared_ptr<fleet::FleetManager> fleet,
                                            const std::string& name) {
  TS_CHECK_MSG(fleet != nullptr, "fleet_backend: null fleet");
  TS_CHECK_MSG(fleet->status(name).is_ok(), "fleet_backend: unknown model");
  return std::make_shared<FleetBackend>(std::move(fleet), name);
}

namespace {

// The adapter's own name within its base's: "base:sql" -> "sql".
std::string adapter_name(const std::string& name, const std::string& parent) {
  const std::string prefix = parent + ":";
  return name.starts_with(prefix) ? name.substr(prefix.size()) : name;
}

}  // namespace

ModelEntry fleet_entry(std::shared_ptr<fleet::FleetManager> fleet, const std::string& name) {
  ModelEntry e;
  e.name = name;
  e.backend = fleet_backend(fleet, name);
  if (auto st = fleet->status(name); st.is_ok() && !st->parent.empty()) {
    e.base = st->parent;
    e.adapter = adapter_name(name, st->parent);
  }
  if (fleet->opened(name).is_ok()) e.pooling = engine::pooling_from_metadata(fleet->metadata(name));
  std::weak_ptr<fleet::FleetManager> weak = fleet;
  e.state = [weak, name]() -> std::string {
    auto f = weak.lock();
    return f ? std::string(fleet::model_state_name(f->state(name))) : "unloaded";
  };
  e.error = [weak, name]() -> std::string {
    auto f = weak.lock();
    if (!f) return {};
    auto st = f->status(name);
    return st.is_ok() && st->state == fleet::ModelState::kFailed ? st->last_error : std::string();
  };
  e.admin = [weak, name](const std::string& action) -> Status {
    auto f = weak.lock();
    if (!f) return Status(ErrorCode::kUnavailable, "the fleet is stopping");
    if (action == "suspend") return f->suspend(name);
    if (action == "resume") return f->resume(name);
    if (action == "load") return f->load(name);
    if (action == "evict") return f->evict(name);
    return invalid_argument("unknown admin action '" + action +
                            "': expected suspend, resume, load or evict");
  };
  return e;
}

namespace {

void collect_adapter(const fleet::ModelStatus& m, MetricsRegistry& r) {
  const MetricLabels l = {{"model", m.parent}, {"adapter", adapter_name(m.name, m.parent)}};
  r.gauge("tessera_adapter_time_in_state_seconds", "Seconds in the adapter's current lifecycle state",
          l)
      .set(m.time_in_state_s);
  r.gauge("tessera_adapter_active_bytes",
          "LoRA adapter bytes registered in its base's engine (the active tier)", l)
      .set(fleet::holds_active_memory(m.state) ? static_cast<double>(m.active_bytes) : 0.0);
  r.gauge("tessera_adapter_bytes", "LoRA adapter bytes (A and B as held: f32, f16 or bf16) in whichever tier holds it",
          l)
      .set(static_cast<double>(m.weight_bytes));
  r.gauge("tessera_adapter_cold_starts",
          "Requests that found the adapter not Active (running total)", l)
      .set(static_cast<double>(m.cold_starts));
  r.gauge("tessera_adapter_requests_in_flight", "Adapter requests submitted and not finished", l)
      .set(static_cast<double>(m.in_flight));
  r.gauge("tessera_adapter_resumes", "Completed adapter resumes (running total)", l)
      .set(static_cast<double>(m.resumes));
  r.gauge("tessera_adapter_suspends", "Completed adapter suspensions (running total)", l)
      .set(static_cast<double>(m.suspends));
}

void collect_fleet(const fleet::FleetManager& fleet, MetricsRegistry& r) {
  for (const fleet::ModelStatus& m : fleet.status()) {
    if (!m.parent.empty()) {
      collect_adapter(m, r);
      continue;
    }
    const MetricLabels l = {{"model", m.name}};
    r.gauge("tessera_model_time_in_state_seconds", "Seconds in the current lifecycle state", l)
        .set(m.time_in_state_s);
    r.gauge("tessera_model_active_bytes", "Weights + KV bytes held in active memory", l)
        .set(fleet::holds_active_memory(m.state) ? static_cast<double>(m.active_bytes) : 0.0);
    r.gauge("tessera_model_kept_prefix_bytes",
            "Prefix-cache bytes kept for the model while it is suspended or evicted", l)
        .set(static_cast<double>(m.kept_prefix_bytes));
    r.counter("tessera_model_memory_byte_seconds_total", "Active bytes x seconds held", l)
        .sync(m.memory_seconds);
    r.counter("tessera_model_idle_memory_byte_seconds_total",
              "Active bytes x seconds held with no request in flight", l)
        .sync(m.idle_memory_seconds);
    r.counter("tessera_model_cold_starts_total", "Requests that found the model not Active", l)
        .sync(static_cast<double>(m.cold_starts));
    r.counter("tessera_model_requests_finished_total", "Requests finished, any outcome", l)
        .sync(static_cast<double>(m.finished));
    r.counter("tessera_model_ttft_slo_met_total",
              "Finished requests whose first token came within the model's TTFT SLO", l)
        .sync(static_cast<double>(m.slo_met));
  }
  if (const auto device = fleet.device()) {
    for (const engine::DeviceClientStats& c : device->stats()) {
      const MetricLabels l = {{"model", c.name}};
      r.counter("tessera_device_busy_seconds_total", "Seconds the model held the shared device", l)
          .sync(static_cast<double>(c.busy_ns) * 1e-9);
      r.counter("tessera_device_wait_seconds_total", "Seconds the model waited for the shared device", l)
          .sync(static_cast<double>(c.wait_ns) * 1e-9);
      r.counter("tessera_device_iterations_total", "Iterations the model ran on the shared device", l)
          .sync(static_cast<double>(c.grants));
      r.counter("tessera_device_late_iterations_total",
                "Iterations granted after their batch's deadline", l)
          .sync(static_cast<double>(c.late_grants));
    }
  }
}

}  // namespace

void attach_fleet_metrics(const std::shared_ptr<fleet::FleetManager>& fleet_ptr,
                          MetricsRegistry& registry) {
  TS_CHECK_MSG(fleet_ptr != nullptr, "attach_fleet_metrics: null fleet");
  fleet::FleetManager& fleet = *fleet_ptr;
  std::weak_ptr<fleet::FleetManager> weak = fleet_ptr;
  registry.add_collector([weak](MetricsRegistry& r) {
    if (auto f = weak.lock()) collect_fleet(*f, r);
  });
  static constexpr const char* kStateHelp = "1 for the model's current lifecycle state, else 0";
  static constexpr const char* kAdapterStateHelp =
      "1 for the LoRA adapter's current lifecycle state, else 0";
  // Per entry: its state gauge's labels, less "state" (adapters: {model=base, adapter}). Names
  // are fixed at create(), so the listener reads this map without a lock.
  auto labels = std::make_shared<std::map<std::string, std::pair<const char*, MetricLabels>>>();
  for (const fleet::ModelStatus& m : fleet.status()) {
    if (m.parent.empty()) {
      (*labels)[m.name] = {"tessera_model_state", {{"model", m.name}}};
    } else {
      (*labels)[m.name] = {"tessera_adapter_state",
                           {{"model", m.parent}, {"adapter", adapter_name(m.name, m.parent)}}};
    }
  }
  const auto state_gauge = [labels](MetricsRegistry& reg, const std::string& name,
                                    fleet::ModelState s) -> Gauge& {
    const auto& [family, base_labels] = labels->at(name);
    MetricLabels l = base_labels;
    l.push_back({"state", std::string(fleet::model_state_name(s))});
    return reg.gauge(family, family == std::string_view("tessera_model_state") ? kStateHelp
                                                                              : kAdapterStateHelp,
                     l);
  };
  for (const std::string& name : fleet.names()) {
    for (fleet::ModelState s : fleet::kAllModelStates) {
      state_gauge(registry, name, s).set(s == fleet.state(name) ? 1.0 : 0.0);
    }
    if (labels->at(name).first == std::string_view("tessera_model_state")) {
      registry.counter("tessera_model_resumes_total", "Completed resumes (Resuming -> Active)",
                       {{"model", name}});
    }
  }
  MetricsRegistry* r = &registry;
  fleet.add_listener([r, state_gauge, labels](const fleet::TransitionEvent& ev) {
    state_gauge(*r, ev.model, ev.from).set(0.0);
    state_gauge(*r, ev.model, ev.to).set(1.0);
    if (labels->at(ev.model).first != std::string_view("tessera_model_state")) return;
    if (ev.from == fleet::ModelState::kResuming && ev.to == fleet::ModelState::kActive) {
      r->counter("tessera_model_resumes_total", "Completed resumes (Resuming -> Active)",
                 {{"model", ev.model}})
          .inc();
      r->histogram("tessera_model_resume_seconds", "Time from Resuming to Active",
                   latency_buckets_seconds(), {{"model", ev.model}})
          .observe(static_cast<double>(ev.time_in_from_ns) * 1e-9);
    }
  });
}

}  // namespace tessera::serve
