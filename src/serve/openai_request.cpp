#include "tessera/serve/openai_request.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

namespace tessera::serve {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr int kMaxNesting = 64;
constexpr size_t kMaxStops = 16;
constexpr size_t kMaxLogitBias = 1024;  // entries of logit_bias

std::string type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a number";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    default: return "an unknown value";
  }
}

// Reads typed fields out of one JSON object, remembering the first error and its field.
class Fields {
 public:
  Fields(const json& obj, std::string* error_param) : obj_(obj), error_param_(error_param) {}

  // The value of `name`, or null when absent or null.
  const json* get(const char* name) const {
    auto it = obj_.find(name);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  Status fail(const std::string& field, std::string message) {
    if (error_param_) *error_param_ = field;
    return invalid_argument(std::move(message));
  }
  Status wrong_type(const std::string& field, const char* expected, const json& v) {
    return fail(field, fmt::format("'{}' must be {}, got {}", field, expected, type_name(v)));
  }

  Status read_bool(const char* name, bool* out) {
    const json* v = get(name);
    if (!v) return Status::ok();
    if (!v->is_boolean()) return wrong_type(name, "a boolean", *v);
    *out = v->get<bool>();
    return Status::ok();
  }

  // An integer in [lo, hi]; whole floats such as 16.0 are accepted (JavaScript has no ints).
  Status read_int(const char* name, int64_t lo, int64_t hi, std::optional<int64_t>* out) {
    const json* v = get(name);
    if (!v) return Status::ok();
    int64_t x = 0;
    if (v->is_number_integer()) {
      if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi)) {
        return fail(name, fmt::format("'{}' must be at most {}, got {}", name, hi, v->get<uint64_t>()));
      }
      x = v->get<int64_t>();
    } else if (v->is_number_float() && std::isfinite(v->get<double>()) &&
               std::floor(v->get<double>()) == v->get<double>() &&
               std::fabs(v->get<double>()) < 9e15) {
      x = static_cast<int64_t>(v->get<double>());
    } else {
      return wrong_type(name, "an integer", *v);
    }
    if (x < lo || x > hi) {
      return fail(name, fmt::format("'{}' must be in [{}, {}], got {}", name, lo, hi, x));
    }
    *out = x;
    return Status::ok();
  }

  Status read_number(const char* name, double lo, double hi, std::optional<double>* out) {
    const json* v = get(name);
    if (!v) return Status::ok();
    if (!v->is_number()) return wrong_type(name, "a number", *v);
    const double x = v->get<double>();
    if (!(x >= lo && x <= hi)) {
      return fail(name, fmt::format("'{}' must be in [{}, {}], got {}", name, lo, hi, x));
    }
    *out = x;
    return Status::ok();
  }

 private:
  const json& obj_;
  std::string* error_param_;
};

