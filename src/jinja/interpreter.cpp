#include "tessera/jinja/interpreter.h"

#include <algorithm>

#include "tessera/jinja/builtins.h"
#include "tessera/jinja/error.h"
#include "tessera/jinja/operators.h"

namespace tessera::jinja {
namespace {

Value arg_or(const CallArgs& a, size_t index, std::string_view name) {
  if (index < a.positional.size()) return a.positional[index];
  for (const auto& [k, v] : a.keyword) {
    if (k == name) return v;
  }
  return Value();
}

}  // namespace

void Interpreter::append(std::string& out, std::string_view text) {
  if (out.size() + text.size() > opt_.max_output_bytes) {
    throw Error(ErrorKind::kLimit,
                "output past " + std::to_string(opt_.max_output_bytes) + " bytes");
  }
  out.append(text);
}

void Interpreter::check_storable(const Value& v, int line) const {
  if (v.depth() > kMaxStoredDepth) {
    throw Error(ErrorKind::kLimit,
                "a value nested deeper than " + std::to_string(kMaxStoredDepth) + " levels", line);
  }
}

void Interpreter::step(int line) {
  if (++steps_ > opt_.max_steps) {
    throw Error(ErrorKind::kLimit,
                "more than " + std::to_string(opt_.max_steps) + " loop iterations and calls", line);
  }
  budget_.check_time();
}

Interpreter::Frame& Interpreter::new_frame(Frame* parent) {
  // Scopes live until the render ends (closures point into them): charged for good.
  budget_.charge(sizeof(Frame) + 64);
  frames_.emplace_back();
  frames_.back().parent = parent;
  return frames_.back();
}

std::string Interpreter::render(const Body& body, const Dict& context) {
  globals_.set("range", Value(Function([this](CallArgs& a) -> Value {
    int64_t start = 0;
    int64_t stop = 0;
    int64_t stepv = 1;
    for (const Value& v : a.positional) {
      if (!v.is_int() && !v.is_bool()) throw_runtime("range() expects integers");
    }
    if (a.positional.size() == 1) {
      stop = a.positional[0].as_int();
    } else if (a.positional.size() >= 2) {
      start = a.positional[0].as_int();
      stop = a.positional[1].as_int();
      if (a.positional.size() >= 3) stepv = a.positional[2].as_int();
    } else {
      throw_runtime("range() expects 1 to 3 arguments");
    }
    if (stepv == 0) throw_runtime("range() step must not be zero");
    List out;
    for (int64_t i = start; stepv > 0 ? i < stop : i > stop;) {
      step(0);
      if ((out.size() & 4095) == 0) check_value_size((out.size() + 4096) * sizeof(Value));
      out.emplace_back(i);
      if (__builtin_add_overflow(i, stepv, &i)) break;  // past the end of int64: past `stop`
    }
    return Value(std::move(out));
  })));
  globals_.set("namespace", Value(Function([](CallArgs& a) -> Value {
    Dict d;
    d.is_namespace = true;
    for (const Value& p : a.positional) {
      if (!p.is_dict()) throw_runtime("namespace() takes a mapping or keyword arguments");
      for (const auto& [k, v] : p.as_dict().items()) d.set(k, v);
    }
    for (const auto& [k, v] : a.keyword) d.set(k, v);
    return Value(std::move(d));
  })));
  globals_.set("dict", Value(Function([](CallArgs& a) -> Value {
    Dict d;
    for (const auto& [k, v] : a.keyword) d.set(k, v);
    return Value(std::move(d));
  })));
  globals_.set("raise_exception", Value(Function([](CallArgs& a) -> Value {
    throw_runtime(arg_or(a, 0, "message").str());
  })));
  globals_.set("strftime_now", Value(Function([this](CallArgs& a) -> Value {
    const std::string fmt = arg_or(a, 0, "format").str();
    if (fmt.empty()) return Value("");
    char buf[512];
    const size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &opt_.now);
    if (n == 0) throw_runtime("strftime_now: format '" + fmt + "' gives nothing or too much");
    return Value(std::string(buf, n));
  })));
  Frame& root = new_frame(nullptr);
  root.vars = context;
  std::string out;
  render_body(body, root, out);
  return out;
}

