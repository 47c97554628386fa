// The interpreter's internal error: thrown by the lexer, parser, interpreter and builtins, and
// caught at the library boundary (Template::parse / Template::render), which returns it as a
// Status naming the line. It never escapes the library. An exception is used inside because every
// expression of a template is fallible and evaluation recurses through the AST: threading a
// Result through each of the hundred evaluation paths would triple the code without changing
// what the caller sees.
// Thread-safety: a plain value.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera::jinja {

enum class ErrorKind {
  kSyntax,       // the source is not valid Jinja
  kUnsupported,  // valid Jinja that this interpreter does not implement (names the construct)
  kRuntime,      // a type error, an undefined attribute, raise_exception(...)
  kLimit,        // a bound on output, loop iterations or recursion was hit (hostile template)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message, int line = 0)
      : std::runtime_error(std::move(message)), kind_(kind), line_(line) {}
  ErrorKind kind() const { return kind_; }
  int line() const { return line_; }
  void set_line(int line) { line_ = line; }

 private:
  ErrorKind kind_;
  int line_;
};

[[noreturn]] inline void throw_runtime(std::string message) {
  throw Error(ErrorKind::kRuntime, std::move(message));
}
[[noreturn]] inline void throw_unsupported(std::string message) {
  throw Error(ErrorKind::kUnsupported, std::move(message));
}

}  // namespace tessera::jinja
