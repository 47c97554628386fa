// `tessera serve --models DIR | --config FILE`: a fleet served. One FleetManager over the
// folder's *.gguf (each named by its stem) or the config's models, on one shared device, with
// the budgets and the idle policy of the settings; each model a router entry (fleet_backend.h)
// with its chat renderer; transitions and each model's state announced; the server switched to
// serving once at least one model loaded. Thread-safety: call from the controlling thread.
#pragma once

#include <memory>

#include "tessera/base/status.h"
#include "tessera/fleet/fleet_manager.h"
#include "tessera/serve/serve_settings.h"
#include "tessera/serve/server_setup.h"

namespace tessera::serve {

// The fleet's options from the settings: budgets, the default idle policy, the request deadline
// and one device of `threads` cores. Errors: kInvalidArgument naming the flag.
Result<fleet::FleetOptions> fleet_options(const ServeSettings& settings);

// Returns the running fleet (stop it after the server shut down). Errors: fleet_options', a
// draft model (a fleet speculates with n-grams only), a --kv-memory percentage, the config's or
// the folder's, --lora's, the fleet's creation, --embedding-pooling's, the router's, and
// kInvalidArgument when none of the models could be loaded (the fleet is then stopped).
Result<std::shared_ptr<fleet::FleetManager>> serve_fleet(const ServeSettings& settings,
                                                         const ServeContext& context);

}  // namespace tessera::serve
