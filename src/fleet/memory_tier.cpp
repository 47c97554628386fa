#include "tessera/fleet/memory_tier.h"

namespace tessera::fleet {

std::string_view tier_name(Tier t) {
  switch (t) {
    case Tier::kActive: return "active";
    case Tier::kHost: return "host";
    case Tier::kDisk: return "disk";
  }
  return "unknown";
}

}  // namespace tessera::fleet
