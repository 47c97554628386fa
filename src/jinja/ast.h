// The syntax tree of a parsed template: expressions (Expr) and statements (Node). Built by the
// parser, read by the interpreter; immutable after parsing.
// Thread-safety: immutable; safe to read from many threads.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tessera/jinja/value.h"

namespace tessera::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // literal
    kName,       // name
    kList,       // args: items
    kTuple,      // args: items (evaluates to a list)
    kDict,       // args: key0, value0, key1, value1, ...
    kAttr,       // args[0].name
    kIndex,      // args[0][args[1]]
    kSlice,      // args[0][args[1]:args[2]:args[3]] (each bound may be null)
    kCall,       // args[0](args[1..], kwargs)
    kFilter,     // args[0] | name(args[1..], kwargs); args[0] null in a {% filter %} block
    kTest,       // args[0] is [not] name(args[1..])
    kUnary,      // name ("-", "+", "not") args[0]
    kBinary,     // args[0] name args[1]: + - * / // % ** ~ == != < <= > >= in "not in"
    kAnd,        // args[0] and args[1]
    kOr,         // args[0] or args[1]
    kCondition,  // args[0] if args[1] else args[2] (args[2] null: undefined)
  };
  Kind kind;
  int line = 0;
  Value literal;
  std::string name;
  bool negated = false;  // kTest: `is not`
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    kText,         // text
    kOutput,       // {{ expr }}
    kIf,           // branches: (condition, body)...; else_body
    kFor,          // for targets in expr [if condition]: body [else: else_body]
    kSet,          // set targets = expr; or set targets[0].attr = expr
    kSetBlock,     // set targets[0] [| filter] %} body {% endset
    kMacro,        // macro name(params=defaults): body
    kCallBlock,    // call [(params)] expr: body is `caller`
    kFilterBlock,  // filter: body rendered, then `filter` applied
    kScope,        // a body rendered in place ({% generation %})
    kBreak,
    kContinue,
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;  // kFor's `if` filter
  ExprPtr filter;     // kSetBlock / kFilterBlock: a kFilter chain with a null innermost subject
  std::vector<std::string> targets;
  std::string attr;   // kSet: `set ns.attr = ...`
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::string name;                 // kMacro
  std::vector<std::string> params;  // kMacro / kCallBlock
  std::vector<ExprPtr> defaults;    // kMacro / kCallBlock: one per param, null when none
};

}  // namespace tessera::jinja