// The top-level fields each route accepts. A field outside this table is refused with a 400
// naming it, so a client never believes a setting took effect when it did not. kIgnored fields
// change nothing about the output and are accepted for clients that always send them.
enum RouteMask : uint8_t { kCompletionOnly = 1, kChatOnly = 2, kBothRoutes = 3 };
enum class FieldUse : uint8_t { kSupported, kIgnored };
struct FieldRule {
  std::string_view name;
  uint8_t routes;
  FieldUse use;
};
constexpr FieldRule kFields[] = {
    {"model", kBothRoutes, FieldUse::kSupported},
    {"n", kBothRoutes, FieldUse::kSupported},
    {"temperature", kBothRoutes, FieldUse::kSupported},
    {"top_p", kBothRoutes, FieldUse::kSupported},
    {"top_k", kBothRoutes, FieldUse::kSupported},            // extension (vLLM, llama-server)
    {"min_p", kBothRoutes, FieldUse::kSupported},            // extension
    {"frequency_penalty", kBothRoutes, FieldUse::kSupported},
    {"presence_penalty", kBothRoutes, FieldUse::kSupported},
    {"repetition_penalty", kBothRoutes, FieldUse::kSupported},  // extension
    {"seed", kBothRoutes, FieldUse::kSupported},
    {"stop", kBothRoutes, FieldUse::kSupported},
    {"stream", kBothRoutes, FieldUse::kSupported},
    {"stream_options", kBothRoutes, FieldUse::kSupported},
    {"max_tokens", kBothRoutes, FieldUse::kSupported},
    {"ignore_eos", kBothRoutes, FieldUse::kSupported},   // extension
    {"priority", kBothRoutes, FieldUse::kSupported},     // extension
    {"speculative", kBothRoutes, FieldUse::kSupported},  // extension
    {"logprobs", kBothRoutes, FieldUse::kSupported},
    {"logit_bias", kBothRoutes, FieldUse::kSupported},
    {"response_format", kBothRoutes, FieldUse::kSupported},
    {"structured_outputs", kBothRoutes, FieldUse::kSupported},  // extension (vLLM)
    {"guided_regex", kBothRoutes, FieldUse::kSupported},        // extension (vLLM, older)
    {"guided_choice", kBothRoutes, FieldUse::kSupported},       // extension (vLLM, older)
    {"guided_json", kBothRoutes, FieldUse::kSupported},         // extension (vLLM, older)
    {"guided_grammar", kBothRoutes, FieldUse::kSupported},      // extension (vLLM, older; GBNF)
    {"grammar", kBothRoutes, FieldUse::kSupported},             // extension (llama-server, GBNF)
    {"user", kBothRoutes, FieldUse::kIgnored},
    {"metadata", kBothRoutes, FieldUse::kIgnored},
    {"service_tier", kBothRoutes, FieldUse::kIgnored},
    {"prompt", kCompletionOnly, FieldUse::kSupported},
    {"best_of", kCompletionOnly, FieldUse::kSupported},  // 1 only
    {"echo", kCompletionOnly, FieldUse::kSupported},     // false only
    {"suffix", kCompletionOnly, FieldUse::kSupported},   // empty only
    {"messages", kChatOnly, FieldUse::kSupported},
    {"max_completion_tokens", kChatOnly, FieldUse::kSupported},
    {"top_logprobs", kChatOnly, FieldUse::kSupported},
    {"tools", kChatOnly, FieldUse::kSupported},
    {"tool_choice", kChatOnly, FieldUse::kSupported},
    // Calls are parsed as the model writes them (several when it writes several); a forced
    // call is always one.
    {"parallel_tool_calls", kChatOnly, FieldUse::kIgnored},
};

// kInvalidArgument naming the first field of `doc` that `route` does not accept.
Status check_known_fields(Fields& f, const json& doc, RouteMask route) {
  for (const auto& [key, value] : doc.items()) {
    bool known = false;
    for (const FieldRule& r : kFields) {
      if (r.name == key && (r.routes & route) != 0) {
        known = true;
        break;
      }
    }
    if (known) continue;
    std::string accepted;
    for (const FieldRule& r : kFields) {
      if ((r.routes & route) == 0) continue;
      if (!accepted.empty()) accepted += ", ";
      accepted += r.name;
    }
    return f.fail(key, fmt::format("'{}' is not supported by this server; remove it from the "
                                   "request (accepted fields: {})",
                                   key, accepted));
  }
  return Status::ok();
}

// response_format: "text" (free text, what generation does anyway), "json_object" (any JSON
// object) or "json_schema" ({"json_schema": {"name": ..., "schema": {...}, "strict": ...}}: a
// value valid under the schema; engine/json_schema.h lists the keywords enforced, others are
// refused by name). The structured kinds are enforced by constrained decoding.
Status read_response_format(Fields& f, GenerationParams* p) {
  const json* v = f.get("response_format");
  if (!v) return Status::ok();
  if (!v->is_object()) return f.wrong_type("response_format", "an object", *v);
  auto type = v->find("type");
  if (type == v->end() || !type->is_string()) {
    return f.fail("response_format", "'response_format.type' must be a string");
  }
  const std::string t = type->get<std::string>();
  if (t == "text") return Status::ok();
  if (t == "json_object") {
    p->json_schema = engine::JsonSchema::any_object();
    return Status::ok();
  }
  if (t == "json_schema") {
    auto js = v->find("json_schema");
    if (js == v->end() || !js->is_object()) {
      return f.fail("response_format", "'response_format.json_schema' must be an object with a 'schema'");
    }
    auto schema = js->find("schema");
    if (schema == js->end()) {
      return f.fail("response_format", "'response_format.json_schema.schema' is missing");
    }
    auto compiled = engine::JsonSchema::compile(*schema);
    if (!compiled.is_ok()) return f.fail("response_format", compiled.status().message());
    p->json_schema = std::move(compiled).value();
    return Status::ok();
  }
  return f.fail("response_format",
                fmt::format("'response_format.type' must be 'text', 'json_object' or "
                            "'json_schema', got '{}'", t));
}

