// libFuzzer target for GBNF grammars (llama-server's `grammar` field), an untrusted input: the
// grammar text (compiled by engine::GbnfGrammar) and the bytes a model writes under it (walked by
// engine::GbnfMatcher). Input: the grammar text, a NUL byte, then the text bytes. Must never
// crash, leak, hang or trip ASan/UBSan; the live parse stacks stay within their bound; a byte the
// matcher refuses leaves its state as it was; and the closing bytes from the longest accepted
// prefix, when found, complete the text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tessera/engine/gbnf_grammar.h"
#include "tessera/engine/gbnf_matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tessera::engine::GbnfGrammar;
  using tessera::engine::GbnfMatcher;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string_view grammar_text = in.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
  auto compiled = GbnfGrammar::compile(grammar_text);
  if (!compiled.is_ok()) return 0;
  GbnfMatcher m(*compiled);
  if (m.n_stacks() == 0) std::abort();  // compile() refuses a start past the bounds
  for (char c : text) {
    const bool was_complete = m.complete();
    const uint32_t n_before = m.n_stacks();
    if (!m.feed(static_cast<uint8_t>(c))) {
      if (m.complete() != was_complete || m.n_stacks() != n_before) std::abort();
      break;
    }
    if (m.n_stacks() > GbnfMatcher::kMaxStacks) std::abort();
  }
  if (const auto close = m.closing_bytes(); close.has_value()) {
    GbnfMatcher done = m;
    if (!done.feed(*close) || !done.complete()) std::abort();
  }
  return 0;
}
