// Hugging Face tokenizer.json (with tokenizer_config.json beside it) as the tokenizer.ggml.*
// metadata that GGUF files carry, so the tokenizers built from GGUF (tokenizer.h) run it:
//  - byte-level BPE (a ByteLevel pre-tokenizer, optionally after Split regexes and Digits):
//    "gpt2" with merges and tokenizer.ggml.pre named by matching the regexes against the known
//    pre-tokenizers (pretokenizer.h): gpt-2, llama3, qwen2, starcoder, ...; an unknown
//    expression is refused, quoted. An NFC normalizer (Qwen2) is accepted and not applied, as
//    llama.cpp does not apply it.
//  - SentencePiece-style BPE (byte_fallback, spaces as U+2581 by a Prepend/Replace normalizer or
//    a Metaspace pre-tokenizer without splitting): "llama", whose merge-by-score encoding equals
//    BPE by merge rank when each token's score is minus the rank of its first merge (tokens no
//    merge produces score below every merge).
//  - Unigram ([piece, score] vocabulary, unk_id, byte_fallback; spaces as U+2581 as above, a
//    splitting Metaspace accepted when no piece holds U+2581 past its start): "t5", run by the
//    Viterbi UgmTokenizer (ugm_tokenizer.h). A Precompiled normalizer is refused by name.
//  - anything else (WordPiece, WordLevel models, other normalizers or pre-tokenizers) is
//    refused by name.
// Added tokens extend the vocabulary; special ones are control tokens, others user-defined.
// Holes in the id range and the rows past the tokenizer up to the model's embedding rows are
// "[PAD<id>]" unused tokens (as llama.cpp's converter pads). BOS/EOS/UNK/PAD come from
// tokenizer_config.json's *_token entries, else config.json's ids; add_bos/add_eos from
// tokenizer_config.json, else from the post-processor's template; the chat template from
// tokenizer_config.json.
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/model/format/metadata.h"

namespace tessera::model {

struct HfTokenizerInputs {
  std::string_view tokenizer_json;
  std::string_view tokenizer_config_json;  // "" when the file is absent
  // From config.json, used where tokenizer_config.json names none.
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> pad_token_id;
  // The model's embedding rows; the token list is padded to it. 0: no padding.
  int64_t n_vocab_rows = 0;
};

// Largest tokenizer.json read (bytes).
constexpr uint64_t kMaxTokenizerJsonBytes = 256u << 20;

// Errors: kCorruptData (invalid JSON, a malformed model/vocab/merges/added token, conflicting
// ids, more tokens than n_vocab_rows), kUnsupported (a model, normalizer or pre-tokenizer
// outside the kinds above, naming it); messages say "tokenizer.json: ...".
Result<Metadata> hf_tokenizer_to_gguf(const HfTokenizerInputs& in);

}  // namespace tessera::model
