// Reading counters back from a Prometheus text exposition (what a Tessera server's /metrics
// serves): a family's samples summed over their label sets, for the counters `bench serve`
// measures around a run (speculation, structured output's constraint).
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

namespace tessera::bench {

// The sum of every sample of `family` (name{labels} VALUE or name VALUE; a longer name that starts
// with `family` is another family); nullopt when the exposition has no sample of it that parses.
std::optional<double> sum_metric_family(std::string_view exposition, std::string_view family);

}  // namespace tessera::bench