Interpreter::Flow Interpreter::render_body(const Body& body, Frame& frame, std::string& out) {
  for (const NodePtr& n : body) {
    const Flow f = render_node(*n, frame, out);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::render_node(const Node& n, Frame& frame, std::string& out) {
  try {
    switch (n.kind) {
      case Node::Kind::kText:
        append(out, n.text);
        return Flow::kNormal;
      case Node::Kind::kOutput:
        append(out, eval(*n.expr, frame).str());
        return Flow::kNormal;
      case Node::Kind::kIf:
        for (const auto& [cond, body] : n.branches) {
          if (eval(*cond, frame).truthy()) return render_body(body, frame, out);
        }
        return render_body(n.else_body, frame, out);
      case Node::Kind::kFor:
        render_for(n, frame, out);
        return Flow::kNormal;
      case Node::Kind::kSet: {
        Value v = eval(*n.expr, frame);
        if (n.attr.empty()) {
          assign(frame, n.targets, v, n.line);
          return Flow::kNormal;
        }
        Value target = lookup(n.targets[0], frame);
        if (!target.is_dict() || !target.as_dict().is_namespace) {
          throw_runtime("cannot assign attribute '" + n.attr + "' of '" + n.targets[0] +
                        "': not a namespace()");
        }
        check_storable(v, n.line);
        if (v.holds_namespace()) {
          throw_unsupported("a namespace attribute holding a namespace (or a list or dict "
                            "holding one) is not supported");
        }
        target.as_dict().set(n.attr, std::move(v));
        return Flow::kNormal;
      }
      case Node::Kind::kSetBlock: {
        std::string text;
        render_body(n.body, frame, text);
        Value v(std::move(text));
        if (n.filter) v = eval_filter(*n.filter, frame, &v);
        assign(frame, n.targets, v, n.line);
        return Flow::kNormal;
      }
      case Node::Kind::kFilterBlock: {
        std::string text;
        render_body(n.body, frame, text);
        const Value v(std::move(text));
        append(out, eval_filter(*n.filter, frame, &v).str());
        return Flow::kNormal;
      }
      case Node::Kind::kMacro:
        frame.vars.set(n.name, make_macro(n, frame));
        return Flow::kNormal;
      case Node::Kind::kCallBlock: {
        Frame* at = &frame;
        const Node* block = &n;
        Value caller(Function([this, at, block](CallArgs& a) -> Value {
          Frame& f = new_frame(at);
          for (size_t i = 0; i < block->params.size(); ++i) {
            Value v = arg_or(a, i, block->params[i]);
            if (v.is_undefined() && block->defaults[i]) v = eval(*block->defaults[i], *at);
            f.vars.set(block->params[i], v);
          }
          std::string text;
          render_body(block->body, f, text);
          return Value(std::move(text));
        }));
        const Expr& call = *n.expr;
        CallArgs args = eval_args(call, frame, 1);
        args.keyword.emplace_back("caller", caller);
        const Value callee = eval(*call.args[0], frame);
        if (!callee.is_function()) throw_runtime("{% call %} of something that is not a macro");
        append(out, callee.as_function()(args).str());
        return Flow::kNormal;
      }
      case Node::Kind::kScope:
        return render_body(n.body, frame, out);
      case Node::Kind::kBreak:
        return Flow::kBreak;
      case Node::Kind::kContinue:
        return Flow::kContinue;
    }
  } catch (Error& err) {
    if (err.line() == 0) err.set_line(n.line);
    throw;
  }
  return Flow::kNormal;
}

void Interpreter::assign(Frame& frame, const std::vector<std::string>& targets, const Value& v,
                         int line) {
  check_storable(v, line);
  if (targets.size() == 1) {
    frame.vars.set(targets[0], v);
    return;
  }
  const List items = iterate(v);
  if (items.size() != targets.size()) {
    throw Error(ErrorKind::kRuntime,
                "cannot unpack " + std::to_string(items.size()) + " values into " +
                    std::to_string(targets.size()) + " names",
                line);
  }
  for (size_t i = 0; i < targets.size(); ++i) frame.vars.set(targets[i], items[i]);
}

void Interpreter::render_for(const Node& n, Frame& frame, std::string& out) {
  List items = iterate(eval(*n.expr, frame));
  Frame& f = new_frame(&frame);
  if (n.condition) {
    List kept;
    for (const Value& item : items) {
      step(n.line);
      assign(f, n.targets, item, n.line);
      if (eval(*n.condition, f).truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  const auto count = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < count; ++i) {
    step(n.line);
    Dict loop;
    loop.set("index0", Value(i));
    loop.set("index", Value(i + 1));
    loop.set("revindex0", Value(count - i - 1));
    loop.set("revindex", Value(count - i));
    loop.set("first", Value(i == 0));
    loop.set("last", Value(i == count - 1));
    loop.set("length", Value(count));
    loop.set("depth", Value(1));
    loop.set("depth0", Value(0));
    if (i > 0) loop.set("previtem", items[static_cast<size_t>(i - 1)]);
    if (i + 1 < count) loop.set("nextitem", items[static_cast<size_t>(i + 1)]);
    loop.set("cycle", Value(Function([i](CallArgs& a) -> Value {
      if (a.positional.empty()) throw_runtime("loop.cycle() needs at least one value");
      return a.positional[static_cast<size_t>(i) % a.positional.size()];
    })));
    f.vars.set("loop", Value(std::move(loop)));
    assign(f, n.targets, items[static_cast<size_t>(i)], n.line);
    if (render_body(n.body, f, out) == Flow::kBreak) break;
  }
  if (count == 0) render_body(n.else_body, f, out);
}

Value Interpreter::make_macro(const Node& n, Frame& frame) {
  Frame* defining = &frame;
  const Node* node = &n;
  return Value(Function([this, node, defining](CallArgs& a) -> Value {
    Value caller;
    for (const auto& [k, v] : a.keyword) {
      if (k == "caller") caller = v;
    }
    return call_macro(*node, *defining, a, caller);
  }));
}

Value Interpreter::call_macro(const Node& n, Frame& defining, CallArgs& a, const Value& caller) {
  step(n.line);
  if (++call_depth_ > opt_.max_call_depth) {
    --call_depth_;
    throw Error(ErrorKind::kLimit,
                "macro calls nested deeper than " + std::to_string(opt_.max_call_depth), n.line);
  }
  struct DepthRelease {
    int& d;
    ~DepthRelease() { --d; }
  } release{call_depth_};
  Frame& f = new_frame(&defining);
  for (size_t i = 0; i < n.params.size(); ++i) {
    Value v = arg_or(a, i, n.params[i]);
    if (v.is_undefined() && n.defaults[i]) v = eval(*n.defaults[i], f);
    check_storable(v, n.line);
    f.vars.set(n.params[i], v);
  }
  if (!caller.is_undefined()) f.vars.set("caller", caller);
  List varargs;
  for (size_t i = n.params.size(); i < a.positional.size(); ++i) varargs.push_back(a.positional[i]);
  f.vars.set("varargs", Value::tuple(std::move(varargs)));
  std::string text;
  render_body(n.body, f, text);
  return Value(std::move(text));
}

Value Interpreter::lookup(const std::string& name, Frame& frame) {
  for (Frame* f = &frame; f != nullptr; f = f->parent) {
    if (const Value* v = f->vars.find(name)) return *v;
  }
  if (const Value* v = globals_.find(name)) return *v;
  return Value::undefined(name);
}

CallArgs Interpreter::eval_args(const Expr& e, Frame& frame, size_t first) {
  CallArgs a;
  for (size_t i = first; i < e.args.size(); ++i) a.positional.push_back(eval(*e.args[i], frame));
  for (const auto& [k, v] : e.kwargs) a.keyword.emplace_back(k, eval(*v, frame));
  return a;
}

Value Interpreter::eval_filter(const Expr& e, Frame& frame, const Value* subject) {
  Value s;
  if (!e.args[0]) {
    s = *subject;
  } else if (subject != nullptr && e.args[0]->kind == Expr::Kind::kFilter) {
    s = eval_filter(*e.args[0], frame, subject);
  } else {
    s = eval(*e.args[0], frame);
  }
  CallArgs a = eval_args(e, frame, 1);
  return apply_filter(e.name, s, a);
}

Value Interpreter::eval_call(const Expr& e, Frame& frame) {
  const Expr& callee = *e.args[0];
  if (callee.kind == Expr::Kind::kAttr) {
    const Value obj = eval(*callee.args[0], frame);
    if (obj.is_dict()) {
      if (const Value* f = obj.as_dict().find(callee.name); f != nullptr && f->is_function()) {
        CallArgs a = eval_args(e, frame, 1);
        return f->as_function()(a);
      }
    }
    CallArgs a = eval_args(e, frame, 1);
    return call_method(obj, callee.name, a);
  }
  const Value f = eval(callee, frame);
  if (!f.is_function()) {
    if (f.is_undefined()) throw_runtime("'" + f.undefined_name() + "' is undefined");
    throw_runtime("'" + std::string(f.type_name()) + "' object is not callable");
  }
  CallArgs a = eval_args(e, frame, 1);
  return f.as_function()(a);
}

Value Interpreter::eval(const Expr& e, Frame& frame) {
  if ((++evals_ & 15) == 0) budget_.check_time();
  try {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.literal;
      case Expr::Kind::kName:
        return lookup(e.name, frame);
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        List l;
        for (const ExprPtr& x : e.args) l.push_back(eval(*x, frame));
        return e.kind == Expr::Kind::kTuple ? Value::tuple(std::move(l)) : Value(std::move(l));
      }
      case Expr::Kind::kDict: {
        Dict d;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          const Value k = eval(*e.args[i], frame);
          if (k.is_list() || k.is_dict() || k.is_undefined() || k.is_function()) {
            throw_runtime("unhashable dict key of type '" + std::string(k.type_name()) + "'");
          }
          d.set(k, eval(*e.args[i + 1], frame));
        }
        return Value(std::move(d));
      }
      case Expr::Kind::kAttr:
        return get_attr(eval(*e.args[0], frame), e.name);
      case Expr::Kind::kIndex:
        return get_item(eval(*e.args[0], frame), eval(*e.args[1], frame));
      case Expr::Kind::kSlice: {
        const Value obj = eval(*e.args[0], frame);
        std::optional<int64_t> b[3];
        for (int i = 0; i < 3; ++i) {
          if (!e.args[static_cast<size_t>(i) + 1]) continue;
          const Value v = eval(*e.args[static_cast<size_t>(i) + 1], frame);
          if (v.is_none()) continue;
          if (!v.is_int()) throw_runtime("slice indices must be integers or None");
          b[i] = v.as_int();
        }
        return slice(obj, b[0], b[1], b[2]);
      }
      case Expr::Kind::kCall:
        return eval_call(e, frame);
      case Expr::Kind::kFilter:
        return eval_filter(e, frame, nullptr);
      case Expr::Kind::kTest: {
        const Value s = eval(*e.args[0], frame);
        CallArgs a = eval_args(e, frame, 1);
        return Value(apply_test(e.name, s, a) != e.negated);
      }
      case Expr::Kind::kUnary: {
        const Value v = eval(*e.args[0], frame);
        if (e.name == "not") return Value(!v.truthy());
        if (!v.is_number()) {
          throw_runtime("bad operand type for unary " + e.name + ": '" +
                        std::string(v.type_name()) + "'");
        }
        if (e.name == "+") return v.is_float() ? v : Value(v.as_int());
        if (v.is_float()) return Value(-v.as_double());
        return binary_op("-", Value(0), v);  // checked: -(-2**63) does not fit
      }
      case Expr::Kind::kBinary:
        return binary_op(e.name, eval(*e.args[0], frame), eval(*e.args[1], frame));
      case Expr::Kind::kAnd: {
        Value a = eval(*e.args[0], frame);
        return a.truthy() ? eval(*e.args[1], frame) : a;
      }
      case Expr::Kind::kOr: {
        Value a = eval(*e.args[0], frame);
        return a.truthy() ? a : eval(*e.args[1], frame);
      }
      case Expr::Kind::kCondition:
        if (eval(*e.args[1], frame).truthy()) return eval(*e.args[0], frame);
        return e.args[2] ? eval(*e.args[2], frame) : Value::undefined("(if without else)");
    }
  } catch (Error& err) {
    if (err.line() == 0) err.set_line(e.line);
    throw;
  }
  return Value();
}

}  // namespace tessera::jinja
