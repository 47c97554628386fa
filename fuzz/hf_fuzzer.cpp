// libFuzzer target for the JSON files of a Hugging Face checkpoint directory: config.json
// (parse_hf_config), model.safetensors.index.json (parse_safetensors_index) and tokenizer.json
// with tokenizer_config.json (hf_tokenizer_to_gguf). The first input byte picks the parser
// (mod 3); for the tokenizer, the rest splits at the first NUL into tokenizer.json and
// tokenizer_config.json. Beyond "no crash, no sanitizer report": what the config parser accepts
// is consistent (heads divide, even head size), index shard names are safe file names, and
// tokenizer metadata that is accepted builds a tokenizer or is refused with a message, and a
// built tokenizer encodes and decodes a short text.
// Build and run: scripts/fuzz.sh (needs clang; -DTESSERA_FUZZ=ON).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tessera/model/format/hf_config.h"
#include "tessera/model/format/safetensors_index.h"
#include "tessera/model/tokenizer/hf_tokenizer_json.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "hf_fuzzer: %s: %s\n", what, detail.c_str());
  std::abort();
}

void check_error(const tessera::Status& s) {
  if (s.message().empty()) fail("error without a message", "");
}

void fuzz_config(std::string_view text) {
  auto c = tessera::model::parse_hf_config(text);
  if (!c.is_ok()) return check_error(c.status());
  if (c->n_heads < 1 || c->n_kv_heads < 1 || c->n_heads % c->n_kv_heads != 0) {
    fail("inconsistent heads accepted", std::string(text));
  }
  if (c->effective_head_dim() < 2 || c->effective_head_dim() % 2 != 0) {
    fail("odd head size accepted", std::string(text));
  }
}

void fuzz_index(std::string_view text) {
  auto i = tessera::model::parse_safetensors_index(text);
  if (!i.is_ok()) return check_error(i.status());
  for (const auto& s : i->shards) {
    if (s.empty() || s[0] == '.' || s.find('/') != std::string::npos) fail("unsafe shard name", s);
  }
  if (i->weight_map.empty()) fail("empty weight map accepted", std::string(text));
}

void fuzz_tokenizer(std::string_view text) {
  const size_t nul = text.find('\0');
  tessera::model::HfTokenizerInputs in;
  in.tokenizer_json = text.substr(0, nul);
  if (nul != std::string_view::npos) in.tokenizer_config_json = text.substr(nul + 1);
  in.n_vocab_rows = text.size() % 5 == 0 ? 4096 : 0;  // sometimes padded to embedding rows
  auto md = tessera::model::hf_tokenizer_to_gguf(in);
  if (!md.is_ok()) return check_error(md.status());
  auto tok = tessera::model::make_tokenizer(*md);
  if (!tok.is_ok()) return check_error(tok.status());
  const auto ids = (*tok)->encode("Hello world 123 \xE2\x96\x81!", true, true);
  volatile size_t sink = (*tok)->decode(ids).size();
  (void)sink;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: fuzz_config(text); break;
    case 1: fuzz_index(text); break;
    default: fuzz_tokenizer(text); break;
  }
  return 0;
}
