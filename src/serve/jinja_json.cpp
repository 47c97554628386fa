#include "tessera/serve/jinja_json.h"

#include <cstdint>
#include <limits>

namespace tessera::serve {

jinja::Value jinja_value_from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return jinja::Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return jinja::Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return jinja::Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return jinja::Value(static_cast<int64_t>(u));
      }
      return jinja::Value(static_cast<double>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return jinja::Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return jinja::Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      jinja::List l;
      l.reserve(j.size());
      for (const auto& item : j) l.push_back(jinja_value_from_json(item));
      return jinja::Value(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      jinja::Dict d;
      for (const auto& [k, v] : j.items()) d.set(k, jinja_value_from_json(v));
      return jinja::Value(std::move(d));
    }
    default:  // binary, discarded: not produced by parsing JSON text
      return jinja::Value::none();
  }
}

}  // namespace tessera::serve
