#include "tessera/model/format/metadata.h"

#include <fmt/format.h>

#include <limits>

namespace tessera::model {

std::string_view gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::kUint8: return "uint8";
    case GgufType::kInt8: return "int8";
    case GgufType::kUint16: return "uint16";
    case GgufType::kInt16: return "int16";
    case GgufType::kUint32: return "uint32";
    case GgufType::kInt32: return "int32";
    case GgufType::kFloat32: return "float32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kUint64: return "uint64";
    case GgufType::kInt64: return "int64";
    case GgufType::kFloat64: return "float64";
  }
  return "unknown";
}

GgufValue GgufValue::array(GgufArray a) {
  return {GgufType::kArray, std::make_shared<const GgufArray>(std::move(a))};
}

bool GgufValue::is_integer() const {
  return std::holds_alternative<uint64_t>(v_) || std::holds_alternative<int64_t>(v_);
}

Result<int64_t> GgufValue::as_int() const {
  if (const auto* u = std::get_if<uint64_t>(&v_)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return invalid_argument(fmt::format("value {} does not fit in int64", *u));
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&v_)) return *i;
  return invalid_argument(fmt::format("expected an integer, found {}", gguf_type_name(type_)));
}

Result<uint64_t> GgufValue::as_uint() const {
  if (const auto* u = std::get_if<uint64_t>(&v_)) return *u;
  if (const auto* i = std::get_if<int64_t>(&v_)) {
    if (*i < 0) return invalid_argument(fmt::format("expected a non-negative value, found {}", *i));
    return static_cast<uint64_t>(*i);
  }
  return invalid_argument(fmt::format("expected an integer, found {}", gguf_type_name(type_)));
}

Result<double> GgufValue::as_float() const {
  if (const auto* d = std::get_if<double>(&v_)) return *d;
  if (const auto* u = std::get_if<uint64_t>(&v_)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&v_)) return static_cast<double>(*i);
  return invalid_argument(fmt::format("expected a number, found {}", gguf_type_name(type_)));
}

Result<bool> GgufValue::as_bool() const {
  if (const auto* b = std::get_if<bool>(&v_)) return *b;
  return invalid_argument(fmt::format("expected a bool, found {}", gguf_type_name(type_)));
}

Result<std::string_view> GgufValue::as_string() const {
  if (const auto* s = std::get_if<std::string>(&v_)) return std::string_view(*s);
  return invalid_argument(fmt::format("expected a string, found {}", gguf_type_name(type_)));
}

Result<const GgufArray*> GgufValue::as_array() const {
  if (const auto* a = std::get_if<std::shared_ptr<const GgufArray>>(&v_)) return a->get();
  return invalid_argument(fmt::format("expected an array, found {}", gguf_type_name(type_)));
}

std::string GgufValue::to_display_string(size_t max_items) const {
  return std::visit(
      [&](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>) {
          return "<empty>";
        } else if constexpr (std::is_same_v<V, std::string>) {
          std::string s = v.size() > 80 ? v.substr(0, 77) + "..." : v;
          for (char& c : s) {
            if (c == '\n' || c == '\r' || c == '\t') c = ' ';
          }
          return "\"" + s + "\"";
        } else if constexpr (std::is_same_v<V, std::shared_ptr<const GgufArray>>) {
          std::string out = fmt::format("[{} x {}: ", v->items.size(), gguf_type_name(v->elem_type));
          for (size_t i = 0; i < v->items.size() && i < max_items; ++i) {
            if (i > 0) out += ", ";
            out += v->items[i].to_display_string(max_items);
          }
          if (v->items.size() > max_items) out += ", ...";
          return out + "]";
        } else if constexpr (std::is_same_v<V, bool>) {
          return v ? "true" : "false";
        } else {
          return fmt::format("{}", v);
        }
      },
      v_);
}

void Metadata::set(std::string key, GgufValue value) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    entries_[it->second].second = std::move(value);
    return;
  }
  index_.emplace(key, entries_.size());
  entries_.emplace_back(std::move(key), std::move(value));
}

const GgufValue* Metadata::find(std::string_view key) const {
  auto it = index_.find(std::string(key));
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

namespace {
template <typename T, typename F>
Result<T> get_with(const Metadata& m, std::string_view key, F&& convert) {
  const GgufValue* v = m.find(key);
  if (v == nullptr) return not_found(fmt::format("metadata key '{}' is missing", key));
  auto r = convert(*v);
  if (!r.is_ok()) return r.status().with_context(fmt::format("metadata key '{}'", key));
  return T(std::move(r).value());
}
}  // namespace

Result<int64_t> Metadata::get_int(std::string_view key) const {
  return get_with<int64_t>(*this, key, [](const GgufValue& v) { return v.as_int(); });
}
Result<double> Metadata::get_float(std::string_view key) const {
  return get_with<double>(*this, key, [](const GgufValue& v) { return v.as_float(); });
}
Result<bool> Metadata::get_bool(std::string_view key) const {
  return get_with<bool>(*this, key, [](const GgufValue& v) { return v.as_bool(); });
}
Result<std::string> Metadata::get_string(std::string_view key) const {
  return get_with<std::string>(*this, key, [](const GgufValue& v) { return v.as_string(); });
}
Result<const GgufArray*> Metadata::get_array(std::string_view key) const {
  return get_with<const GgufArray*>(*this, key, [](const GgufValue& v) { return v.as_array(); });
}

Result<int64_t> Metadata::get_int_or(std::string_view key, int64_t fallback) const {
  return contains(key) ? get_int(key) : Result<int64_t>(fallback);
}
Result<double> Metadata::get_float_or(std::string_view key, double fallback) const {
  return contains(key) ? get_float(key) : Result<double>(fallback);
}
Result<bool> Metadata::get_bool_or(std::string_view key, bool fallback) const {
  return contains(key) ? get_bool(key) : Result<bool>(fallback);
}
Result<std::string> Metadata::get_string_or(std::string_view key, std::string fallback) const {
  return contains(key) ? get_string(key) : Result<std::string>(std::move(fallback));
}

}  // namespace tessera::model