// vLLM's structured outputs: `structured_outputs` {"regex": ...} | {"choice": [...]} |
// {"json": schema} | {"grammar": ...} (and the older top-level guided_regex / guided_choice /
// guided_json / guided_grammar), and llama-server's top-level `grammar`: the whole output matches
// the regex (a full match), is one of the choices, is JSON valid under the schema, or is a text
// of the grammar. Grammars are GBNF (llama.cpp's format, engine/gbnf_grammar.h) wherever they
// come from: vLLM's own grammar fields take Lark EBNF, which is not read here. One constraint
// engine: regex and choice compile to the RegexDfa the JSON matcher also walks for `pattern`; a
// grammar runs its own matcher under the same token mask. At most one of these and
// response_format. `"grammar": ""` is no grammar (as llama-server reads it).
Status read_structured_outputs(Fields& f, GenerationParams* p) {
  struct Source {
    const char* field;
    const char* kind;
    const json* value;
  };
  std::vector<Source> given;
  if (const json* so = f.get("structured_outputs")) {
    if (!so->is_object() || so->size() != 1) {
      return f.fail("structured_outputs", "'structured_outputs' must be an object with one of "
                                          "'regex', 'choice', 'json', 'grammar'");
    }
    // so->begin() iterates the object itself: items().begin() would hand out a proxy whose
    // storage ends with the statement (ASan: stack-use-after-scope).
    const std::string& kind = so->begin().key();
    const json& value = so->begin().value();
    const char* known = nullptr;
    for (const char* k : {"regex", "choice", "json", "grammar"}) {
      if (kind == k) known = k;
    }
    if (!known) {
      return f.fail("structured_outputs", fmt::format("'structured_outputs.{}' is not supported "
                                                      "(regex, choice, json, grammar are)", kind));
    }
    given.push_back({"structured_outputs", known, &value});
  }
  for (const char* name : {"guided_regex", "guided_choice", "guided_json", "guided_grammar"}) {
    if (const json* v = f.get(name)) given.push_back({name, name + 7, v});
  }
  if (const json* v = f.get("grammar"); v && !(v->is_string() && v->get_ref<const std::string&>().empty())) {
    given.push_back({"grammar", "grammar", v});
  }
  if (given.empty()) return Status::ok();
  if (given.size() > 1 || p->json_schema) {
    return f.fail(given.back().field, "give one of response_format, structured_outputs, guided_regex, "
                                      "guided_choice, guided_json, guided_grammar and grammar");
  }
  const Source& s = given[0];
  const std::string_view kind = s.kind;
  if (kind == "regex") {
    if (!s.value->is_string()) return f.wrong_type(s.field, "a string (the regex)", *s.value);
    auto dfa = engine::RegexDfa::compile(s.value->get<std::string>(), engine::RegexDfa::Match::kFull);
    if (!dfa.is_ok()) return f.fail(s.field, dfa.status().message());
    p->json_schema = engine::JsonSchema::raw_text(std::move(dfa).value());
  } else if (kind == "choice") {
    if (!s.value->is_array()) return f.wrong_type(s.field, "a list of strings", *s.value);
    std::vector<std::string> options;
    for (const json& o : *s.value) {
      if (!o.is_string()) return f.fail(s.field, "every choice must be a string");
      options.push_back(o.get<std::string>());
    }
    auto schema = engine::JsonSchema::choice(options);
    if (!schema.is_ok()) return f.fail(s.field, schema.status().message());
    p->json_schema = std::move(schema).value();
  } else if (kind == "grammar") {
    if (!s.value->is_string()) return f.wrong_type(s.field, "a string (a GBNF grammar)", *s.value);
    auto grammar = engine::GbnfGrammar::compile(s.value->get_ref<const std::string&>());
    if (!grammar.is_ok()) return f.fail(s.field, grammar.status().message());
    p->grammar = std::move(grammar).value();
  } else {
    auto compiled = engine::JsonSchema::compile(*s.value);
    if (!compiled.is_ok()) return f.fail(s.field, compiled.status().message());
    p->json_schema = std::move(compiled).value();
  }
  return Status::ok();
}

