#include "tessera/bench/response_format.h"

#include <fstream>
#include <sstream>

namespace tessera::bench {

namespace response_format {

// A response_format object names its kind in "type"; a JSON Schema's "type" is a JSON type
// ("object", ...) or a list of them, so the two cannot be mistaken for each other.
bool is_response_format(const nlohmann::json& v) {
  const auto t = v.find("type");
  if (t == v.end() || !t->is_string()) return false;
  const auto& s = t->get_ref<const std::string&>();
  return s == "text" || s == "json_object" || s == "json_schema";
}

}  // namespace response_format

Result<BenchResponseFormat> make_response_format(const nlohmann::json& value) {
  if (!value.is_object()) {
    return invalid_argument("expected a response_format object or a JSON Schema object");
  }
  BenchResponseFormat f;
  if (!response_format::is_response_format(value)) {
    f.body = {{"type", "json_schema"}, {"json_schema", {{"name", "bench"}, {"schema", value}}}};
  } else {
    f.body = value;
  }
  const std::string& type = f.body["type"].get_ref<const std::string&>();
  if (type == "text") return f;
  if (type == "json_object") {
    f.schema = engine::JsonSchema::any_object();
    return f;
  }
  const auto js = f.body.find("json_schema");
  if (js == f.body.end() || !js->is_object() || !js->contains("schema")) {
    return invalid_argument("a json_schema response_format needs json_schema.schema");
  }
  TS_ASSIGN_OR_RETURN(f.schema, engine::JsonSchema::compile((*js)["schema"]));
  return f;
}

Result<BenchResponseFormat> load_response_format(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(ErrorCode::kNotFound, "--response-format: cannot read '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json v = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) return invalid_argument("--response-format " + path + ": not valid JSON");
  auto f = make_response_format(v);
  if (!f.is_ok()) return f.status().with_context("--response-format " + path);
  return f;
}

}  // namespace tessera::bench
