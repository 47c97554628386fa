#include "tessera/device/device_info.h"
#include "tessera/serve/fleet_service.h"

#include <fmt/format.h>

#include <ctime>
#include <optional>

#include "tessera/base/log.h"
#include "tessera/fleet/idle_policy.h"
#include "tessera/serve/byte_size.h"
#include "tessera/serve/fleet_backend.h"
#include "tessera/serve/fleet_config.h"

namespace tessera::serve {
namespace fleet_service {

Status parse_budget(const std::string& text, const char* flag, int64_t* out) {
  auto b = parse_byte_size(text);
  if (!b.is_ok()) return b.status().with_context(flag);
  *out = *b;
  return Status::ok();
}

// The models: the config's, else every *.gguf of the folder, with the --lora adapters.
Result<std::vector<fleet::FleetModelSpec>> model_specs(const ServeSettings& a, kernels::DType kv_dtype) {
  // The model context caps ctx_size when the fleet opens the file (FleetManager clamps).
  engine::EngineOptions defaults = engine_options(a, kv_dtype, a.ctx_size);
  if (a.draft_model) {
    return invalid_argument("a draft model serves one model (--model); a fleet speculates with --spec ngram");
  }
  if (a.speculation) {
    TS_ASSIGN_OR_RETURN(defaults.spec, a.speculation(nullptr, nullptr));
  }
  if (a.kv_memory.ends_with("%")) {
    return invalid_argument("with --models/--config, --kv-memory takes bytes per model (the fleet "
                            "divides --mem-budget among models by default)");
  }
  auto kv_memory = parse_kv_memory(a.kv_memory, 0);
  if (!kv_memory.is_ok()) return kv_memory.status().with_context("--kv-memory");
  defaults.kv_memory_bytes = *kv_memory;
  auto device = device::parse_device_name(a.device);
  if (!device.is_ok()) return device.status().with_context("--device");
  std::vector<fleet::FleetModelSpec> specs;
  if (!a.config.empty()) {
    TS_ASSIGN_OR_RETURN(specs, read_fleet_config(a.config, defaults,
                                                 fleet::IdlePolicySettings{a.idle_policy, a.keep_alive_s},
                                                 *device));
  } else {
    TS_ASSIGN_OR_RETURN(specs, fleet_specs_from_dir(a.models_dir, defaults, *device));
  }
  TS_RETURN_IF_ERROR(add_lora_flags(a.loras, &specs));
  return specs;
}

// Each model a router entry with its chat renderer (and the pooling override).
Status add_entries(const ServeSettings& a, const ServeContext& c,
                   const std::shared_ptr<fleet::FleetManager>& fleet) {
  std::optional<engine::Pooling> pooling_override;
  if (!a.embedding_pooling.empty()) {
    auto pooling = engine::parse_pooling(a.embedding_pooling);
    if (!pooling.is_ok()) return pooling.status().with_context("--embedding-pooling");
    pooling_override = *pooling;
  }
  for (const std::string& name : fleet->names()) {
    ModelEntry entry = fleet_entry(fleet, name);
    if (pooling_override) entry.pooling = *pooling_override;
    entry.chat = fleet_chat_renderer(fleet, name, c.chat, c.render_limits, c.print);
    entry.created = static_cast<int64_t>(std::time(nullptr));
    TS_RETURN_IF_ERROR(c.router->add(std::move(entry)));
  }
  return Status::ok();
}

// Starts the fleet and announces each model's state; returns how many failed to load.
size_t start_and_report(fleet::FleetManager& fleet, const OperatorLine& print) {
  if (Status s = fleet.start(); !s.is_ok()) log_warn("fleet: {}", s.message());
  size_t n_failed = 0;
  for (const auto& m : fleet.status()) {
    if (m.state == fleet::ModelState::kFailed) {
      ++n_failed;
      print(fmt::format("tessera serve: model '{}' failed: {} (requests get 503; retried on request)",
                        m.name, m.last_error));
      continue;
    }
    print(fmt::format("tessera serve: model '{}' {} ({:.1f} MiB weights + KV, idle policy {})", m.name,
                      fleet::model_state_name(m.state), static_cast<double>(m.active_bytes) / (1 << 20),
                      m.idle_policy));
  }
  return n_failed;
}

}  // namespace fleet_service

Result<fleet::FleetOptions> fleet_options(const ServeSettings& a) {
  fleet::FleetOptions fo;
  if (!a.mem_budget.empty()) {
    TS_RETURN_IF_ERROR(fleet_service::parse_budget(a.mem_budget, "--mem-budget", &fo.active_budget_bytes));
  }
  if (!a.device_mem_budget.empty()) {
    TS_RETURN_IF_ERROR(fleet_service::parse_budget(a.device_mem_budget, "--device-mem-budget",
                                                   &fo.device_budget_bytes));
  }
  if (!a.host_budget.empty()) {
    TS_RETURN_IF_ERROR(fleet_service::parse_budget(a.host_budget, "--host-budget", &fo.host_budget_bytes));
  }
  TS_RETURN_IF_ERROR(fleet_service::parse_budget(a.keep_prefix, "--keep-prefix-cache", &fo.keep_prefix_bytes));
  auto policy = fleet::make_idle_policy({a.idle_policy, a.keep_alive_s});
  if (!policy.is_ok()) return policy.status().with_context("--idle-policy/--keep-alive");
  fo.idle_policy = std::move(policy).value();
  fo.request_deadline_ns = static_cast<int64_t>(a.resume_deadline_s * 1e9);
  // One device for every model: their engines take turns on one pool of --threads cores.
  engine::DeviceSchedulerOptions dso;
  dso.n_threads = a.threads;
  fo.device = std::make_shared<engine::DeviceScheduler>(dso);
  return fo;
}

Result<std::shared_ptr<fleet::FleetManager>> serve_fleet(const ServeSettings& a, const ServeContext& c) {
  TS_ASSIGN_OR_RETURN(fleet::FleetOptions fo, fleet_options(a));
  TS_ASSIGN_OR_RETURN(std::vector<fleet::FleetModelSpec> specs, fleet_service::model_specs(a, c.kv_dtype));
  const size_t n_models = specs.size();
  const int device_threads = fo.device->n_threads();
  TS_ASSIGN_OR_RETURN(std::shared_ptr<fleet::FleetManager> fleet,
                      fleet::FleetManager::create(std::move(specs), fo));
  attach_fleet_metrics(fleet, c.server->metrics());
  fleet->add_listener([print = c.print](const fleet::TransitionEvent& ev) {
    print(fmt::format("tessera serve: fleet: {} {} -> {} ({}; {:.3f} s in {})", ev.model,
                      fleet::model_state_name(ev.from), fleet::model_state_name(ev.to), ev.reason,
                      static_cast<double>(ev.time_in_from_ns) * 1e-9, fleet::model_state_name(ev.from)));
  });
  TS_RETURN_IF_ERROR(fleet_service::add_entries(a, c, fleet));
  if (fleet_service::start_and_report(*fleet, c.print) == n_models) {
    fleet->stop();
    return invalid_argument("none of the fleet's models could be loaded");
  }
  c.server->set_serving();
  c.print(fmt::format("tessera serve: fleet of {} models on one device of {} threads, default idle "
                      "policy {}, keep-alive {:.0f} s, budget {}",
                      n_models, device_threads, a.idle_policy, a.keep_alive_s,
                      a.mem_budget.empty() ? "unlimited" : a.mem_budget));
  return fleet;
}

}  // namespace tessera::serve