Result<json> parse_body(std::string_view body, std::string* error_param) {
  if (error_param) error_param->clear();
  if (json_nesting_depth(body, kMaxNesting) > kMaxNesting) {
    return invalid_argument(
        fmt::format("request body nests arrays/objects deeper than {} levels", kMaxNesting));
  }
  json doc;
  try {
    doc = json::parse(body);
  } catch (const json::exception& e) {
    return invalid_argument(fmt::format("request body is not valid JSON: {}", e.what()));
  }
  if (!doc.is_object()) {
    return invalid_argument(
        fmt::format("request body must be a JSON object, got {}", type_name(doc)));
  }
  return doc;
}

// logit_bias: {"token id": bias}, ids as decimal strings (JSON keys), biases in [-100, 100].
// Whether the ids are in the model's vocabulary is the route's check (it knows the model).
Status read_logit_bias(Fields& f, engine::SamplingParams* s) {
  const json* v = f.get("logit_bias");
  if (!v) return Status::ok();
  if (!v->is_object()) return f.wrong_type("logit_bias", "an object mapping token ids to biases", *v);
  if (v->size() > kMaxLogitBias) {
    return f.fail("logit_bias", fmt::format("'logit_bias' holds at most {} entries, got {}",
                                            kMaxLogitBias, v->size()));
  }
  for (const auto& [key, bias] : v->items()) {
    int32_t id = -1;
    const char* end = key.data() + key.size();
    auto [ptr, ec] = std::from_chars(key.data(), end, id);
    if (key.empty() || ec != std::errc() || ptr != end || id < 0) {
      return f.fail("logit_bias", fmt::format("'logit_bias' keys must be token ids (non-negative "
                                              "integers written as strings), got '{}'", key));
    }
    if (!bias.is_number()) {
      return f.fail("logit_bias", fmt::format("'logit_bias' value for token {} must be a number, "
                                              "got {}", key, type_name(bias)));
    }
    const double b = bias.get<double>();
    if (!(b >= -100.0 && b <= 100.0)) {
      return f.fail("logit_bias", fmt::format("'logit_bias' value for token {} must be in "
                                              "[-100, 100], got {}", key, b));
    }
    s->logit_bias.emplace_back(id, static_cast<float>(b));
  }
  return Status::ok();
}

