// jinja2's built-in filters and tests and the Python methods templates call on strings, dicts and
// lists, as HF's apply_chat_template environment provides them (its tojson included; list and dict
// methods that mutate are refused as its ImmutableSandboxedEnvironment refuses them).
// Filters: abs, attr, capitalize, count, d/default, dictsort, e/escape, first, float, indent, int,
// items, join, last, length, list, lower, map, max, min, reject, rejectattr, replace, reverse,
// round, safe, select, selectattr, sort, string, sum, title, tojson, trim, unique, upper, wordcount.
// Tests: boolean, callable, defined, divisibleby, eq/equalto/==, even, false, float, ge/>=, gt/>,
// in, integer, iterable, le/<=, lower, lt/<, mapping, ne/!=, none, number, odd, sameas, sequence,
// string, true, undefined, upper.
// Errors: throw jinja::Error; an unknown filter or test is kUnsupported naming it.
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "tessera/jinja/value.h"

namespace tessera::jinja {

Value apply_filter(std::string_view name, const Value& subject, CallArgs& args);
bool apply_test(std::string_view name, const Value& subject, CallArgs& args);

// obj.name(args) for a method of a str, dict or list (e.g. "a,b".split(","), d.items()).
Value call_method(const Value& obj, std::string_view name, CallArgs& args);

// Python's str.strip(chars) family; `chars` none/undefined strips Unicode whitespace.
std::string python_strip(std::string_view s, const Value& chars, bool left, bool right);

}  // namespace tessera::jinja
