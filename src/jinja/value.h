// The dynamic value of the Jinja-subset interpreter: undefined, none, bool, int, float, string,
// list, dict (insertion-ordered, string keys) and callable, with Python's semantics where chat
// templates see them: truthiness, equality, str() and repr() of every kind, and json.dumps as HF's
// `tojson` calls it. Lists and dicts are shared by reference, as in Python (a namespace() is a
// dict whose attributes `set` may assign). Strings are immutable and shared too: copying a Value
// never copies its text. A string, list or dict built while a render runs is charged to that
// render's RenderBudget (render_budget.h) until its last reference goes.
// Thread-safety: a Value is not synchronized; values built for one render stay on its thread.
// Values built before a render (the context, the template's literals) may be read by several
// renders at once: reading never writes, except a string's cached length, which is atomic.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tessera::jinja {

class Value;
using List = std::vector<Value>;
class RenderBudget;

// The storage of a string value, shared by its copies: the text, the budget it is charged to
// (null outside a render) and its length in code points, counted once when first asked.
struct StringRep {
  explicit StringRep(std::string s) : text(std::move(s)) {}
  ~StringRep();
  StringRep(const StringRep&) = delete;
  StringRep& operator=(const StringRep&) = delete;

  std::string text;
  RenderBudget* budget = nullptr;
  size_t charged = 0;
  mutable std::atomic<int64_t> n_chars{-1};
};

// A dict that keeps insertion order (Python's dict order, which tojson and
// `for k, v in d.items()` expose). Keys are strings, or any scalar a template writes in a dict
// literal ({0: 'a'}); lookups compare with Python's == (1 and 1.0 are one key). Linear search:
// chat-template dicts are small.
class Dict {
 public:
  const Value* find(std::string_view key) const;  // a string key
  Value* find(std::string_view key);
  const Value* find_key(const Value& key) const;  // any key
  void set(Value key, Value v);  // replaces in place, or appends
  const std::vector<std::pair<Value, Value>>& items() const;
  size_t size() const;

  bool is_namespace = false;  // made by namespace(): `set ns.attr = ...` may assign it

 private:
  std::vector<std::pair<Value, Value>> items_;
};

// Arguments of a call: positional, then keyword in source order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// A function the template can call (macros, namespace(), range(), loop.cycle, raise_exception).
// It reports errors by throwing jinja::Error (see error.h); the interpreter converts them.
using Function = std::function<Value(CallArgs&)>;

struct Undefined {
  std::string name;  // what was looked up, for messages ("'x' is undefined")
};
struct None {};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction };

  Value() : v_(Undefined{}) {}
  static Value undefined(std::string name) { return Value(Undefined{std::move(name)}); }
  static Value none() { return Value(None{}); }
  Value(bool b) : v_(b) {}                          // NOLINT: implicit by design
  Value(int64_t i) : v_(i) {}                       // NOLINT
  Value(int i) : v_(static_cast<int64_t>(i)) {}     // NOLINT
  Value(double d) : v_(d) {}                        // NOLINT
  Value(std::string s);                             // NOLINT
  Value(std::string_view s) : Value(std::string(s)) {}  // NOLINT
  Value(const char* s) : Value(std::string(s)) {}      // NOLINT
  Value(List l);  // NOLINT: implicit by design
  Value(Dict d);  // NOLINT
  Value(Function f) : v_(std::make_shared<Function>(std::move(f))) {}  // NOLINT

  // A string marked safe (jinja2's Markup, from the `safe` and `escape` filters): `+` with a
  // plain string HTML-escapes the plain side, as Markup.__add__ does.
  static Value markup(std::string s) {
    Value v(std::move(s));
    v.safe_ = true;
    return v;
  }
  bool is_safe() const { return safe_; }
  // A list that stands for a Python generator (what map, select, selectattr, reject and
  // rejectattr return): always true, no len() and no JSON, and iterating it consumes it.
  static Value generator(List l) {
    Value v(std::move(l));
    v.generator_ = true;
    return v;
  }
  bool is_generator() const { return generator_; }
  // A list that stands for a Python tuple (tuple literals, dict items): printed as ('a', 1).
  static Value tuple(List l) {
    Value v(std::move(l));
    v.tuple_ = true;
    return v;
  }
  bool is_tuple() const { return tuple_; }

  // Nesting of lists and dicts (0 for a scalar) as it was when this value was built, and whether
  // a namespace() is inside (or is it). The interpreter bounds the one and refuses a namespace
  // inside a namespace, so values never form cycles and never nest deeper than it allows
  // (recursive printing, comparing and freeing stay shallow).
  int depth() const { return depth_; }
  bool holds_namespace() const { return holds_namespace_; }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is an int
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_function() const { return kind() == Kind::kFunction; }

  // Accessors; each requires the matching kind (checked: a mismatch is a bug in the caller).
  bool as_bool() const;
  int64_t as_int() const;  // also a bool (0/1)
  double as_double() const;  // int, float or bool
  const std::string& as_string() const;
  // A string's length in code points (Python's len()), counted on the first call only.
  int64_t n_chars() const;
  List& as_list() const;
  Dict& as_dict() const;
  const Function& as_function() const;
  const std::string& undefined_name() const;

  // Python truthiness: undefined, none, false, 0, 0.0, "", [] and {} are false.
  bool truthy() const;
  // The name of the kind as Python's type() would say it ("str", "list", "dict", "NoneType").
  std::string_view type_name() const;

  // Python's str() (what {{ }} prints; undefined prints ""): True, None, 1.0, ['a', 1], {'k': 'v'}.
  std::string str() const;
  // Python's repr(): strings quoted as Python quotes them.
  std::string repr() const;

 private:
  explicit Value(Undefined u) : v_(std::move(u)) {}
  explicit Value(None n) : v_(n) {}
  std::variant<Undefined, None, bool, int64_t, double, std::shared_ptr<const StringRep>,
               std::shared_ptr<List>,
               std::shared_ptr<Dict>, std::shared_ptr<Function>>
      v_;
  bool safe_ = false;
  bool generator_ = false;
  bool tuple_ = false;
  bool holds_namespace_ = false;
  uint16_t depth_ = 0;  // saturates at 65535
};

inline const std::vector<std::pair<Value, Value>>& Dict::items() const { return items_; }
inline size_t Dict::size() const { return items_.size(); }

// How deep repr(), equals(), less_than() and to_json() recurse before failing (kLimit).
inline constexpr int kMaxValueDepth = 512;

// Python ==: numbers compare by value across int/float/bool; lists and dicts deeply; functions by
// identity; undefined equals only undefined.
bool equals(const Value& a, const Value& b);

// Python's repr() of a float ("1.0", "0.1", "1e-05", "1e+16", "inf", "nan").
std::string python_float_repr(double d);

// json.dumps(v, ensure_ascii=False, indent=indent, separators=separators) as HF's tojson calls it:
// indent < 0 means None (one line, ", " and ": "); with an indent, "," and ": ". `item_sep` /
// `key_sep` override the separators when set. Throws jinja::Error for an undefined or a function
// inside (json.dumps cannot serialize them).
std::string to_json(const Value& v, int indent, std::optional<std::string> item_sep = {},
                    std::optional<std::string> key_sep = {});

}  // namespace tessera::jinja