// Fields common to both routes.
Status read_common(Fields& f, GenerationParams* p) {
  if (const json* v = f.get("model")) {
    if (!v->is_string()) return f.wrong_type("model", "a string", *v);
    p->model = v->get<std::string>();
  }
  std::optional<int64_t> n;
  TS_RETURN_IF_ERROR(f.read_int("n", 1, 1'000'000, &n));
  if (n && *n > kMaxChoices) {
    return f.fail("n", fmt::format("'n' must be at most {}, got {}", kMaxChoices, *n));
  }
  if (n) p->n = static_cast<int32_t>(*n);
  std::optional<int64_t> best_of;
  TS_RETURN_IF_ERROR(f.read_int("best_of", 1, 1'000'000, &best_of));
  if (best_of && *best_of != 1) {
    return f.fail("best_of", fmt::format("only best_of = 1 is supported, got {}", *best_of));
  }

  // OpenAI's defaults rather than the sampler's.
  auto& s = p->sampling;
  s.temperature = 1.0f;
  s.top_p = 1.0f;
  s.top_k = 0;
  s.min_p = 0.0f;
  std::optional<double> d;
  TS_RETURN_IF_ERROR(f.read_number("temperature", 0.0, 2.0, &d));
  if (d) s.temperature = static_cast<float>(*d);
  d.reset();
  TS_RETURN_IF_ERROR(f.read_number("top_p", 0.0, 1.0, &d));
  if (d) {
    if (*d <= 0.0) return f.fail("top_p", fmt::format("'top_p' must be in (0, 1], got {}", *d));
    s.top_p = static_cast<float>(*d);
  }
  d.reset();
  TS_RETURN_IF_ERROR(f.read_number("min_p", 0.0, 1.0, &d));
  if (d) s.min_p = static_cast<float>(*d);
  d.reset();
  TS_RETURN_IF_ERROR(f.read_number("frequency_penalty", -2.0, 2.0, &d));
  if (d) s.frequency_penalty = static_cast<float>(*d);
  d.reset();
  TS_RETURN_IF_ERROR(f.read_number("presence_penalty", -2.0, 2.0, &d));
  if (d) s.presence_penalty = static_cast<float>(*d);
  d.reset();
  TS_RETURN_IF_ERROR(f.read_number("repetition_penalty", 0.01, 10.0, &d));
  if (d) s.repetition_penalty = static_cast<float>(*d);
  std::optional<int64_t> k;
  TS_RETURN_IF_ERROR(f.read_int("top_k", -1, 1'000'000, &k));
  if (k) s.top_k = static_cast<int32_t>(std::max<int64_t>(*k, 0));
  std::optional<int64_t> seed;
  TS_RETURN_IF_ERROR(f.read_int("seed", std::numeric_limits<int64_t>::min(),
                                std::numeric_limits<int64_t>::max(), &seed));
  if (seed) {
    s.seed = static_cast<uint64_t>(*seed);
  } else {
    // No seed: OpenAI samples differently each time, so do we.
    static thread_local std::mt19937_64 gen{std::random_device{}()};
    s.seed = gen();
  }

  if (const json* v = f.get("stop")) {
    std::vector<std::string> stops;
    if (v->is_string()) {
      stops.push_back(v->get<std::string>());
    } else if (v->is_array()) {
      if (v->size() > kMaxStops) {
        return f.fail("stop", fmt::format("'stop' holds at most {} strings, got {}", kMaxStops,
                                          v->size()));
      }
      for (const auto& e : *v) {
        if (!e.is_string()) return f.wrong_type("stop", "a string or an array of strings", e);
        stops.push_back(e.get<std::string>());
      }
    } else {
      return f.wrong_type("stop", "a string or an array of strings", *v);
    }
    for (auto& st : stops) {
      if (!st.empty()) p->stop.push_back(std::move(st));
    }
  }

  TS_RETURN_IF_ERROR(read_logit_bias(f, &p->sampling));
  TS_RETURN_IF_ERROR(f.read_bool("stream", &p->stream));
  TS_RETURN_IF_ERROR(read_response_format(f, p));
  TS_RETURN_IF_ERROR(read_structured_outputs(f, p));
  if (const json* v = f.get("stream_options")) {
    if (!v->is_object()) return f.wrong_type("stream_options", "an object", *v);
    Fields so(*v, nullptr);
    if (const json* iu = so.get("include_usage")) {
      if (!iu->is_boolean()) return f.wrong_type("stream_options.include_usage", "a boolean", *iu);
      p->include_usage = iu->get<bool>();
    }
  }
  TS_RETURN_IF_ERROR(f.read_bool("ignore_eos", &p->ignore_eos));
  std::optional<int64_t> priority;
  TS_RETURN_IF_ERROR(f.read_int("priority", -1000, 1000, &priority));
  if (priority) p->priority = static_cast<int32_t>(*priority);
  if (const json* v = f.get("speculative")) {
    if (v->is_boolean()) {
      p->speculative = v->get<bool>() ? engine::SpecMode::kOn : engine::SpecMode::kOff;
    } else if (v->is_string() && (*v == "on" || *v == "off")) {
      p->speculative = *v == "on" ? engine::SpecMode::kOn : engine::SpecMode::kOff;
    } else {
      return f.wrong_type("speculative", "true, false, \"on\" or \"off\"", *v);
    }
  }
  return Status::ok();
}

Status read_max_tokens(Fields& f, const char* name, GenerationParams* p) {
  std::optional<int64_t> m;
  TS_RETURN_IF_ERROR(f.read_int(name, 1, std::numeric_limits<int32_t>::max(), &m));
  if (m) p->max_tokens = static_cast<int32_t>(*m);
  return Status::ok();
}

Status read_token_array(Fields& f, const json& arr, std::vector<int32_t>* out) {
  out->reserve(arr.size());
  for (const auto& t : arr) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
        t.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return f.fail("prompt", fmt::format("'prompt' token ids must be non-negative integers, got {}",
                                          type_name(t) == "an integer" ? t.dump() : type_name(t)));
    }
    out->push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return Status::ok();
}

