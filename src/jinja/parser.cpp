#include "tessera/jinja/parser.h"

#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

#include "tessera/jinja/error.h"

namespace tessera::jinja {
namespace {

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  Body run() {
    Body body = parse_body({});
    if (peek().kind != TokenKind::kEof) fail("unexpected '" + peek().text + "'");
    return body;
  }

 private:
  // --- token helpers ---------------------------------------------------------------------------
  const Token& peek(size_t ahead = 0) const {
    const size_t i = pos_ + ahead;
    return i < t_.size() ? t_[i] : t_.back();
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < t_.size() - 1) ++pos_;
    return t;
  }
  bool is_op(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kOp && peek(ahead).text == op;
  }
  bool is_name(std::string_view name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kName && peek(ahead).text == name;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail(std::string message) const {
    throw Error(ErrorKind::kSyntax, std::move(message), peek().line);
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::kEof: return "end of template";
      case TokenKind::kVarEnd: return "'}}'";
      case TokenKind::kBlockEnd: return "'%}'";
      case TokenKind::kText: return "template text";
      case TokenKind::kString: return "a string";
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) fail("expected '" + std::string(op) + "', found " + describe(peek()));
  }
  std::string expect_name() {
    if (peek().kind != TokenKind::kName) fail("expected a name, found " + describe(peek()));
    return next().text;
  }
  void expect_block_end() {
    if (peek().kind != TokenKind::kBlockEnd) fail("expected '%}', found " + describe(peek()));
    next();
  }

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxParseDepth) {
        throw Error(ErrorKind::kLimit,
                    "nesting deeper than " + std::to_string(kMaxParseDepth) + " levels",
                    p_.peek().line);
      }
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };

  ExprPtr make(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }
  ExprPtr binary(Expr::Kind kind, std::string op, ExprPtr a, ExprPtr b) {
    auto e = make(kind, a->line);
    e->name = std::move(op);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  // --- statements --------------------------------------------------------------------------------

  // Parses nodes until a {% NAME %} with NAME in `ends` (the block-begin consumed, positioned at
  // NAME) or the end of input (an error when `ends` is non-empty).
  Body parse_body(std::initializer_list<std::string_view> ends) {
    DepthGuard guard(*this);
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.kind == TokenKind::kEof) {
        if (ends.size() != 0) {
          // Name the statement left open, at the line it was opened.
          const std::string end(*(ends.end() - 1));
          throw Error(ErrorKind::kSyntax,
                      "{% " + end.substr(3) + " %} is never closed: expected {% " + end +
                          " %} before the end of the template",
                      open_lines_.empty() ? t.line : open_lines_.back());
        }
        return body;
      }
      if (t.kind == TokenKind::kText) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::kText;
        n->line = t.line;
        n->text = next().text;
        body.push_back(std::move(n));
        continue;
      }
      if (t.kind == TokenKind::kVarBegin) {
        next();
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::kOutput;
        n->line = t.line;
        n->expr = parse_tuple(true);
        if (peek().kind != TokenKind::kVarEnd) fail("expected '}}', found " + describe(peek()));
        next();
        body.push_back(std::move(n));
        continue;
      }
      if (t.kind != TokenKind::kBlockBegin) fail("unexpected " + describe(t));
      next();
      if (peek().kind != TokenKind::kName) fail("expected a statement name after '{%'");
      for (std::string_view e : ends) {
        if (peek().text == e) return body;
      }
      body.push_back(parse_statement());
    }
  }

  NodePtr parse_statement() {
    const Token& t = peek();
    const std::string name = t.text;
    auto n = std::make_unique<Node>();
    n->line = t.line;
    next();
    open_lines_.push_back(n->line);
    struct Pop {
      std::vector<int>& v;
      ~Pop() { v.pop_back(); }
    } pop{open_lines_};
    if (name == "if") return parse_if(std::move(n));
    if (name == "for") return parse_for(std::move(n));
    if (name == "set") return parse_set(std::move(n));
    if (name == "macro") return parse_macro(std::move(n));
    if (name == "call") return parse_call_block(std::move(n));
    if (name == "filter") {
      n->kind = Node::Kind::kFilterBlock;
      n->filter = parse_filter_chain(nullptr);
      expect_block_end();
      n->body = parse_body({"endfilter"});
      next();
      expect_block_end();
      return n;
    }
    if (name == "generation") {
      n->kind = Node::Kind::kScope;
      expect_block_end();
      n->body = parse_body({"endgeneration"});
      next();
      expect_block_end();
      return n;
    }
    if (name == "break" || name == "continue") {
      n->kind = name == "break" ? Node::Kind::kBreak : Node::Kind::kContinue;
      expect_block_end();
      return n;
    }
    static constexpr std::string_view kKnown[] = {"include", "import", "from", "extends", "block",
                                                  "with", "do", "autoescape", "trans"};
    for (std::string_view k : kKnown) {
      if (name == k) {
        throw Error(ErrorKind::kUnsupported, "the {% " + name + " %} statement is not supported",
                    n->line);
      }
    }
    throw Error(ErrorKind::kSyntax, "unknown statement {% " + name + " %}", n->line);
  }

  NodePtr parse_if(NodePtr n) {
    n->kind = Node::Kind::kIf;
    while (true) {
      ExprPtr cond = parse_tuple(false);
      expect_block_end();
      Body body = parse_body({"elif", "else", "endif"});
      n->branches.emplace_back(std::move(cond), std::move(body));
      const std::string end = next().text;
      if (end == "elif") continue;
      if (end == "else") {
        expect_block_end();
        n->else_body = parse_body({"endif"});
        next();
      }
      expect_block_end();
      return n;
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    const bool paren = skip_op("(");
    do {
      names.push_back(expect_name());
    } while (skip_op(","));
    if (paren) expect_op(")");
    return names;
  }

  NodePtr parse_for(NodePtr n) {
    n->kind = Node::Kind::kFor;
    n->targets = parse_targets();
    if (!skip_name("in")) fail("expected 'in' in a for loop, found " + describe(peek()));
    n->expr = parse_tuple(false, /*stop_at_if=*/true);
    if (skip_name("if")) n->condition = parse_expression(true);
    if (is_name("recursive")) {
      throw Error(ErrorKind::kUnsupported, "recursive for loops are not supported", n->line);
    }
    expect_block_end();
    n->body = parse_body({"else", "endfor"});
    if (next().text == "else") {
      expect_block_end();
      n->else_body = parse_body({"endfor"});
      next();
    }
    expect_block_end();
    return n;
  }

  NodePtr parse_set(NodePtr n) {
    n->kind = Node::Kind::kSet;
    if (peek().kind == TokenKind::kName && is_op(".", 1)) {
      n->targets.push_back(next().text);
      next();
      n->attr = expect_name();
    } else {
      n->targets = parse_targets();
    }
    if (skip_op("=")) {
      n->expr = parse_tuple(true);
      expect_block_end();
      return n;
    }
    if (n->targets.size() != 1 || !n->attr.empty()) fail("a block set takes one name");
    n->kind = Node::Kind::kSetBlock;
    if (skip_op("|")) n->filter = parse_filter_chain(nullptr);
    expect_block_end();
    n->body = parse_body({"endset"});
    next();
    expect_block_end();
    return n;
  }

  void parse_params(Node& n) {
    expect_op("(");
    while (!is_op(")")) {
      if (!n.params.empty()) expect_op(",");
      if (is_op(")")) break;
      n.params.push_back(expect_name());
      n.defaults.push_back(skip_op("=") ? parse_expression(true) : nullptr);
    }
    expect_op(")");
  }

  NodePtr parse_macro(NodePtr n) {
    n->kind = Node::Kind::kMacro;
    n->name = expect_name();
    parse_params(*n);
    expect_block_end();
    n->body = parse_body({"endmacro"});
    next();
    expect_block_end();
    return n;
  }

  NodePtr parse_call_block(NodePtr n) {
    n->kind = Node::Kind::kCallBlock;
    if (is_op("(")) parse_params(*n);
    n->expr = parse_expression(true);
    if (n->expr->kind != Expr::Kind::kCall) fail("{% call %} expects a macro call");
    expect_block_end();
    n->body = parse_body({"endcall"});
    next();
    expect_block_end();
    return n;
  }

  // --- expressions -------------------------------------------------------------------------------

  // A comma-separated tuple or a single expression. `stop_at_if`: a for loop's iterable, where a
  // trailing `if` is the loop filter and not a ternary.
  ExprPtr parse_tuple(bool with_condexpr, bool stop_at_if = false) {
    const int line = peek().line;
    ExprPtr first = parse_expression(with_condexpr && !stop_at_if);
    if (!is_op(",")) return first;
    auto tuple = make(Expr::Kind::kTuple, line);
    tuple->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (peek().kind == TokenKind::kBlockEnd || peek().kind == TokenKind::kVarEnd ||
          is_op(")")) {
        break;
      }
      tuple->args.push_back(parse_expression(with_condexpr && !stop_at_if));
    }
    return tuple;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this);
    ExprPtr e = parse_or();
    if (!with_condexpr) return e;
    while (is_name("if")) {
      next();
      auto c = make(Expr::Kind::kCondition, e->line);
      ExprPtr cond = parse_or();
      ExprPtr other = skip_name("else") ? parse_expression(true) : nullptr;
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(other));
      e = std::move(c);
    }
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (skip_name("or")) e = binary(Expr::Kind::kOr, "or", std::move(e), parse_and());
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (skip_name("and")) e = binary(Expr::Kind::kAnd, "and", std::move(e), parse_not());
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this);
      const int line = next().line;
      auto e = make(Expr::Kind::kUnary, line);
      e->name = "not";
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    ExprPtr e = parse_math1();
    while (true) {
      std::string op;
      if (peek().kind == TokenKind::kOp &&
          (is_op("==") || is_op("!=") || is_op("<") || is_op("<=") || is_op(">") ||
           is_op(">="))) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        next();
        op = "not in";
      } else {
        return e;
      }
      e = binary(Expr::Kind::kBinary, op, std::move(e), parse_math1());
    }
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = next().text;
      e = binary(Expr::Kind::kBinary, op, std::move(e), parse_concat());
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (skip_op("~")) e = binary(Expr::Kind::kBinary, "~", std::move(e), parse_math2());
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = next().text;
      e = binary(Expr::Kind::kBinary, op, std::move(e), parse_pow());
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (skip_op("**")) e = binary(Expr::Kind::kBinary, "**", std::move(e), parse_unary(true));
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token& t = next();
      e = make(Expr::Kind::kUnary, t.line);
      e->name = t.text;
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_postfix(parse_primary());
    }
    return with_filter ? parse_filter_expr(std::move(e)) : std::move(e);
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    switch (t.kind) {
      case TokenKind::kName: {
        next();
        auto e = make(Expr::Kind::kLiteral, t.line);
        if (t.text == "true" || t.text == "True") {
          e->literal = Value(true);
        } else if (t.text == "false" || t.text == "False") {
          e->literal = Value(false);
        } else if (t.text == "none" || t.text == "None") {
          e->literal = Value::none();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = t.text;
        }
        return e;
      }
      case TokenKind::kString: {
        std::string s;
        while (peek().kind == TokenKind::kString) s += next().text;
        auto e = make(Expr::Kind::kLiteral, t.line);
        e->literal = Value(std::move(s));
        return e;
      }
      case TokenKind::kInt: {
        next();
        int64_t v = 0;
        auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
        if (r.ec != std::errc()) {
          throw Error(ErrorKind::kUnsupported, "integer literal " + t.text + " past 64 bits",
                      t.line);
        }
        auto e = make(Expr::Kind::kLiteral, t.line);
        e->literal = Value(v);
        return e;
      }
      case TokenKind::kFloat: {
        next();
        auto e = make(Expr::Kind::kLiteral, t.line);
        e->literal = Value(std::strtod(t.text.c_str(), nullptr));
        return e;
      }
      case TokenKind::kOp:
        if (t.text == "(") {
          next();
          if (skip_op(")")) return make(Expr::Kind::kTuple, t.line);
          ExprPtr e = parse_tuple(true);
          expect_op(")");
          return e;
        }
        if (t.text == "[") {
          next();
          auto e = make(Expr::Kind::kList, t.line);
          while (!is_op("]")) {
            if (!e->args.empty()) expect_op(",");
            if (is_op("]")) break;
            e->args.push_back(parse_expression(true));
          }
          expect_op("]");
          return e;
        }
        if (t.text == "{") {
          next();
          auto e = make(Expr::Kind::kDict, t.line);
          while (!is_op("}")) {
            if (!e->args.empty()) expect_op(",");
            if (is_op("}")) break;
            e->args.push_back(parse_expression(true));
            expect_op(":");
            e->args.push_back(parse_expression(true));
          }
          expect_op("}");
          return e;
        }
        break;
      default:
        break;
    }
    fail("unexpected " + describe(t) + " in an expression");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (is_op(".")) {
        next();
        const Token& t = peek();
        if (t.kind == TokenKind::kName) {
          auto a = make(Expr::Kind::kAttr, t.line);
          a->name = next().text;
          a->args.push_back(std::move(e));
          e = std::move(a);
        } else if (t.kind == TokenKind::kInt) {
          auto idx = make(Expr::Kind::kIndex, t.line);
          auto lit = make(Expr::Kind::kLiteral, t.line);
          lit->literal = Value(static_cast<int64_t>(std::atoll(next().text.c_str())));
          idx->args.push_back(std::move(e));
          idx->args.push_back(std::move(lit));
          e = std::move(idx);
        } else {
          fail("expected an attribute name after '.'");
        }
      } else if (is_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj) {
    const int line = next().line;  // '['
    ExprPtr parts[3];
    int n_colons = 0;
    if (!is_op(":")) parts[0] = parse_expression(true);
    while (is_op(":") && n_colons < 2) {
      next();
      ++n_colons;
      if (!is_op(":") && !is_op("]")) parts[n_colons] = parse_expression(true);
    }
    expect_op("]");
    auto e = make(n_colons == 0 ? Expr::Kind::kIndex : Expr::Kind::kSlice, line);
    e->args.push_back(std::move(obj));
    if (n_colons == 0) {
      if (!parts[0]) fail("empty subscript []");
      e->args.push_back(std::move(parts[0]));
    } else {
      for (auto& p : parts) e->args.push_back(std::move(p));
    }
    return e;
  }

  // Call arguments "(a, b, k=v)" into e->args (after any already there) and e->kwargs.
  void parse_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) {
        throw Error(ErrorKind::kUnsupported, "*args and **kwargs in calls are not supported",
                    peek().line);
      }
      if (peek().kind == TokenKind::kName && is_op("=", 1)) {
        std::string key = next().text;
        next();
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e.kwargs.empty()) fail("a positional argument follows a keyword argument");
        e.args.push_back(parse_expression(true));
      }
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = make(Expr::Kind::kCall, peek().line);
    e->args.push_back(std::move(callee));
    parse_args(*e);
    return e;
  }

  std::string dotted_name() {
    std::string name = expect_name();
    while (is_op(".") && peek(1).kind == TokenKind::kName) {
      next();
      name += "." + next().text;
    }
    return name;
  }

  // `| f | g(x)` applied to `subject` (null for a filter block's body).
  ExprPtr parse_filter_chain(ExprPtr subject) {
    bool first = subject == nullptr;  // {% filter f %}: the first name comes without a '|'
    while (first || is_op("|")) {
      if (!first) next();
      first = false;
      auto f = make(Expr::Kind::kFilter, peek().line);
      f->name = dotted_name();
      f->args.push_back(std::move(subject));
      if (is_op("(")) parse_args(*f);
      subject = std::move(f);
    }
    return subject;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        e = parse_filter_chain(std::move(e));
      } else if (is_name("is")) {
        next();
        auto t = make(Expr::Kind::kTest, peek().line);
        t->negated = skip_name("not");
        t->name = dotted_name();
        t->args.push_back(std::move(e));
        const Token& p = peek();
        if (is_op("(")) {
          parse_args(*t);
        } else if ((p.kind == TokenKind::kName && p.text != "else" && p.text != "or" &&
                    p.text != "and" && p.text != "if" && p.text != "is" && p.text != "in" &&
                    p.text != "not") ||
                   p.kind == TokenKind::kString || p.kind == TokenKind::kInt ||
                   p.kind == TokenKind::kFloat || is_op("[") || is_op("{")) {
          t->args.push_back(parse_postfix(parse_primary()));
        }
        e = std::move(t);
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  const std::vector<Token>& t_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<int> open_lines_;  // lines of the statements being parsed, innermost last
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).run(); }

}  // namespace tessera::jinja
