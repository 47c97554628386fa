// fleet_backend(): ModelBackend over one model of a fleet::FleetManager, so the OpenAI routes
// serve fleet-managed models unchanged (a request for a suspended model queues and resumes it;
// stats of a model that is not Active are zeros; an embedding is admitted like a request, so it
// brings a suspended model up too). fleet_entry() builds the ModelEntry with the lifecycle state
// (for /v1/models), the embedding pooling of the model's metadata and the admin actions; attach_fleet_metrics() exports
//   tessera_model_state{model,state}     gauge, 1 for the current state, 0 for the others
//   tessera_model_resumes_total{model}   counter of completed resumes (Resuming -> Active)
//   tessera_model_resume_seconds{model}  histogram of resume durations
// and, sampled at scrape time, the gauges
//   tessera_model_time_in_state_seconds{model}        time in the current state
//   tessera_model_active_bytes{model}                 weights + KV while holding active memory
//   tessera_model_kept_prefix_bytes{model}            prefix blocks kept while suspended/evicted
// and the counters (running totals kept by the fleet)
//   tessera_model_memory_byte_seconds_total{model}       active bytes x seconds held
//   tessera_model_idle_memory_byte_seconds_total{model}  the part with no request in flight
//   tessera_model_cold_starts_total{model}               requests that found the model not Active
//   tessera_model_requests_finished_total{model}         requests finished, any outcome
//   tessera_model_ttft_slo_met_total{model}              of which met the model's TTFT SLO
//   tessera_device_busy_seconds_total{model}, tessera_device_wait_seconds_total{model},
//   tessera_device_iterations_total{model}, tessera_device_late_iterations_total{model}
//                                                     the shared device's per-model use, when set
// Adapters (fleet entries with a parent) get their own families instead, labelled
// {model=<base>, adapter=<name>}: tessera_adapter_state{state}, and at scrape time
// tessera_adapter_time_in_state_seconds, tessera_adapter_active_bytes (while registered in the
// base's engine), tessera_adapter_bytes, tessera_adapter_cold_starts,
// tessera_adapter_requests_in_flight, tessera_adapter_resumes, tessera_adapter_suspends.
// fleet_entry() of an adapter sets ModelEntry::base and ::adapter (its request metrics go to the
// base and to tessera_adapter_* series; it has no engine gauges).
// Thread-safety: the backend is safe from any thread (FleetManager is).
#pragma once

#include <memory>
#include <string>

#include "tessera/fleet/fleet_manager.h"
#include "tessera/serve/metrics.h"
#include "tessera/serve/model_backend.h"

namespace tessera::serve {

// Precondition: `fleet` non-null and `name` one of its models (checked).
std::shared_ptr<ModelBackend> fleet_backend(std::shared_ptr<fleet::FleetManager> fleet,
                                            const std::string& name);

// The router entry for fleet model `name`: backend, state, admin ("suspend", "resume", "load",
// "evict"); `chat` and `created` are the caller's.
ModelEntry fleet_entry(std::shared_ptr<fleet::FleetManager> fleet, const std::string& name);

// Registers the metrics above in `registry` (which must outlive the fleet): lifecycle listeners
// and a scrape-time collector (which holds the fleet weakly). Call before fleet->start().
void attach_fleet_metrics(const std::shared_ptr<fleet::FleetManager>& fleet,
                          MetricsRegistry& registry);

}  // namespace tessera::serve