Status read_prompt(Fields& f, CompletionRequest* r) {
  const json* v = f.get("prompt");
  if (!v) return f.fail("prompt", "'prompt' is required");
  const json* p = v;
  // A batch of one prompt is the same as that prompt; larger batches would need n choices.
  if (p->is_array() && !p->empty() && (p->front().is_string() || p->front().is_array())) {
    if (p->size() != 1) {
      return f.fail("prompt", fmt::format("only one prompt per request is supported, got {}",
                                          p->size()));
    }
    p = &p->front();
  }
  if (p->is_string()) {
    r->prompt_text = p->get<std::string>();
    return Status::ok();
  }
  if (p->is_array()) {
    if (p->empty()) return f.fail("prompt", "'prompt' must not be an empty array");
    r->prompt_is_tokens = true;
    return read_token_array(f, *p, &r->prompt_tokens);
  }
  return f.wrong_type("prompt", "a string or an array of token ids", *p);
}

Status read_content(Fields& f, const std::string& field, const json& c, std::string* out) {
  if (c.is_null()) return Status::ok();
  if (c.is_string()) {
    *out = c.get<std::string>();
    return Status::ok();
  }
  if (!c.is_array()) return f.wrong_type(field, "a string or an array of content parts", c);
  for (size_t i = 0; i < c.size(); ++i) {
    const json& part = c[i];
    const std::string pf = fmt::format("{}[{}]", field, i);
    if (!part.is_object()) return f.wrong_type(pf, "an object", part);
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) {
      return f.fail(pf + ".type", fmt::format("'{}.type' must be a string", pf));
    }
    if (type->get<std::string>() != "text") {
      return f.fail(pf + ".type", fmt::format("only text content parts are supported, got '{}'",
                                              type->get<std::string>()));
    }
    auto text = part.find("text");
    if (text == part.end() || !text->is_string()) {
      return f.fail(pf + ".text", fmt::format("'{}.text' must be a string", pf));
    }
    *out += text->get<std::string>();
  }
  return Status::ok();
}

// An assistant turn's "tool_calls": [{"id", "type": "function", "function": {"name",
// "arguments" (JSON text, or an object)}}].
Status check_tool_calls(Fields& f, const std::string& field, const std::string& role,
                        const json& calls) {
  if (role != "assistant") {
    return f.fail(field, fmt::format("'{}' is only allowed on assistant turns", field));
  }
  if (!calls.is_array()) return f.wrong_type(field, "an array", calls);
  for (size_t k = 0; k < calls.size(); ++k) {
    const json& c = calls[k];
    const std::string cf = fmt::format("{}[{}]", field, k);
    if (!c.is_object()) return f.wrong_type(cf, "an object", c);
    if (auto type = c.find("type"); type != c.end() && *type != "function") {
      return f.fail(cf + ".type", fmt::format("'{}.type' must be 'function'", cf));
    }
    auto fn = c.find("function");
    if (fn == c.end() || !fn->is_object()) {
      return f.fail(cf + ".function", fmt::format("'{}.function' must be an object", cf));
    }
    auto name = fn->find("name");
    if (name == fn->end() || !name->is_string()) {
      return f.fail(cf + ".function.name", fmt::format("'{}.function.name' must be a string", cf));
    }
    auto args = fn->find("arguments");
    if (args != fn->end() && !args->is_string() && !args->is_object()) {
      return f.wrong_type(cf + ".function.arguments", "a string (JSON text) or an object", *args);
    }
  }
  return Status::ok();
}

bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-')) return false;
  }
  return true;
}

