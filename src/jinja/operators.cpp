#include "tessera/jinja/operators.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tessera/jinja/error.h"
#include "tessera/jinja/utf8.h"

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

void check_size(size_t n) { check_value_size(n); }

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
    // By doubling: log(n) copies however short the unit ('a' * 5000000 is 23, not 5,000,000).
    const size_t total = seq.as_string().size() * static_cast<size_t>(n);
    std::string out;
    out.reserve(total);
    if (total > 0) out = seq.as_string();
    while (out.size() < total) out.append(out.data(), std::min(out.size(), total - out.size()));
    note_work(total);
    return Value(std::move(out));
  }
  check_size(seq.as_list().size() * static_cast<size_t>(n) * sizeof(Value));
  List out;
  out.reserve(seq.as_list().size() * static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
    note_work(seq.as_list().size() + 1);
  }
  return Value(std::move(out));
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
  size_t n = s.size();
  for (char c : s) n += c == '&' || c == '"' || c == '\'' ? 4 : c == '<' || c == '>' ? 3 : 0;
  check_size(n);
  std::string out;
  out.reserve(n);
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

size_t find_text(std::string_view hay, std::string_view needle, size_t pos) {
  if (pos > hay.size()) return std::string_view::npos;
  if (needle.empty()) return pos;
  if (needle.size() > hay.size() - pos) return std::string_view::npos;
  const size_t last = hay.size() - needle.size();  // the last start that fits
  for (size_t i = pos; i <= last;) {
    const void* hit = std::memchr(hay.data() + i, needle[0], last - i + 1);
    if (hit == nullptr) {
      note_work(last - i + 1);
      return std::string_view::npos;
    }
    const auto at = static_cast<size_t>(static_cast<const char*>(hit) - hay.data());
    note_work(at - i + needle.size());
    if (std::memcmp(hay.data() + at + 1, needle.data() + 1, needle.size() - 1) == 0) return at;
    i = at + 1;
  }
  return std::string_view::npos;
}

size_t rfind_text(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return std::string_view::npos;
  if (needle.empty()) return hay.size();
  for (size_t end = hay.size() - needle.size() + 1; end > 0;) {  // candidates start below `end`
    const void* hit = memrchr(hay.data(), needle[0], end);
    if (hit == nullptr) {
      note_work(end);
      return std::string_view::npos;
    }
    const auto at = static_cast<size_t>(static_cast<const char*>(hit) - hay.data());
    note_work(end - at + needle.size());
    if (std::memcmp(hay.data() + at + 1, needle.data() + 1, needle.size() - 1) == 0) return at;
    end = at;
  }
  return std::string_view::npos;
}

bool less_than(const Value& a, const Value& b) {
  note_work(1);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) {
    note_work(std::min(a.as_string().size(), b.as_string().size()));
    return a.as_string() < b.as_string();
  }
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
      return find_text(haystack.as_string(), needle.as_string()) != std::string_view::npos;
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
    // Strings are appended from where they are: no copy of either side first.
    std::string sa = a.is_string() ? std::string() : a.str();
    std::string sb = b.is_string() ? std::string() : b.str();
    const std::string& x = a.is_string() ? a.as_string() : sa;
    const std::string& y = b.is_string() ? b.as_string() : sb;
    check_size(x.size() + y.size());
    std::string s;
    s.reserve(x.size() + y.size());
    s.append(x).append(y);
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
      check_size((a.as_list().size() + b.as_list().size()) * sizeof(Value));
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
      const std::string& s = obj.as_string();
      const int64_t n = obj.n_chars();
      const int64_t i = normalize_index(key.as_int(), n);
      if (i < 0 || i >= n) return Value::undefined("[index]");
      // All ASCII (as many code points as bytes): the byte at i. Else walk to it.
      size_t at = static_cast<size_t>(i);
      if (n != static_cast<int64_t>(s.size())) {
        note_work(s.size());
        at = utf8_offset(s, i, n);
      }
      return Value(std::string_view(s).substr(at, utf8_char_len(s, at)));
    }
    default:
      return Value::undefined(key.str());
  }
}

Value slice(const Value& obj, std::optional<int64_t> start, std::optional<int64_t> stop,
            std::optional<int64_t> step_opt) {
  const int64_t step = step_opt.value_or(1);
  if (step == 0) throw_runtime("slice step cannot be zero");
  const bool is_str = obj.is_string();
  if (!is_str && !obj.is_list()) {
    throw_runtime("'" + std::string(obj.type_name()) + "' object is not subscriptable");
  }
  const int64_t n = is_str ? obj.n_chars() : static_cast<int64_t>(obj.as_list().size());
  const std::string_view text = is_str ? std::string_view(obj.as_string()) : std::string_view();
  const bool ascii = is_str && n == static_cast<int64_t>(text.size());
  if (is_str && !ascii) note_work(text.size());
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
  if (is_str) {
    // Code points are walked in place (ASCII: a byte each), never split into pieces first.
    auto advance = [&](size_t at, int64_t k) {  // k code points forward from byte `at`
      if (ascii) return at + static_cast<size_t>(std::min<int64_t>(k, static_cast<int64_t>(text.size() - at)));
      return utf8_advance(text, at, k);
    };
    auto retreat = [&](size_t at, int64_t k) {  // k code points back from byte `at`
      if (ascii) return at >= static_cast<size_t>(k) ? at - static_cast<size_t>(k) : size_t{0};
      for (; k > 0 && at > 0; --k) at = utf8_char_start_before(text, at);
      return at;
    };
    if (step > 0 ? lo >= hi : lo <= hi) return Value(std::string());
    size_t at = ascii ? static_cast<size_t>(lo) : utf8_offset(text, lo, n);
    if (step == 1) return Value(text.substr(at, advance(at, hi - lo) - at));
    for (int64_t i = lo; step > 0 ? i < hi : i > hi;) {
      s += text.substr(at, utf8_char_len(text, at));
      int64_t next = 0;
      if (__builtin_add_overflow(i, step, &next)) break;
      if (step > 0 ? next >= hi : next <= hi) break;
      at = step > 0 ? advance(at, step) : retreat(at, -step);
      i = next;
    }
    return Value(std::move(s));
  }
  for (int64_t i = lo; step > 0 ? i < hi : i > hi;) {
    l.push_back(obj.as_list()[static_cast<size_t>(i)]);
    if (__builtin_add_overflow(i, step, &i)) break;  // a huge step: past either end
  }
  return Value(std::move(l));
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
      // One value per code point: each is charged as it is built, so a long string fails
      // against the budget instead of exhausting memory.
      const std::string& s = v.as_string();
      List out;
      for (size_t i = 0; i < s.size();) {
        const size_t n = utf8_char_len(s, i);
        out.emplace_back(std::string_view(s).substr(i, n));
        i += n;
      }
      return out;
    }
    default:
      throw_runtime("'" + std::string(v.type_name()) + "' object is not iterable");
  }
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: return v.n_chars();
    case Value::Kind::kList:
      if (v.is_generator()) throw_runtime("object of type 'generator' has no len()");
      return static_cast<int64_t>(v.as_list().size());
    case Value::Kind::kDict: return static_cast<int64_t>(v.as_dict().size());
    default:
      throw_runtime("object of type '" + std::string(v.type_name()) + "' has no len()");
  }
}

}  // namespace tessera::jinja
