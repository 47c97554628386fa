#include "tessera/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tessera/base/check.h"
#include "tessera/jinja/error.h"
#include "tessera/jinja/render_budget.h"
#include "tessera/jinja/utf8.h"

namespace tessera::jinja {

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items_) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}

Value* Dict::find(std::string_view key) {
  for (auto& [k, v] : items_) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}

const Value* Dict::find_key(const Value& key) const {
  if (key.is_string()) return find(key.as_string());
  for (const auto& [k, v] : items_) {
    if (equals(k, key)) return &v;
  }
  return nullptr;
}

void Dict::set(Value key, Value v) {
  for (auto& [k, slot] : items_) {
    if (equals(k, key)) {
      slot = std::move(v);
      return;
    }
  }
  items_.emplace_back(std::move(key), std::move(v));
}

namespace {

uint16_t child_depth(const Value& v) {
  const int d = v.depth() + 1;
  return static_cast<uint16_t>(d > 65535 ? 65535 : d);
}

// What a shared list or dict costs beyond its items: the object and shared_ptr's control block.
constexpr size_t kSharedOverhead = 64;

// Frees a list or dict and gives its bytes back to the budget that was charged for them.
struct ChargedDelete {
  RenderBudget* budget;
  size_t bytes;
  template <typename T>
  void operator()(T* p) const {
    delete p;
    if (budget != nullptr) budget->release(bytes);
  }
};

// `obj` on the heap, charged `bytes` to this thread's budget (nothing outside a render).
template <typename T>
std::shared_ptr<T> make_charged(T&& obj, size_t bytes) {
  RenderBudget* budget = RenderBudget::current();
  if (budget == nullptr) return std::make_shared<T>(std::move(obj));
  budget->charge(bytes);
  try {
    return std::shared_ptr<T>(new T(std::move(obj)), ChargedDelete{budget, bytes});
  } catch (...) {
    budget->release(bytes);
    throw;
  }
}

}  // namespace

StringRep::~StringRep() {
  if (budget != nullptr) budget->release(charged);
}

Value::Value(std::string s) {
  // A string grown by appending may hold up to twice its size: what is charged is what is held.
  if (s.capacity() > s.size() + s.size() / 8 + 64) s.shrink_to_fit();
  auto rep = std::make_shared<StringRep>(std::move(s));
  if (RenderBudget* budget = RenderBudget::current()) {
    const size_t bytes = rep->text.capacity() + sizeof(StringRep) + kSharedOverhead;
    budget->charge(bytes);  // throws before the rep records it: nothing to give back
    rep->budget = budget;
    rep->charged = bytes;
  }
  v_ = std::shared_ptr<const StringRep>(std::move(rep));
}

Value::Value(List l) {
  uint16_t depth = 1;
  bool ns = false;
  for (const Value& v : l) {
    depth = std::max(depth, child_depth(v));
    ns = ns || v.holds_namespace_;
  }
  const size_t bytes = l.capacity() * sizeof(Value) + kSharedOverhead;
  v_ = make_charged(std::move(l), bytes);
  depth_ = depth;
  holds_namespace_ = ns;
}

Value::Value(Dict d) {
  uint16_t depth = 1;
  bool ns = d.is_namespace;
  for (const auto& [k, v] : d.items()) {
    depth = std::max(depth, child_depth(v));
    ns = ns || v.holds_namespace_;
  }
  const size_t bytes = d.size() * sizeof(std::pair<Value, Value>) + kSharedOverhead;
  v_ = make_charged(std::move(d), bytes);
  depth_ = depth;
  holds_namespace_ = ns;
}

bool Value::as_bool() const {
  TS_CHECK(is_bool());
  return std::get<bool>(v_);
}
int64_t Value::as_int() const {
  if (is_bool()) return std::get<bool>(v_) ? 1 : 0;
  TS_CHECK(is_int());
  return std::get<int64_t>(v_);
}
double Value::as_double() const {
  if (is_float()) return std::get<double>(v_);
  return static_cast<double>(as_int());
}
const std::string& Value::as_string() const {
  TS_CHECK(is_string());
  return std::get<std::shared_ptr<const StringRep>>(v_)->text;
}
int64_t Value::n_chars() const {
  TS_CHECK(is_string());
  const StringRep& rep = *std::get<std::shared_ptr<const StringRep>>(v_);
  int64_t n = rep.n_chars.load(std::memory_order_relaxed);
  if (n < 0) {
    note_work(rep.text.size());
    n = utf8_count(rep.text);
    rep.n_chars.store(n, std::memory_order_relaxed);
  }
  return n;
}
List& Value::as_list() const {
  TS_CHECK(is_list());
  return *std::get<std::shared_ptr<List>>(v_);
}
Dict& Value::as_dict() const {
  TS_CHECK(is_dict());
  return *std::get<std::shared_ptr<Dict>>(v_);
}
const Function& Value::as_function() const {
  TS_CHECK(is_function());
  return *std::get<std::shared_ptr<Function>>(v_);
}
const std::string& Value::undefined_name() const {
  TS_CHECK(is_undefined());
  return std::get<Undefined>(v_).name;
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kFloat:
      return as_double() != 0.0;
    case Kind::kString:
      return !as_string().empty();
    case Kind::kList:
      return generator_ || !as_list().empty();
    case Kind::kDict:
      return as_dict().size() != 0;
    case Kind::kFunction:
      return true;
  }
  return false;
}

std::string_view Value::type_name() const {
  switch (kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return generator_ ? "generator" : tuple_ ? "tuple" : "list";
    case Kind::kDict: return as_dict().is_namespace ? "Namespace" : "dict";
    case Kind::kFunction: return "function";
  }
  return "?";
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: positional for exponents in [-4, 16).
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  const size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  const int exp = std::atoi(sci.c_str() + e + 1);
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits.push_back(c);
  }
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exp) + 1) + "." +
             digits.substr(static_cast<size_t>(exp) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + ebuf;
}

