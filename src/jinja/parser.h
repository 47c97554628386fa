// The parser of the Jinja subset: tokens (lexer.h) to a statement tree (ast.h), with jinja2's
// operator precedence (ternary < or < and < not < comparisons/in < + - < ~ < * / // % < ** <
// unary - + < filters, tests and calls < . [] () postfix).
// Statements: if/elif/else, for (tuple targets, `if` filter, else), set (name, tuple, ns.attr,
// block set with a filter), macro (defaults), call blocks, filter blocks, break/continue and
// HF's {% generation %} ({% raw %} is the lexer's). Others (include, import, extends, block,
// recursive loops, ...) are
// refused as unsupported, naming the construct.
// Thread-safety: pure function.
#pragma once

#include <vector>

#include "tessera/jinja/ast.h"
#include "tessera/jinja/lexer.h"

namespace tessera::jinja {

// Nesting deeper than this (expressions or blocks) is refused: a bound on the parser's recursion.
inline constexpr int kMaxParseDepth = 200;

// The template's top-level body. Throws jinja::Error: kSyntax (with the line) for malformed
// input, kUnsupported for a construct outside the subset, kLimit past kMaxParseDepth.
Body parse(const std::vector<Token>& tokens);

}  // namespace tessera::jinja