// "tools" (function tools only) and "tool_choice", from the key-ordered document.
Status read_tools(Fields& f, const ojson& doc, ChatRequest* r) {
  const json* v = f.get("tools");
  const json* choice = f.get("tool_choice");
  ToolRequest& t = r->tools;
  if (v) {
    if (!v->is_array()) return f.wrong_type("tools", "an array", *v);
    if (v->size() > 128) return f.fail("tools", "'tools' may declare at most 128 functions");
    for (size_t i = 0; i < v->size(); ++i) {
      const json& tool = (*v)[i];
      const std::string field = fmt::format("tools[{}]", i);
      if (!tool.is_object()) return f.wrong_type(field, "an object", tool);
      auto type = tool.find("type");
      if (type == tool.end() || *type != "function") {
        return f.fail(field + ".type", fmt::format("'{}.type' must be 'function' (the only tool "
                                                   "type supported)", field));
      }
      auto fn = tool.find("function");
      if (fn == tool.end() || !fn->is_object()) {
        return f.fail(field + ".function", fmt::format("'{}.function' must be an object", field));
      }
      auto name = fn->find("name");
      if (name == fn->end() || !name->is_string() || !valid_function_name(name->get<std::string>())) {
        return f.fail(field + ".function.name",
                      fmt::format("'{}.function.name' must be 1 to 64 of a-z, A-Z, 0-9, _ and -",
                                  field));
      }
      ToolFunction func;
      func.name = name->get<std::string>();
      if (t.find(func.name) != nullptr) {
        return f.fail(field + ".function.name",
                      fmt::format("function '{}' is declared twice", func.name));
      }
      func.parameters = ojson::object();
      if (auto params = fn->find("parameters"); params != fn->end() && !params->is_null()) {
        if (!params->is_object()) {
          return f.wrong_type(field + ".function.parameters", "an object (a JSON schema)", *params);
        }
        func.parameters = doc.at("tools").at(i).at("function").at("parameters");
      }
      t.functions.push_back(std::move(func));
    }
    t.tools = doc.at("tools");
  }
  if (!choice) {
    t.choice = t.functions.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
    return Status::ok();
  }
  if (choice->is_string()) {
    const std::string c = choice->get<std::string>();
    if (c == "none") {
      t.choice = ToolChoice::kNone;
      return Status::ok();
    }
    if (c != "auto" && c != "required") {
      return f.fail("tool_choice", fmt::format("'tool_choice' must be 'none', 'auto', 'required' "
                                               "or a function, got '{}'", c));
    }
    t.choice = c == "auto" ? ToolChoice::kAuto : ToolChoice::kRequired;
  } else if (choice->is_object()) {
    auto fn = choice->find("function");
    auto type = choice->find("type");
    if (type == choice->end() || *type != "function" || fn == choice->end() || !fn->is_object() ||
        !fn->contains("name") || !(*fn)["name"].is_string()) {
      return f.fail("tool_choice", "'tool_choice' as an object must be {\"type\": \"function\", "
                                   "\"function\": {\"name\": ...}}");
    }
    t.choice = ToolChoice::kFunction;
    t.function = (*fn)["name"].get<std::string>();
    if (!t.functions.empty() && t.find(t.function) == nullptr) {
      return f.fail("tool_choice", fmt::format("'tool_choice' names function '{}', which 'tools' "
                                               "does not declare", t.function));
    }
  } else {
    return f.wrong_type("tool_choice", "a string or an object", *choice);
  }
  if (t.functions.empty()) {
    return f.fail("tool_choice", "'tool_choice' needs 'tools' declaring at least one function");
  }
  return Status::ok();
}

Status read_messages(Fields& f, const ojson* ordered_messages, ChatRequest* r) {
  const ojson* ordered = ordered_messages;
  const json* v = f.get("messages");
  if (!v) return f.fail("messages", "'messages' is required");
  if (!v->is_array()) return f.wrong_type("messages", "an array", *v);
  if (v->empty()) return f.fail("messages", "'messages' must not be empty");
  for (size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    const std::string field = fmt::format("messages[{}]", i);
    if (!m.is_object()) return f.wrong_type(field, "an object", m);
    ChatTurn turn;
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) {
      return f.fail(field + ".role", fmt::format("'{}.role' must be a string", field));
    }
    turn.role = role->get<std::string>();
    if (turn.role != "system" && turn.role != "developer" && turn.role != "user" &&
        turn.role != "assistant" && turn.role != "tool") {
      return f.fail(field + ".role",
                    fmt::format("'{}.role' must be one of system, developer, user, assistant, "
                                "tool; got '{}'", field, turn.role));
    }
    auto content = m.find("content");
    if (content != m.end()) {
      TS_RETURN_IF_ERROR(read_content(f, field + ".content", *content, &turn.content));
    } else if (turn.role != "assistant") {
      return f.fail(field + ".content", fmt::format("'{}.content' is required", field));
    }
    if (auto name = m.find("name"); name != m.end() && !name->is_null()) {
      if (!name->is_string()) return f.wrong_type(field + ".name", "a string", *name);
      turn.name = name->get<std::string>();
    }
    if (auto id = m.find("tool_call_id"); id != m.end() && !id->is_null()) {
      if (!id->is_string()) return f.wrong_type(field + ".tool_call_id", "a string", *id);
      turn.tool_call_id = id->get<std::string>();
    }
    if (auto calls = m.find("tool_calls"); calls != m.end() && !calls->is_null()) {
      TS_RETURN_IF_ERROR(check_tool_calls(f, field + ".tool_calls", turn.role, *calls));
      if (!calls->empty()) {
        turn.tool_calls = ordered->at(i).at("tool_calls");
      }
    }
    r->messages.push_back(std::move(turn));
  }
  return Status::ok();
}

}  // namespace

