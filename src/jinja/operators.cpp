#include "tessera/jinja/operators.h"

#include <algorithm>
#include <cmath>

#include "tessera/jinja/error.h"

namespace tessera::jinja {
namespace {

[[noreturn]] void bad_operands(std::string_view op, const Value& a, const Value& b) {
  if (a.is_undefined() || b.is_undefined()) {
    const Value& u = a.is_undefined() ? a : b;
    throw_runtime("'" + u.undefined_name() + "' is undefined");
  }
  throw_runtime("unsupported operand type(s) for " + std::string(op) + ": '" +
                std::string(a.type_name()) + "' and '" + std::string(b.type_name()) + "'");
}

void check_size(size_t n) {
  if (n > kMaxValueBytes) {
    throw Error(ErrorKind::kLimit, "a value past " + std::to_string(kMaxValueBytes) + " bytes");
  }
}

[[noreturn]] void overflow() {
  throw_unsupported("integer arithmetic past 64 bits (Python's big integers) is not supported");
}

int64_t add(int64_t x, int64_t y) {
  int64_t r = 0;
  if (__builtin_add_overflow(x, y, &r)) overflow();
  return r;
}
int64_t sub(int64_t x, int64_t y) {
  int64_t r = 0;
  if (__builtin_sub_overflow(x, y, &r)) overflow();
  return r;
}
int64_t mul(int64_t x, int64_t y) {
  int64_t r = 0;
  if (__builtin_mul_overflow(x, y, &r)) overflow();
  return r;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) overflow();
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Value arithmetic(std::string_view op, const Value& a, const Value& b) {
  if (!a.is_number() || !b.is_number()) bad_operands(op, a, b);
  const bool ints = !a.is_float() && !b.is_float();
  if (op == "/") {
    if (b.as_double() == 0) throw_runtime("division by zero");
    return Value(a.as_double() / b.as_double());
  }
  if (ints) {
    const int64_t x = a.as_int();
    const int64_t y = b.as_int();
    if (op == "+") return Value(add(x, y));
    if (op == "-") return Value(sub(x, y));
    if (op == "*") return Value(mul(x, y));
    if (op == "//" || op == "%") {
      if (y == 0) throw_runtime("integer division or modulo by zero");
      const int64_t q = floor_div(x, y);
      return op == "//" ? Value(q) : Value(x - q * y);
    }
    if (op == "**") {
      if (y < 0) return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
      // 0, 1 and -1 stay bounded; any other base overflows within 64 multiplications.
      int64_t r = 1;
      if (x == 0) {
        r = y == 0 ? 1 : 0;
      } else if (x == 1 || x == -1) {
        r = (x == -1 && y % 2 == 1) ? -1 : 1;
      } else {
        for (int64_t i = 0; i < y; ++i) r = mul(r, x);
      }
      return Value(r);
    }
  }
  const double x = a.as_double();
  const double y = b.as_double();
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "//" || op == "%") {
    if (y == 0) throw_runtime("float division or modulo by zero");
    const double q = std::floor(x / y);
    return op == "//" ? Value(q) : Value(x - q * y);
  }
  if (op == "**") return Value(std::pow(x, y));
  bad_operands(op, a, b);
}

Value repeat(const Value& seq, const Value& count) {
  const int64_t n = std::max<int64_t>(0, count.as_int());
  const size_t unit = seq.is_string() ? seq.as_string().size() : seq.as_list().size() * sizeof(Value);
  if (unit > 0 && static_cast<uint64_t>(n) > kMaxValueBytes / unit) check_size(kMaxValueBytes + 1);
  if (seq.is_string()) {
    check_size(seq.as_string().size() * static_cast<size_t>(n));
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value(std::move(out));
  }
  check_size(seq.as_list().size() * static_cast<size_t>(n) * sizeof(Value));
  List out;
  for (int64_t i = 0; i < n; ++i) {
    out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
  }
  return Value(std::move(out));
}

size_t utf8_len(unsigned char b0) {
  return b0 < 0x80 ? 1 : (b0 >> 5) == 0x06 ? 2 : (b0 >> 4) == 0x0e ? 3 : (b0 >> 3) == 0x1e ? 4 : 1;
}

int64_t normalize_index(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

}  // namespace

int64_t int_arg(const Value& v, std::string_view what) {
  if (v.is_int() || v.is_bool()) return v.as_int();
  throw_runtime(std::string(what) + " expects an integer, got " + std::string(v.type_name()));
}

int64_t float_to_int(double d) {
  // 2^63 is exact in a double; anything in [-2^63, 2^63) truncates into int64.
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) overflow();
  return static_cast<int64_t>(d);
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::vector<std::string> utf8_chars(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_len(static_cast<unsigned char>(s[i]));
    if (i + n > s.size()) n = 1;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) n = 1;
    }
    out.emplace_back(s.substr(i, n));
    i += n;
  }
  return out;
}

