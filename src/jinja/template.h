// A chat template in the Jinja subset real chat templates use, parsed once and rendered with a
// context (messages, tools, add_generation_prompt, bos_token, ...) as HF's apply_chat_template
// renders it with jinja2: trim_blocks and lstrip_blocks on, loop controls, its tojson, the globals
// raise_exception and strftime_now, and jinja2's default Undefined (printing an undefined name
// gives "", reading an attribute of one is an error). What is supported is listed in
// parser.h (statements) and builtins.h (filters, tests, methods).
// Rendering is bounded (output size, loop iterations and calls, call depth, wall time, and the
// memory of the values it holds: render_budget.h) so a hostile template fails with an error
// instead of stalling or exhausting the process.
// Thread-safety: a parsed Template is immutable; render() may run on many threads at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>

#include "tessera/base/clock.h"
#include "tessera/base/status.h"
#include "tessera/jinja/ast.h"
#include "tessera/jinja/value.h"

namespace tessera::jinja {

struct RenderOptions {
  size_t max_output_bytes = size_t{16} << 20;
  int64_t max_steps = 1'000'000;  // loop iterations and macro calls, all together
  int max_call_depth = 64;        // nested macro calls
  // The bytes of all the values the render holds at once (strings, lists, dicts, scopes; not
  // the caller's context nor the output, which max_output_bytes bounds).
  size_t max_memory_bytes = size_t{128} << 20;
  int64_t max_time_ms = 1000;       // wall time of the render on `clock`; <= 0: no limit
  const Clock* clock = nullptr;     // null: real_clock()
  const std::atomic<bool>* cancel = nullptr;  // when it becomes true the render stops (kLimit)
  std::tm now = {};               // what strftime_now formats (the caller's clock)
};

class Template {
 public:
  // Parses `source`. Errors: kInvalidArgument for a syntax error, kUnsupported for a construct
  // outside the subset (the message names it); both say "line N: ...".
  static Result<Template> parse(std::string_view source);

  // Renders with the variables of `context`. Errors: kInvalidArgument for a runtime error of the
  // template (a type error, an undefined attribute, the template's own raise_exception("...")),
  // kUnsupported for a filter, test or method outside the subset, kResourceExhausted past a
  // bound of `options` (steps, depth, output, time, memory, cancel); each names the line.
  // `peak_bytes` (may be null) receives the most the render's values held at once.
  Result<std::string> render(const Dict& context, const RenderOptions& options = {},
                             size_t* peak_bytes = nullptr) const;

 private:
  explicit Template(std::shared_ptr<const Body> body) : body_(std::move(body)) {}
  std::shared_ptr<const Body> body_;
};

}  // namespace tessera::jinja
