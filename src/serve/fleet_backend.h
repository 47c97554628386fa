// fleet_backend(): ModelBackend over one model of a fleet::FleetManager, so the OpenAI routes
// serve fleet-managed models unchanged (a request for a suspended model queues and resumes it;
// stats of a model that is not Active are zeros). fleet_entry() builds the ModelEntry with the
// lifecycle state (for /v1/models) and the admin actions; attach_fleet_metrics() exports
//   tessera_model_state{model,state}     gauge, 1 for the current state, 0 for the others
//   tessera_model_resumes_total{model}   counter of completed resumes (Resuming -> Active)
//   tessera_model_resume_seconds{model}  histogram of resume durations
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

// Registers the lifecycle metrics above in `registry` (which must outlive the fleet) through
// lifecycle listeners. Call before fleet->start().
void attach_fleet_metrics(fleet::FleetManager& fleet, MetricsRegistry& registry);

}  // namespace tessera::serve
