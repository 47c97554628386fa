#include "tessera/jinja/template.h"

#include <new>

#include "tessera/jinja/error.h"
#include "tessera/jinja/interpreter.h"
#include "tessera/jinja/lexer.h"
#include "tessera/jinja/parser.h"
#include "tessera/jinja/render_budget.h"

namespace tessera::jinja {
namespace {

Status to_status(const Error& e) {
  std::string message = e.line() > 0 ? "line " + std::to_string(e.line()) + ": " + e.what() : e.what();
  switch (e.kind()) {
    case ErrorKind::kSyntax: return invalid_argument("template syntax error: " + message);
    case ErrorKind::kUnsupported: return unsupported("unsupported template construct: " + message);
    case ErrorKind::kRuntime: return invalid_argument("template error: " + message);
    case ErrorKind::kLimit: return resource_exhausted("template limit: " + message);
  }
  return internal_error(message);
}

}  // namespace

Result<Template> Template::parse(std::string_view source) {
  try {
    auto body = std::make_shared<Body>(jinja::parse(tokenize(source)));
    return Template(std::move(body));
  } catch (const Error& e) {
    return to_status(e);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("template: out of memory while parsing");
  }
}

Result<std::string> Template::render(const Dict& context, const RenderOptions& options,
                                     size_t* peak_bytes) const {
  // The budget outlives the interpreter, whose values give their bytes back as they go.
  RenderBudget budget(options.max_memory_bytes,
                      options.clock != nullptr ? options.clock : real_clock(),
                      options.max_time_ms > 0 ? options.max_time_ms * 1'000'000 : 0,
                      options.cancel);
  const RenderBudget::Use use(&budget);
  Result<std::string> out = [&]() -> Result<std::string> {
    try {
      Interpreter interpreter(options, budget);
      return interpreter.render(*body_, context);
    } catch (const Error& e) {
      return to_status(e);
    } catch (const std::bad_alloc&) {
      return resource_exhausted("template: out of memory while rendering");
    }
  }();
  if (peak_bytes != nullptr) *peak_bytes = budget.peak_bytes();
  return out;
}

}  // namespace tessera::jinja
