// The tree-walking interpreter behind Template::render: one Interpreter per render, holding the
// output, the scopes and the bounds. Scopes follow jinja2: `for` bodies and macro calls open a
// scope (a `set` inside does not leak out; namespace() objects exist for that), `if` does not;
// macros see the template's top-level variables and their arguments.
// Values a template stores (set, loop and macro variables, namespace attributes) are bounded in
// nesting (kMaxStoredDepth), and a namespace never holds a namespace: values stay acyclic.
// Time and memory are checked against the render's RenderBudget: the deadline at every loop
// iteration and call and every few expressions, and each scope is charged for the render.
// Errors: throws jinja::Error (see error.h); Template converts it to a Status.
// Thread-safety: one render, one thread.
#pragma once

#include <deque>
#include <string>

#include "tessera/jinja/ast.h"
#include "tessera/jinja/render_budget.h"
#include "tessera/jinja/template.h"
#include "tessera/jinja/value.h"

namespace tessera::jinja {

// The deepest list/dict nesting a template may store in a variable.
inline constexpr int kMaxStoredDepth = 256;

class Interpreter {
 public:
  // `budget` is the render's (installed as current() on this thread) and outlives this.
  Interpreter(const RenderOptions& options, RenderBudget& budget) : opt_(options), budget_(budget) {}

  // Renders `body` with `context` (and the globals) and returns the text.
  std::string render(const Body& body, const Dict& context);

 private:
  struct Frame {
    Dict vars;
    Frame* parent = nullptr;
  };
  enum class Flow { kNormal, kBreak, kContinue };

  Flow render_body(const Body& body, Frame& frame, std::string& out);
  Flow render_node(const Node& node, Frame& frame, std::string& out);
  void render_for(const Node& node, Frame& frame, std::string& out);
  void assign(Frame& frame, const std::vector<std::string>& targets, const Value& v, int line);
  Value make_macro(const Node& node, Frame& frame);
  Value call_macro(const Node& node, Frame& defining, CallArgs& args, const Value& caller);

  Value eval(const Expr& e, Frame& frame);
  Value eval_call(const Expr& e, Frame& frame);
  Value eval_filter(const Expr& e, Frame& frame, const Value* subject);
  CallArgs eval_args(const Expr& e, Frame& frame, size_t first);
  Value lookup(const std::string& name, Frame& frame);

  void append(std::string& out, std::string_view text);
  void check_storable(const Value& v, int line) const;
  void step(int line);
  Frame& new_frame(Frame* parent);

  RenderOptions opt_;
  RenderBudget& budget_;
  std::deque<Frame> frames_;  // every scope of this render; lives until it ends (closures point in)
  Dict globals_;
  int64_t steps_ = 0;
  uint32_t evals_ = 0;  // expressions evaluated: the clock is read every few
  int call_depth_ = 0;
};

}  // namespace tessera::jinja
