// Python's operators and element access as Jinja templates see them: arithmetic, `~`, comparisons,
// `in`, attribute and item lookup, slicing, iteration, and substring search (Python strings index,
// slice and count code points, not bytes: utf8.h). Long operations note their work to the
// render's budget, so a render stops near its deadline even inside one of them.
// Errors: each throws jinja::Error (kRuntime) with Python's wording for a type mismatch ("unsupported
// operand type(s) for +: 'str' and 'int'"), kLimit for a result past kMaxValueBytes.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/jinja/render_budget.h"
#include "tessera/jinja/value.h"

namespace tessera::jinja {

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

// The byte offset of the first (last) `needle` in `hay` at or after (at or before) `pos`, or
// npos; like std::string's find/rfind, but noting its work so that a pathological search
// (a long needle over a long text) ends at the render's deadline.
size_t find_text(std::string_view hay, std::string_view needle, size_t pos = 0);
size_t rfind_text(std::string_view hay, std::string_view needle);

}  // namespace tessera::jinja