int json_nesting_depth(std::string_view json_text, int limit) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : json_text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
      if (max_depth > limit) return max_depth;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

Result<CompletionRequest> parse_completion_request(std::string_view body, std::string* error_param) {
  TS_ASSIGN_OR_RETURN(json doc, parse_body(body, error_param));
  Fields f(doc, error_param);
  TS_RETURN_IF_ERROR(check_known_fields(f, doc, kCompletionOnly));
  CompletionRequest r;
  TS_RETURN_IF_ERROR(read_prompt(f, &r));
  TS_RETURN_IF_ERROR(read_common(f, &r.params));
  TS_RETURN_IF_ERROR(read_max_tokens(f, "max_tokens", &r.params));
  if (!r.params.max_tokens) r.params.max_tokens = 16;  // OpenAI's default for completions
  std::optional<int64_t> lp;
  if (const json* v = f.get("logprobs"); v && v->is_boolean()) {
    return f.wrong_type("logprobs", "an integer (the number of top alternatives, 0-20)", *v);
  }
  TS_RETURN_IF_ERROR(f.read_int("logprobs", 0, 20, &lp));
  if (lp) r.params.n_logprobs = static_cast<int32_t>(*lp);
  bool echo = false;
  TS_RETURN_IF_ERROR(f.read_bool("echo", &echo));
  if (echo) return f.fail("echo", "'echo' is not supported");
  if (const json* v = f.get("suffix")) {
    if (!v->is_string()) return f.wrong_type("suffix", "a string", *v);
    if (!v->get<std::string>().empty()) return f.fail("suffix", "'suffix' is not supported");
  }
  return r;
}

Result<ChatRequest> parse_chat_request(std::string_view body, std::string* error_param) {
  TS_ASSIGN_OR_RETURN(json doc, parse_body(body, error_param));
  Fields f(doc, error_param);
  TS_RETURN_IF_ERROR(check_known_fields(f, doc, kChatOnly));
  ChatRequest r;
  // Tools and calls are rendered by the template (tojson shows their key order): read those
  // from a key-ordered parse of the same body, made only when the body has them.
  bool keep_order = doc.contains("tools");
  if (auto m = doc.find("messages"); m != doc.end() && m->is_array()) {
    for (const json& turn : *m) keep_order |= turn.is_object() && turn.contains("tool_calls");
  }
  ojson ordered = ojson::object();
  if (keep_order) {
    ordered = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
    if (ordered.is_discarded() || !ordered.is_object()) {
      return internal_error("body parsed twice differently");
    }
  }
  const ojson* ordered_messages = ordered.contains("messages") ? &ordered["messages"] : nullptr;
  TS_RETURN_IF_ERROR(read_messages(f, ordered_messages, &r));
  TS_RETURN_IF_ERROR(read_common(f, &r.params));
  TS_RETURN_IF_ERROR(read_max_tokens(f, "max_tokens", &r.params));
  TS_RETURN_IF_ERROR(read_max_tokens(f, "max_completion_tokens", &r.params));
  bool logprobs = false;
  TS_RETURN_IF_ERROR(f.read_bool("logprobs", &logprobs));
  std::optional<int64_t> top;
  TS_RETURN_IF_ERROR(f.read_int("top_logprobs", 0, 20, &top));
  if (top && !logprobs) {
    return f.fail("top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
  }
  if (logprobs) r.params.n_logprobs = top ? static_cast<int32_t>(*top) : 0;
  TS_RETURN_IF_ERROR(read_tools(f, ordered, &r));
  if (r.tools.active() && r.tools.forced()) {
    if (r.params.json_schema || r.params.grammar) {
      return f.fail(r.params.grammar ? "grammar" : "response_format",
                    "structured output (response_format, structured_outputs, guided_*, grammar) "
                    "cannot be combined with a forced tool call (tool_choice 'required' or a "
                    "named function)");
    }
    auto schema = forced_call_schema(r.tools);
    if (!schema.is_ok()) return f.fail("tools", schema.status().message());
    r.params.json_schema = std::move(schema).value();
  }
  return r;
}

}  // namespace tessera::serve
