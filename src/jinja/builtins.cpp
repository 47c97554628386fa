#include "tessera/jinja/builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "tessera/jinja/error.h"
#include "tessera/jinja/operators.h"
#include "tessera/jinja/utf8.h"

namespace tessera::jinja {
namespace {

// Argument `index` (positional) or `name` (keyword) of a call, or `dflt`.
Value arg(const CallArgs& a, size_t index, std::string_view name, Value dflt = Value()) {
  if (index < a.positional.size()) return a.positional[index];
  for (const auto& [k, v] : a.keyword) {
    if (k == name) return v;
  }
  return dflt;
}

std::string expect_string(const Value& v, std::string_view what) {
  if (!v.is_string()) {
    if (v.is_undefined()) throw_runtime(std::string(what) + ": '" + v.undefined_name() + "' is undefined");
    throw_runtime(std::string(what) + " expects a string, got " + std::string(v.type_name()));
  }
  return v.as_string();
}

bool is_python_space(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
  switch (c) {
    case 0x85: case 0xa0: case 0x1680: case 0x2028: case 0x2029: case 0x202f: case 0x205f:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200a;
  }
}

// Whether the code point at s[i] is whitespace (a malformed byte never is).
bool space_at(std::string_view s, size_t i) { return is_python_space(utf8_decode(s, i)); }

std::string ascii_upper(std::string s) {
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return s;
}
std::string ascii_lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Python's str.title(): a letter after a non-letter is upper-cased, other letters lower-cased.
std::string python_title(const std::string& s) {
  std::string out = s;
  bool prev_alpha = false;
  for (char& c : out) {
    if (is_alpha(c)) {
      c = prev_alpha ? static_cast<char>(ascii_lower(std::string(1, c))[0])
                     : static_cast<char>(ascii_upper(std::string(1, c))[0]);
      prev_alpha = true;
    } else {
      prev_alpha = (static_cast<unsigned char>(c) & 0x80) != 0 && prev_alpha;
    }
  }
  return out;
}

// jinja2's `title` filter: capitalizes each word, words split at whitespace and -({[<.
std::string jinja_title(const std::string& s) {
  std::string out;
  bool word_start = true;
  for (char c : s) {
    const bool sep = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' ||
                     c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      out.push_back(c);
      word_start = true;
    } else {
      out += word_start ? ascii_upper(std::string(1, c)) : ascii_lower(std::string(1, c));
      word_start = false;
    }
  }
  return out;
}

std::string capitalize(const std::string& s) {
  if (s.empty()) return s;
  return ascii_upper(s.substr(0, 1)) + ascii_lower(s.substr(1));
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to,
                        int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` between every character (and at both ends).
    int64_t n = 0;
    for (size_t i = 0; i < s.size();) {
      if (count < 0 || n < count) {
        out += to;
        ++n;
        check_value_size(out.size());
      }
      const size_t len = utf8_char_len(s, i);
      out.append(s, i, len);
      i += len;
    }
    if (count < 0 || n < count) out += to;
    check_value_size(out.size());
    return out;
  }
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    const size_t hit = find_text(s, from, pos);
    if (hit == std::string::npos) break;
    check_value_size(out.size() + (hit - pos) + to.size());
    out.append(s, pos, hit - pos);
    out += to;
    pos = hit + from.size();
    ++n;
  }
  check_value_size(out.size() + (s.size() - pos));
  out.append(s, pos);
  return out;
}

List python_split(const std::string& s, const Value& sep_v, int64_t maxsplit) {
  List out;
  if (sep_v.is_none() || sep_v.is_undefined()) {
    note_work(s.size());
    size_t i = 0;
    int64_t n = 0;
    while (true) {
      while (i < s.size() && space_at(s, i)) i += utf8_char_len(s, i);
      if (i >= s.size()) break;
      if (maxsplit >= 0 && n >= maxsplit) {
        // The rest, with trailing whitespace stripped.
        out.emplace_back(python_strip(std::string_view(s).substr(i), Value::none(), false, true));
        break;
      }
      const size_t start = i;
      while (i < s.size() && !space_at(s, i)) i += utf8_char_len(s, i);
      out.emplace_back(std::string_view(s).substr(start, i - start));
      ++n;
    }
    return out;
  }
  const std::string sep = expect_string(sep_v, "split");
  if (sep.empty()) throw_runtime("split: empty separator");
  size_t pos = 0;
  int64_t n = 0;
  while (maxsplit < 0 || n < maxsplit) {
    const size_t hit = find_text(s, sep, pos);
    if (hit == std::string::npos) break;
    out.emplace_back(std::string_view(s).substr(pos, hit - pos));
    pos = hit + sep.size();
    ++n;
  }
  out.emplace_back(s.substr(pos));
  return out;
}

std::string join(const Value& seq, const std::string& sep, const Value& attribute) {
  std::string out;
  bool first = true;
  for (const Value& v : iterate(seq)) {
    if (!first) out += sep;
    first = false;
    const Value& piece = attribute.is_undefined() ? v : get_attr(v, attribute.str());
    if (piece.is_string()) {  // appended without an intermediate copy
      check_value_size(out.size() + piece.as_string().size());
      out += piece.as_string();
    } else {
      out += piece.str();
    }
    check_value_size(out.size());
  }
  return out;
}

// The attribute named by a dotted path ("function.name"), as jinja2's make_attrgetter reads it.
Value attr_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (cur.is_undefined()) return cur;
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    cur = numeric && cur.is_list() ? get_item(cur, Value(static_cast<int64_t>(std::atoll(part.c_str()))))
                                   : get_attr(cur, part);
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

// Case-insensitive sort key for strings (jinja2's default for sort, dictsort and unique).
Value fold_case(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value(ascii_lower(v.as_string())) : v;
}

CallArgs tail_args(const CallArgs& a, size_t from) {
  CallArgs out;
  for (size_t i = from; i < a.positional.size(); ++i) out.positional.push_back(a.positional[i]);
  out.keyword = a.keyword;
  return out;
}

List select_items(const Value& seq, const CallArgs& a, bool by_attr, bool keep_when) {
  List out;
  if (!seq.truthy()) return out;  // jinja2 walks the sequence only `if value`
  const std::string attr = by_attr ? expect_string(arg(a, 0, ""), "selectattr") : "";
  const size_t test_pos = by_attr ? 1 : 0;
  const bool has_test = a.positional.size() > test_pos;
  const std::string test = has_test ? expect_string(a.positional[test_pos], "select") : "";
  CallArgs test_args = tail_args(a, test_pos + 1);
  for (const Value& item : iterate(seq)) {
    const Value subject = by_attr ? attr_path(item, attr) : item;
    const bool ok = has_test ? apply_test(test, subject, test_args) : subject.truthy();
    if (ok == keep_when) out.push_back(item);
  }
  return out;
}

Value indent(const std::string& s, const CallArgs& a) {
  const Value w = arg(a, 0, "width", Value(4));
  const int64_t width = w.is_string() ? 0 : std::clamp<int64_t>(int_arg(w, "indent"), 0, 4096);
  const std::string pad = w.is_string() ? w.as_string() : std::string(static_cast<size_t>(width), ' ');
  const bool first = arg(a, 1, "first", Value(false)).truthy();
  const bool blank = arg(a, 2, "blank", Value(false)).truthy();
  // jinja2 splits with str.splitlines() semantics on "\n" and re-joins with "\n". Two passes
  // over the lines in place: the size first (checked before anything is built), then the text.
  const std::string_view text(s);
  auto for_each_line = [&](auto&& fn) {
    size_t pos = 0;
    for (size_t i = 0;; ++i) {
      const size_t nl = text.find('\n', pos);
      const std::string_view line = text.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
      fn(i, line, (i > 0 || first) && (blank || !line.empty()));
      if (nl == std::string_view::npos) return;
      pos = nl + 1;
    }
  };
  size_t n = 0;
  for_each_line([&](size_t i, std::string_view line, bool pad_this) {
    n += (i > 0 ? 1 : 0) + (pad_this ? pad.size() : 0) + line.size();
  });
  note_work(text.size());
  check_value_size(n);
  std::string out;
  out.reserve(n);
  for_each_line([&](size_t i, std::string_view line, bool pad_this) {
    if (i > 0) out += "\n";
    if (pad_this) out += pad;
    out += line;
  });
  return Value(std::move(out));
}

Value tojson(const Value& v, const CallArgs& a) {
  const Value ind = arg(a, 1, "indent", Value::none());
  const Value seps = arg(a, 2, "separators", Value::none());
  if (arg(a, 0, "ensure_ascii", Value(false)).truthy()) {
    throw_unsupported("tojson(ensure_ascii=true) is not supported");
  }
  if (arg(a, 3, "sort_keys", Value(false)).truthy()) {
    throw_unsupported("tojson(sort_keys=true) is not supported");
  }
  // HF's tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False); jinja2's
  // own filter takes indent first, so a lone positional int is read as the indent.
  Value indent_v = ind;
  if (a.positional.size() == 1 && a.positional[0].is_int()) indent_v = a.positional[0];
  const int indent_n = indent_v.is_none() || indent_v.is_undefined()
                           ? -1
                           : static_cast<int>(std::clamp<int64_t>(int_arg(indent_v, "tojson indent"), 0, 64));
  std::optional<std::string> item_sep;
  std::optional<std::string> key_sep;
  if (seps.is_list() && seps.as_list().size() == 2) {
    item_sep = seps.as_list()[0].str();
    key_sep = seps.as_list()[1].str();
  }
  return Value(to_json(v, indent_n, item_sep, key_sep));
}

// std::stable_sort needs a strict weak order, which NaN breaks: refuse it instead of misbehaving.
void check_sortable(const Value& key) {
  if (key.is_float() && std::isnan(key.as_double())) throw_unsupported("sorting a NaN");
  if (key.is_list()) {
    for (const Value& v : key.as_list()) check_sortable(v);
  }
}

Value sorted(const Value& seq, const CallArgs& a) {
  const bool reverse = arg(a, 0, "reverse", Value(false)).truthy();
  const bool case_sensitive = arg(a, 1, "case_sensitive", Value(false)).truthy();
  const Value attribute = arg(a, 2, "attribute");
  List items = iterate(seq);
  auto key = [&](const Value& v) {
    return fold_case(attribute.is_undefined() ? v : attr_path(v, attribute.str()), case_sensitive);
  };
  for (const Value& item : items) check_sortable(key(item));
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return reverse ? less_than(key(y), key(x)) : less_than(key(x), key(y));
  });
  return Value(std::move(items));
}

Value to_int(const Value& v, const CallArgs& a) {
  const Value dflt = arg(a, 0, "default", Value(0));
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return Value(float_to_int(v.as_double()));
  if (v.is_string()) {
    const std::string s = python_strip(v.as_string(), Value::none(), true, true);
    char* end = nullptr;
    const long long i = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end == s.c_str() + s.size()) return Value(static_cast<int64_t>(i));
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return Value(float_to_int(d));
  }
  return dflt;
}

Value to_float(const Value& v, const CallArgs& a) {
  const Value dflt = arg(a, 0, "default", Value(0.0));
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string()) {
    const std::string s = python_strip(v.as_string(), Value::none(), true, true);
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return Value(d);
  }
  return dflt;
}

Value min_max(const Value& seq, const CallArgs& a, bool want_max) {
  const List items = iterate(seq);
  if (items.empty()) return Value::undefined("min/max of an empty sequence");
  const bool cs = arg(a, 0, "case_sensitive", Value(false)).truthy();
  const Value attribute = arg(a, 1, "attribute");
  auto key = [&](const Value& v) {
    return fold_case(attribute.is_undefined() ? v : attr_path(v, attribute.str()), cs);
  };
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    const bool better = want_max ? less_than(key(items[best]), key(items[i]))
                                 : less_than(key(items[i]), key(items[best]));
    if (better) best = i;
  }
  return items[best];
}

}  // namespace

std::string python_strip(std::string_view s, const Value& chars, bool left, bool right) {
  const bool ws = chars.is_none() || chars.is_undefined();
  const std::string set = ws ? std::string() : expect_string(chars, "strip");
  // Whether the code point s[at, at + len) is one to strip: whitespace, or one of `set`'s.
  auto strip_this = [&](size_t at, size_t len) {
    if (ws) return space_at(s, at);
    const std::string_view c = s.substr(at, len);
    for (size_t k = 0; k < set.size(); k += utf8_char_len(set, k)) {
      if (std::string_view(set).substr(k, utf8_char_len(set, k)) == c) return true;
    }
    return false;
  };
  size_t b = 0;
  size_t e = s.size();
  if (left) {
    while (b < e && strip_this(b, utf8_char_len(s, b))) b += utf8_char_len(s, b);
  }
  if (right) {
    while (e > b) {
      const size_t c = utf8_char_start_before(s, e);
      if (c < b || !strip_this(c, e - c)) break;
      e = c;
    }
  }
  note_work(b + (s.size() - e));
  return std::string(s.substr(b, e - b));
}

Value apply_filter(std::string_view name, const Value& v, CallArgs& a) {
  if (name == "safe") return v.is_string() ? Value::markup(v.as_string()) : Value::markup(v.str());
  if (name == "length" || name == "count") return Value(length(v));
  if (name == "string") return Value(v.str());
  if (name == "tojson") return tojson(v, a);
  if (name == "trim") return Value(python_strip(v.str(), arg(a, 0, "chars", Value::none()), true, true));
  if (name == "upper") return Value(ascii_upper(v.str()));
  if (name == "lower") return Value(ascii_lower(v.str()));
  if (name == "title") return Value(jinja_title(v.str()));
  if (name == "capitalize") return Value(capitalize(v.str()));
  if (name == "e" || name == "escape") return v.is_safe() ? v : Value::markup(html_escape(v.str()));
  if (name == "int") return to_int(v, a);
  if (name == "float") return to_float(v, a);
  if (name == "abs") {
    if (v.is_float()) return Value(std::fabs(v.as_double()));
    if (v.is_number()) {
      if (v.as_int() == INT64_MIN) throw_unsupported("abs() past 64 bits");
      return Value(static_cast<int64_t>(std::llabs(v.as_int())));
    }
    throw_runtime("bad operand type for abs(): '" + std::string(v.type_name()) + "'");
  }
  if (name == "default" || name == "d") {
    const bool boolean = arg(a, 1, "boolean", Value(false)).truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) return arg(a, 0, "default_value", Value(""));
    return v;
  }
  if (name == "replace") {
    const std::string from = expect_string(arg(a, 0, "old"), "replace");
    const std::string to = expect_string(arg(a, 1, "new"), "replace");
    const Value count = arg(a, 2, "count", Value::none());
    return Value(replace_all(v.str(), from, to, count.is_none() ? -1 : int_arg(count, "replace")));
  }
  if (name == "join") {
    return Value(join(v, arg(a, 0, "d", Value("")).str(), arg(a, 1, "attribute")));
  }
  if (name == "first" || name == "last") {
    const List items = iterate(v);
    if (items.empty()) return Value::undefined(std::string(name) + " of an empty sequence");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return Value(iterate(v));
  if (name == "reverse") {
    if (v.is_string()) return slice(v, std::nullopt, std::nullopt, -1);
    List items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  if (name == "items") {
    List out;
    if (v.is_undefined()) return Value(std::move(out));
    if (!v.is_dict()) throw_runtime("items: expected a mapping, got " + std::string(v.type_name()));
    for (const auto& [k, item] : v.as_dict().items()) out.push_back(Value::tuple(List{k, item}));
    return Value(std::move(out));
  }
  if (name == "dictsort") {
    if (!v.is_dict()) throw_runtime("dictsort: expected a mapping, got " + std::string(v.type_name()));
    const bool cs = arg(a, 0, "case_sensitive", Value(false)).truthy();
    const bool by_value = arg(a, 1, "by", Value("key")).str() == "value";
    const bool reverse = arg(a, 2, "reverse", Value(false)).truthy();
    List out;
    for (const auto& [k, item] : v.as_dict().items()) {
      check_sortable(by_value ? item : k);
      out.push_back(Value::tuple(List{k, item}));
    }
    std::stable_sort(out.begin(), out.end(), [&](const Value& x, const Value& y) {
      const size_t i = by_value ? 1 : 0;
      const Value kx = fold_case(x.as_list()[i], cs);
      const Value ky = fold_case(y.as_list()[i], cs);
      return reverse ? less_than(ky, kx) : less_than(kx, ky);
    });
    return Value(std::move(out));
  }
  if (name == "unique") {
    const bool cs = arg(a, 0, "case_sensitive", Value(false)).truthy();
    const Value attribute = arg(a, 1, "attribute");
    List out;
    List seen;
    for (const Value& item : iterate(v)) {
      const Value key = fold_case(attribute.is_undefined() ? item : attr_path(item, attribute.str()), cs);
      if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) {
        seen.push_back(key);
        out.push_back(item);
      }
    }
    return Value(std::move(out));
  }
  if (name == "sort") return sorted(v, a);
  if (name == "min") return min_max(v, a, false);
  if (name == "max") return min_max(v, a, true);
  if (name == "sum") {
    const Value attribute = arg(a, 0, "attribute");
    Value total = arg(a, 1, "start", Value(0));
    for (const Value& item : iterate(v)) {
      total = binary_op("+", total, attribute.is_undefined() ? item : attr_path(item, attribute.str()));
    }
    return total;
  }
  if (name == "round") {
    const int64_t precision = std::clamp<int64_t>(int_arg(arg(a, 0, "precision", Value(0)), "round"), -30, 30);
    if (!v.is_number()) throw_runtime("round expects a number, got " + std::string(v.type_name()));
    const std::string method = arg(a, 1, "method", Value("common")).str();
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double x = v.as_double() * scale;
    // "common" is Python's round(): halves to even (nearbyint in the default rounding mode).
    const double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
    return Value(r / scale);
  }
  if (name == "attr") return get_attr(v, expect_string(arg(a, 0, "name"), "attr"));
  if (name == "map") {
    List out;
    if (!v.truthy()) return Value::generator(std::move(out));
    const Value attribute = arg(a, 99, "attribute");
    if (!attribute.is_undefined()) {
      const Value dflt = arg(a, 99, "default");
      for (const Value& item : iterate(v)) {
        Value got = attr_path(item, attribute.str());
        out.push_back(got.is_undefined() && !dflt.is_undefined() ? dflt : got);
      }
      return Value::generator(std::move(out));
    }
    const std::string filter = expect_string(arg(a, 0, "name"), "map");
    CallArgs rest = tail_args(a, 1);
    for (const Value& item : iterate(v)) out.push_back(apply_filter(filter, item, rest));
    return Value::generator(std::move(out));
  }
  if (name == "select") return Value::generator(select_items(v, a, false, true));
  if (name == "reject") return Value::generator(select_items(v, a, false, false));
  if (name == "selectattr") return Value::generator(select_items(v, a, true, true));
  if (name == "rejectattr") return Value::generator(select_items(v, a, true, false));
  if (name == "indent") return indent(v.str(), a);
  if (name == "wordcount") {
    int64_t n = 0;
    bool in_word = false;
    const std::string text = v.str();
    note_work(text.size());
    for (size_t i = 0; i < text.size();) {
      const size_t len = utf8_char_len(text, i);
      const bool word_char = len > 1 || std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_';
      if (word_char && !in_word) ++n;
      in_word = word_char;
      i += len;
    }
    return Value(n);
  }
  static constexpr std::string_view kJinjaFilters[] = {
      "batch", "center", "filesizeformat", "forceescape", "format", "groupby", "pprint",
      "random", "slice", "striptags", "truncate", "urlencode", "urlize", "wordwrap", "xmlattr"};
  for (std::string_view f : kJinjaFilters) {
    if (name == f) throw_unsupported("the filter '" + std::string(name) + "' is not supported");
  }
  throw_runtime("no filter named '" + std::string(name) + "'");
}

bool apply_test(std::string_view name, const Value& v, CallArgs& a) {
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_string() || v.is_list() || v.is_dict();
  if (name == "sequence") return v.is_string() || v.is_list() || v.is_dict();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "callable") return v.is_function();
  if (name == "lower") return v.is_string() && ascii_lower(v.as_string()) == v.as_string();
  if (name == "upper") return v.is_string() && ascii_upper(v.as_string()) == v.as_string();
  if (name == "even" || name == "odd") {
    if (!v.is_int()) throw_runtime("test '" + std::string(name) + "' expects an integer");
    return (v.as_int() % 2 == 0) == (name == "even");
  }
  if (name == "divisibleby") {
    const Value n = arg(a, 0, "num");
    if (!n.is_int() || n.as_int() == 0 || !v.is_int()) throw_runtime("divisibleby expects non-zero integers");
    return v.as_int() % n.as_int() == 0;
  }
  const Value other = arg(a, 0, "b");
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, other);
  if (name == "ne" || name == "!=") return !equals(v, other);
  if (name == "lt" || name == "lessthan" || name == "<") return less_than(v, other);
  if (name == "gt" || name == "greaterthan" || name == ">") return less_than(other, v);
  if (name == "le" || name == "<=") return !less_than(other, v);
  if (name == "ge" || name == ">=") return !less_than(v, other);
  if (name == "in") return contains(other, v);
  if (name == "sameas") {
    if (v.is_list() && other.is_list()) return &v.as_list() == &other.as_list();
    if (v.is_dict() && other.is_dict()) return &v.as_dict() == &other.as_dict();
    return v.kind() == other.kind() && (v.is_none() || v.is_undefined() || equals(v, other));
  }
  if (name == "escaped" || name == "filter" || name == "test") {
    throw_unsupported("the test '" + std::string(name) + "' is not supported");
  }
  throw_runtime("no test named '" + std::string(name) + "'");
}

Value call_method(const Value& obj, std::string_view name, CallArgs& a) {
  if (obj.is_string()) {
    const std::string& s = obj.as_string();
    if (name == "strip") return Value(python_strip(s, arg(a, 0, "chars", Value::none()), true, true));
    if (name == "lstrip") return Value(python_strip(s, arg(a, 0, "chars", Value::none()), true, false));
    if (name == "rstrip") return Value(python_strip(s, arg(a, 0, "chars", Value::none()), false, true));
    if (name == "upper") return Value(ascii_upper(s));
    if (name == "lower") return Value(ascii_lower(s));
    if (name == "title") return Value(python_title(s));
    if (name == "capitalize") return Value(capitalize(s));
    if (name == "split") {
      return Value(python_split(s, arg(a, 0, "sep", Value::none()), int_arg(arg(a, 1, "maxsplit", Value(-1)), "split")));
    }
    if (name == "startswith" || name == "endswith") {
      const Value p = arg(a, 0, "prefix");
      List options = p.is_list() ? p.as_list() : List{p};
      for (const Value& o : options) {
        const std::string x = expect_string(o, name);
        if (name == "startswith" ? s.starts_with(x) : s.ends_with(x)) return Value(true);
      }
      return Value(false);
    }
    if (name == "replace") {
      const Value count = arg(a, 2, "count", Value(-1));
      return Value(replace_all(s, expect_string(arg(a, 0, "old"), "replace"),
                               expect_string(arg(a, 1, "new"), "replace"), int_arg(count, "replace")));
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "count") {
      const std::string sub = expect_string(arg(a, 0, "sub"), name);
      if (name == "count") {
        if (sub.empty()) return Value(obj.n_chars() + 1);
        int64_t n = 0;
        for (size_t p = find_text(s, sub); p != std::string::npos; p = find_text(s, sub, p + sub.size())) ++n;
        return Value(n);
      }
      const size_t p = name == "rfind" ? rfind_text(s, sub) : find_text(s, sub);
      if (p == std::string::npos) {
        if (name == "index") throw_runtime("substring not found");
        return Value(-1);
      }
      return Value(utf8_count(std::string_view(s).substr(0, p)));
    }
    if (name == "join") return Value(join(arg(a, 0, "iterable"), s, Value()));
    if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace") {
      if (s.empty()) return Value(false);
      for (unsigned char c : s) {
        const bool ok = name == "isdigit" ? std::isdigit(c) != 0 : name == "isalpha" ? std::isalpha(c) != 0
                      : name == "isalnum" ? std::isalnum(c) != 0 : std::isspace(c) != 0;
        if (!ok) return Value(false);
      }
      return Value(true);
    }
    if (name == "splitlines") {
      List out;
      size_t pos = 0;
      while (pos < s.size()) {
        const size_t nl = s.find('\n', pos);
        if (nl == std::string::npos) {
          out.emplace_back(s.substr(pos));
          break;
        }
        std::string line = s.substr(pos, nl - pos);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        out.emplace_back(std::move(line));
        pos = nl + 1;
      }
      return Value(std::move(out));
    }
    static constexpr std::string_view kPythonStrMethods[] = {
        "casefold", "center", "encode", "expandtabs", "format", "format_map", "isascii",
        "isdecimal", "isidentifier", "islower", "isnumeric", "isprintable", "istitle", "isupper",
        "ljust", "partition", "removeprefix", "removesuffix", "rindex", "rjust", "rpartition",
        "rsplit", "swapcase", "translate", "zfill"};
    for (std::string_view m : kPythonStrMethods) {
      if (name == m) throw_unsupported("the string method '" + std::string(name) + "' is not supported");
    }
    throw_runtime("'str' object has no attribute '" + std::string(name) + "'");
  }
  if (obj.is_dict()) {
    const Dict& d = obj.as_dict();
    if (name == "get") {
      const Value key = arg(a, 0, "key");
      const Value* v = d.find_key(key);
      return v != nullptr ? *v : arg(a, 1, "default", Value::none());
    }
    if (name == "items" || name == "keys" || name == "values") {
      List out;
      for (const auto& [k, v] : d.items()) {
        if (name == "items") out.push_back(Value::tuple(List{k, v}));
        if (name == "keys") out.push_back(k);
        if (name == "values") out.push_back(v);
      }
      return Value(std::move(out));
    }
  }
  if (obj.is_list()) {
    const List& l = obj.as_list();
    if (name == "index") {
      for (size_t i = 0; i < l.size(); ++i) {
        if (equals(l[i], arg(a, 0, "value"))) return Value(static_cast<int64_t>(i));
      }
      throw_runtime("list.index(x): x not in list");
    }
    if (name == "count") {
      int64_t n = 0;
      for (const Value& v : l) n += equals(v, arg(a, 0, "value")) ? 1 : 0;
      return Value(n);
    }
  }
  static constexpr std::string_view kMutating[] = {"append", "pop", "extend", "insert", "remove",
                                                   "clear", "sort", "reverse", "update", "setdefault",
                                                   "popitem"};
  for (std::string_view m : kMutating) {
    if (name == m && (obj.is_list() || obj.is_dict())) {
      // HF renders in jinja2's ImmutableSandboxedEnvironment, which refuses these.
      throw_runtime("access to attribute '" + std::string(name) + "' of '" +
                    std::string(obj.type_name()) + "' object is unsafe");
    }
  }
  if (obj.is_undefined()) {
    throw_runtime("'" + obj.undefined_name() + "' is undefined (calling its method '" +
                  std::string(name) + "')");
  }
  throw_runtime("'" + std::string(obj.type_name()) + "' object has no method '" +
                std::string(name) + "'");
}

}  // namespace tessera::jinja
