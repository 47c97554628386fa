// JSON to template values: request messages and tools become jinja::Value trees for rendering a
// model's chat template. Object keys keep their order (a template's tojson shows it), so the input
// is an ordered_json.
// Thread-safety: pure function.
#pragma once

#include <nlohmann/json.hpp>

#include "tessera/jinja/value.h"

namespace tessera::serve {

// null -> none, booleans, integers (unsigned ones past int64 become floats), floats, strings,
// arrays -> lists, objects -> dicts in key order.
jinja::Value jinja_value_from_json(const nlohmann::ordered_json& j);

}  // namespace tessera::serve
