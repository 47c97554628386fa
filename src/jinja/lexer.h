// The lexer of the Jinja subset: splits a template into text and tag tokens and tokenizes the
// expressions inside {{ }} and {% %} ({# #} comments are dropped). Whitespace control is applied
// here, as jinja2 does it with HF's settings: `{%-`/`-%}` (and the same on {{ }} and {# #}) strip
// all whitespace on that side; trim_blocks drops the first newline after a block or comment tag;
// lstrip_blocks drops spaces and tabs between a line's start and a block or comment tag; `{%+`
// and `+%}` turn those two off for one tag. Newlines are normalized to "\n" and one trailing
// newline of the source is dropped, as jinja2's defaults do.
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::jinja {

enum class TokenKind {
  kText,        // literal template text (whitespace control already applied)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,        // identifier or keyword (if, for, and, not, in, is, true, none, ...)
  kString,      // string literal, escapes decoded
  kInt,
  kFloat,
  kOp,          // operator or punctuation: + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
  kEof,
};

struct Token {
  TokenKind kind;
  std::string text;  // the name, decoded string, number text or operator
  int line;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Tokens of `source`, ending with kEof. Throws jinja::Error (kSyntax, with the line) for an
// unterminated tag, comment or string, or a character that starts no token.
std::vector<Token> tokenize(std::string_view source, const LexOptions& options = {});

}  // namespace tessera::jinja
