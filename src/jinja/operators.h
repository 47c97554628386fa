// Python's operators and element access as Jinja templates see them: arithmetic, `~`, comparisons,
// `in`, attribute and item lookup, slicing, iteration and UTF-8 code-point helpers (Python strings
// index, slice and count code points, not bytes).
// Errors: each throws jinja::Error (kRuntime) with Python's wording for a type mismatch ("unsupported
// operand type(s) for +: 'str' and 'int'"), kLimit for a result past kMaxValueBytes.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/jinja/value.h"

namespace tessera::jinja {

// The largest string or list an operator builds ("x" * 10**9 is refused, not allocated).
inline constexpr size_t kMaxValueBytes = size_t{64} << 20;

// An integer argument (int or bool); throws kRuntime naming `what` for anything else.
int64_t int_arg(const Value& v, std::string_view what);

// The int64 a float truncates to; throws for NaN, infinities and values past 64 bits.
int64_t float_to_int(double d);

// a OP b for OP in + - * / // % ** ~ == != < <= > >= in "not in".
Value binary_op(std::string_view op, const Value& a, const Value& b);

// Python's <: numbers, strings (code point order) and lists; anything else throws.
bool less_than(const Value& a, const Value& b);

// `needle in haystack`: substring, list membership or dict key; false for undefined.
bool contains(const Value& haystack, const Value& needle);

// obj.name as jinja2 resolves it: a dict key, else undefined (named `name`). Throws for an
// attribute of undefined ("'x' is undefined").
Value get_attr(const Value& obj, std::string_view name);

// obj[key]: a list or string index (negative from the end), a dict key; undefined when absent.
Value get_item(const Value& obj, const Value& key);

// obj[start:stop:step] over a list or a string. Throws for step 0 or another kind.
Value slice(const Value& obj, std::optional<int64_t> start, std::optional<int64_t> stop,
            std::optional<int64_t> step);

// The items `for` walks: a list's items, a dict's keys, a string's characters; none for
// undefined. Throws for anything else ("'int' object is not iterable").
List iterate(const Value& v);

// Python len(): code points of a string, items of a list or dict, 0 for undefined.
int64_t length(const Value& v);

// Markup's escaping: & < > " ' as &amp; &lt; &gt; &#34; &#39;.
std::string html_escape(std::string_view s);

// The code points of a UTF-8 string, each as its own UTF-8 string (malformed bytes pass through
// one byte each).
std::vector<std::string> utf8_chars(std::string_view s);

}  // namespace tessera::jinja