namespace {

// Python's repr() of a str: single quotes unless the text has a ' and no ", then double quotes.
std::string python_string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(q) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back(q);
  return out;
}

void json_string(const std::string& s, std::string& out) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

struct JsonWriter {
  int indent;
  std::string item_sep;
  std::string key_sep;
  std::string out;

  void newline(int level) {
    if (indent < 0) return;
    out.push_back('\n');
    out.append(static_cast<size_t>(indent) * static_cast<size_t>(level), ' ');
  }

  void write(const Value& v, int level) {
    check_value_size(out.size());  // a list holding one big string many times
    if (level > kMaxValueDepth) {
      throw Error(ErrorKind::kLimit,
                  "tojson: nesting deeper than " + std::to_string(kMaxValueDepth) + " levels");
    }
    switch (v.kind()) {
      case Value::Kind::kUndefined:
        throw_runtime("tojson: Object of type Undefined is not JSON serializable");
      case Value::Kind::kFunction:
        throw_runtime("tojson: a function is not JSON serializable");
      case Value::Kind::kNone: out += "null"; return;
      case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::kInt: out += std::to_string(v.as_int()); return;
      case Value::Kind::kFloat: {
        const double d = v.as_double();
        out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity")
                                                      : python_float_repr(d);
        return;
      }
      case Value::Kind::kString: json_string(v.as_string(), out); return;
      case Value::Kind::kList: {
        if (v.is_generator()) throw_runtime("tojson: Object of type generator is not JSON serializable");
        const List& l = v.as_list();
        if (l.empty()) {
          out += "[]";
          return;
        }
        out.push_back('[');
        for (size_t i = 0; i < l.size(); ++i) {
          if (i > 0) out += item_sep;
          newline(level + 1);
          write(l[i], level + 1);
        }
        newline(level);
        out.push_back(']');
        return;
      }
      case Value::Kind::kDict: {
        const Dict& d = v.as_dict();
        if (d.size() == 0) {
          out += "{}";
          return;
        }
        out.push_back('{');
        bool first = true;
        for (const auto& [k, item] : d.items()) {
          if (!first) out += item_sep;
          first = false;
          newline(level + 1);
          // json.dumps writes scalar keys as strings: 1 -> "1", True -> "true", None -> "null".
          if (k.is_string()) {
            json_string(k.as_string(), out);
          } else {
            JsonWriter kw{-1, "", "", {}};
            kw.write(k, level + 1);
            json_string(kw.out, out);
          }
          out += key_sep;
          write(item, level + 1);
        }
        newline(level);
        out.push_back('}');
        return;
      }
    }
  }
};

}  // namespace

std::string Value::str() const {
  switch (kind()) {
    case Kind::kUndefined: return "";
    case Kind::kString: return as_string();
    default: return repr();
  }
}

namespace {

// Counts the recursion of repr() and equals() on this thread; throws kLimit past kMaxValueDepth.
struct RecursionGuard {
  RecursionGuard() {
    if (++depth() > kMaxValueDepth) {
      --depth();
      throw Error(ErrorKind::kLimit,
                  "a value nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
    }
  }
  ~RecursionGuard() { --depth(); }
  static int& depth() {
    thread_local int d = 0;
    return d;
  }
};

}  // namespace

std::string Value::repr() const {
  const RecursionGuard guard;
  switch (kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "None";
    case Kind::kBool: return as_bool() ? "True" : "False";
    case Kind::kInt: return std::to_string(as_int());
    case Kind::kFloat: return python_float_repr(as_double());
    case Kind::kString: return python_string_repr(as_string());
    case Kind::kList: {
      if (generator_) return "<generator object>";
      std::string out = tuple_ ? "(" : "[";
      const List& l = as_list();
      for (size_t i = 0; i < l.size(); ++i) {
        if (i > 0) out += ", ";
        out += l[i].repr();
        check_value_size(out.size());
      }
      if (tuple_) return out + (l.size() == 1 ? ",)" : ")");
      return out + "]";
    }
    case Kind::kDict: {
      const Dict& d = as_dict();
      std::string out = d.is_namespace ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, v] : d.items()) {
        if (!first) out += ", ";
        first = false;
        out += k.repr() + ": " + v.repr();
        check_value_size(out.size());
      }
      return out + (d.is_namespace ? "}>" : "}");
    }
    case Kind::kFunction: return "<function>";
  }
  return "";
}

bool equals(const Value& a, const Value& b) {
  const RecursionGuard guard;
  note_work(1);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind() || a.is_tuple() != b.is_tuple()) return false;  // (1,) != [1]
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      if (&a.as_string() == &b.as_string()) return true;  // one shared string
      note_work(std::min(a.as_string().size(), b.as_string().size()));
      return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      const List& x = a.as_list();
      const List& y = b.as_list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!equals(x[i], y[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.items()) {
        const Value* o = y.find_key(k);
        if (o == nullptr || !equals(v, *o)) return false;
      }
      return true;
    }
    case Value::Kind::kFunction:
      return &a.as_function() == &b.as_function();
    default:
      return false;
  }
}

std::string to_json(const Value& v, int indent, std::optional<std::string> item_sep,
                    std::optional<std::string> key_sep) {
  JsonWriter w{indent, item_sep.value_or(indent < 0 ? ", " : ","), key_sep.value_or(": "), {}};
  w.write(v, 0);
  return std::move(w.out);
}

}  // namespace tessera::jinja
