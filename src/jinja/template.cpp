#include "tessera/jinja/template.h"

#include <new>

#include "tessera/jinja/error.h"
#include "tessera/jinja/interpreter.h"
#include "tessera/jinja/lexer.h"
#include "tessera/jinja/parser.h"

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

Result<std::string> Template::render(const Dict& context, const RenderOptions& options) const {
  try {
    Interpreter interpreter(options);
    return interpreter.render(*body_, context);
  } catch (const Error& e) {
    return to_status(e);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("template: out of memory while rendering");
  }
}

}  // namespace tessera::jinja