bool less_than(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list()) {
    if (a.depth() > kMaxValueDepth || b.depth() > kMaxValueDepth) {
      throw Error(ErrorKind::kLimit, "comparing lists nested too deep");
    }
    const List& x = a.as_list();
    const List& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return less_than(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  throw_runtime("'<' not supported between instances of '" + std::string(a.type_name()) +
                "' and '" + std::string(b.type_name()) + "'");
}

bool contains(const Value& haystack, const Value& needle) {
  switch (haystack.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!needle.is_string()) {
        throw_runtime("'in <string>' requires string as left operand, not " +
                      std::string(needle.type_name()));
      }
      return haystack.as_string().find(needle.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : haystack.as_list()) {
        if (equals(v, needle)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return haystack.as_dict().find_key(needle) != nullptr;
    default:
      throw_runtime("argument of type '" + std::string(haystack.type_name()) +
                    "' is not iterable");
  }
}

Value binary_op(std::string_view op, const Value& a, const Value& b) {
  if (op == "==") return Value(equals(a, b));
  if (op == "!=") return Value(!equals(a, b));
  if (op == "<") return Value(less_than(a, b));
  if (op == ">") return Value(less_than(b, a));
  if (op == "<=") return Value(!less_than(b, a));
  if (op == ">=") return Value(!less_than(a, b));
  if (op == "in") return Value(contains(b, a));
  if (op == "not in") return Value(!contains(b, a));
  if (op == "~") {
    std::string s = a.str() + b.str();
    check_size(s.size());
    return Value(std::move(s));
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      check_size(a.as_string().size() + b.as_string().size());
      if (a.is_safe() || b.is_safe()) {  // Markup.__add__ / __radd__ escape the plain side
        return Value::markup((a.is_safe() ? a.as_string() : html_escape(a.as_string())) +
                             (b.is_safe() ? b.as_string() : html_escape(b.as_string())));
      }
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list()) {
      List out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return Value(std::move(out));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b);
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a);
  }
  if (op == "%" && a.is_string()) {
    throw_unsupported("printf-style string formatting ('...' % value) is not supported");
  }
  return arithmetic(op, a, b);
}

Value get_attr(const Value& obj, std::string_view name) {
  if (obj.is_undefined()) {
    throw_runtime("'" + obj.undefined_name() + "' is undefined (reading its attribute '" +
                  std::string(name) + "')");
  }
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(name)) return *v;
  }
  return Value::undefined(std::string(name));
}

Value get_item(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Value::Kind::kUndefined:
      throw_runtime("'" + obj.undefined_name() + "' is undefined (indexing it)");
    case Value::Kind::kDict:
      if (const Value* v = obj.as_dict().find_key(key)) return *v;
      return Value::undefined(key.str());
    case Value::Kind::kList: {
      if (obj.is_generator()) throw_runtime("'generator' object is not subscriptable");
      if (!key.is_int() && !key.is_bool()) {
        if (key.is_string()) return Value::undefined(key.as_string());
        throw_runtime("list indices must be integers, not " + std::string(key.type_name()));
      }
      const List& l = obj.as_list();
      const int64_t i = normalize_index(key.as_int(), static_cast<int64_t>(l.size()));
      if (i < 0 || i >= static_cast<int64_t>(l.size())) return Value::undefined("[index]");
      return l[static_cast<size_t>(i)];
    }
    case Value::Kind::kString: {
      if (!key.is_int()) return Value::undefined(key.str());
      const auto chars = utf8_chars(obj.as_string());
      const int64_t i = normalize_index(key.as_int(), static_cast<int64_t>(chars.size()));
      if (i < 0 || i >= static_cast<int64_t>(chars.size())) return Value::undefined("[index]");
      return Value(chars[static_cast<size_t>(i)]);
    }
    default:
      return Value::undefined(key.str());
  }
}

Value slice(const Value& obj, std::optional<int64_t> start, std::optional<int64_t> stop,
            std::optional<int64_t> step_opt) {
  const int64_t step = step_opt.value_or(1);
  if (step == 0) throw_runtime("slice step cannot be zero");
  std::vector<std::string> chars;
  const bool is_str = obj.is_string();
  if (is_str) {
    chars = utf8_chars(obj.as_string());
  } else if (!obj.is_list()) {
    throw_runtime("'" + std::string(obj.type_name()) + "' object is not subscriptable");
  }
  const int64_t n = is_str ? static_cast<int64_t>(chars.size())
                           : static_cast<int64_t>(obj.as_list().size());
  // Python's slice.indices().
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t i = *v < 0 ? *v + n : *v;
    if (step > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t lo = clamp(start, step > 0 ? 0 : n - 1);
  const int64_t hi = clamp(stop, step > 0 ? n : -1);
  std::string s;
  List l;
  for (int64_t i = lo; step > 0 ? i < hi : i > hi;) {
    if (is_str) {
      s += chars[static_cast<size_t>(i)];
    } else {
      l.push_back(obj.as_list()[static_cast<size_t>(i)]);
    }
    if (__builtin_add_overflow(i, step, &i)) break;  // a huge step: past either end
  }
  return is_str ? Value(std::move(s)) : Value(std::move(l));
}

List iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList:
      if (v.is_generator()) {  // a generator is consumed by iterating it
        List items = std::move(v.as_list());
        v.as_list().clear();
        return items;
      }
      return v.as_list();
    case Value::Kind::kDict: {
      List keys;
      for (const auto& [k, item] : v.as_dict().items()) keys.push_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      List out;
      for (auto& c : utf8_chars(v.as_string())) out.emplace_back(std::move(c));
      return out;
    }
    default:
      throw_runtime("'" + std::string(v.type_name()) + "' object is not iterable");
  }
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: return static_cast<int64_t>(utf8_chars(v.as_string()).size());
    case Value::Kind::kList:
      if (v.is_generator()) throw_runtime("object of type 'generator' has no len()");
      return static_cast<int64_t>(v.as_list().size());
    case Value::Kind::kDict: return static_cast<int64_t>(v.as_dict().size());
    default:
      throw_runtime("object of type '" + std::string(v.type_name()) + "' has no len()");
  }
}

}  // namespace tessera::jinja
