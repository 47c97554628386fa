// Structured output at the token level: which tokens may come next so that the generated text
// stays a prefix of a JSON value valid under a JsonSchema (regex and choice text included: a
// JsonSchema whose matcher walks a RegexDfa) or of a text a GbnfGrammar generates.
//
// TokenVocabulary holds every token's bytes (Tokenizer::token_to_piece) in a byte trie and the
// tokens that end generation; built once per model and shared. StructuredOutput is what a
// request carries (a schema or a grammar + vocabulary, immutable). TokenConstraint is one
// sequence's state, one code for both acceptors (JsonMatcher, GbnfMatcher: the same byte
// interface): mask() walks the trie depth-first with a matcher copy per level, so a prefix
// shared by many tokens is matched once and a refused byte prunes its whole subtree; tokens whose
// bytes the matcher accepts keep their logits, all others get -infinity. Under a schema, inside a
// string, where nearly every token may come, the plain-content tokens are allowed at once and
// only the others (a quote, an escape, a partial UTF-8 character: a few percent) are walked. End-of-generation tokens are
// allowed only when the value is complete. Tokens with no bytes (control tokens) are never
// allowed. Cost: one matcher step per trie node reached (inside a string nearly every node; at a
// structural position a few), measured in docs/SERVING.md.
// Thread-safety: TokenVocabulary and StructuredOutput are immutable and shared; a
// TokenConstraint belongs to one sequence (one thread at a time).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "tessera/engine/gbnf_grammar.h"
#include "tessera/engine/gbnf_matcher.h"
#include "tessera/engine/json_matcher.h"
#include "tessera/engine/json_schema.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::engine {

class TokenVocabulary {
 public:
  // pieces[id]: token id's bytes when decoded ("" for tokens that print nothing);
  // end_tokens: ids that end generation.
  TokenVocabulary(const std::vector<std::string>& pieces, std::vector<int32_t> end_tokens);

  int32_t n_vocab() const { return n_vocab_; }
  const std::vector<int32_t>& end_tokens() const { return end_tokens_; }
  const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }

  struct Node {
    uint32_t first_edge = 0, n_edges = 0;   // edges_[first_edge, first_edge + n_edges)
    uint32_t first_token = 0, n_tokens = 0; // tokens_[...]: the tokens whose bytes end here
  };
  struct Edge {
    uint8_t byte = 0;
    uint32_t child = 0;
  };
  // A byte trie over a set of tokens: nodes[0] is the root (the empty prefix).
  struct Trie {
    std::vector<Node> nodes;
    std::vector<Edge> edges;
    std::vector<int32_t> tokens;
  };
  // Every token with bytes.
  const Trie& all() const { return all_; }
  // Only the tokens that are not plain string content (those need the matcher inside a string).
  const Trie& special() const { return special_; }
  // Tokens whose bytes are plain JSON string content: no '"', '\\' or control byte, and whole
  // UTF-8 characters. Inside a string any of them may come next.
  const std::vector<int32_t>& plain() const { return plain_; }
  size_t max_piece_bytes() const { return max_piece_; }

 private:
  static Trie build(const std::vector<std::string>& pieces, const std::vector<int32_t>& ids);

  int32_t n_vocab_ = 0;
  std::vector<std::string> pieces_;
  std::vector<int32_t> end_tokens_;
  Trie all_, special_;
  std::vector<int32_t> plain_;
  size_t max_piece_ = 0;
};

// A model's vocabulary for structured output: each token's decoded bytes
// (Tokenizer::token_to_piece) and its end-of-generation tokens.
std::shared_ptr<const TokenVocabulary> make_token_vocabulary(const model::Tokenizer& tokenizer);

// Per automaton state, the tokens whose bytes the RegexDfa (a pattern's or raw text's) takes
// from it: the mask's shortcut where only the automaton decides (JsonMatcher::dfa_position).
// Filled on first use, at most kMaxEntries states (past that, computed each time). Shared by the
// sequences of one request (n choices); thread-safe.
class DfaTokenCache {
 public:
  static constexpr size_t kMaxEntries = 1024;
  // The tokens allowed at `pos` (raw: every token with bytes; else plain string content only),
  // one flag per token id.
  std::shared_ptr<const std::vector<uint8_t>> tokens(const JsonMatcher::DfaPosition& pos,
                                                     const TokenVocabulary& vocab);

 private:
  std::mutex mu_;
  std::map<std::tuple<const RegexDfa*, uint16_t, bool>, std::shared_ptr<const std::vector<uint8_t>>>
      entries_;
};

// Per GbnfMatcher state (GbnfMatcher::state_key), the tokens whose bytes the matcher takes from
// it: inside a string or a repetition the state after each character is usually the same, so the
// trie walk (every token, no shortcut) runs once per distinct state. At most kMaxEntries states
// whose keys have at most kMaxKeyWords words (past that, computed each time). Shared by the
// sequences of one request (one grammar); thread-safe.
class GrammarTokenCache {
 public:
  static constexpr size_t kMaxEntries = 128;
  static constexpr size_t kMaxKeyWords = 2048;
  // One flag per token id, or null when `key` is not cached.
  std::shared_ptr<const std::vector<uint8_t>> find(const std::vector<uint32_t>& key);
  void put(const std::vector<uint32_t>& key, std::shared_ptr<const std::vector<uint8_t>> flags);

 private:
  std::mutex mu_;
  std::map<std::vector<uint32_t>, std::shared_ptr<const std::vector<uint8_t>>> entries_;
};

// What a request's output must follow: exactly one of `schema` (JSON, regex or choice text) and
// `grammar`.
struct StructuredOutput {
  std::shared_ptr<const JsonSchema> schema;
  std::shared_ptr<const TokenVocabulary> vocab;
  std::shared_ptr<DfaTokenCache> dfa_cache = std::make_shared<DfaTokenCache>();
  std::shared_ptr<const GbnfGrammar> grammar = nullptr;
  std::shared_ptr<GrammarTokenCache> grammar_cache = std::make_shared<GrammarTokenCache>();
};

class TokenConstraint {
 public:
  // Precondition: spec holds a vocabulary and exactly one of schema and grammar.
  explicit TokenConstraint(const StructuredOutput& spec);

  // Sets every token that may not come next to -infinity in `logits` (the model's output row; ids
  // past the vocabulary's, a padded output, are never allowed); returns
  // how many may. When none may (a vocabulary that cannot continue the value), end tokens are
  // allowed so the sequence can stop.
  //
  // `budget`: how many tokens may still come, this one included (the request's max_tokens or the
  // context, whichever ends first; negative: unbounded). When the fastest completion of the value
  // (closing()) needs the whole budget, only its next token is allowed, so a value that can be
  // completed within max_tokens is: the output parses and validates instead of stopping at the
  // length limit inside a string.
  int64_t mask(std::span<float> logits, int64_t budget = -1);
  // After sampling `token` from a row masked with the same `budget`: `token` when the value can
  // still be completed in the budget left after it, else the fastest completion's next token
  // (a token that opens a nested object with required properties, say, may need more than is left).
  int32_t keep_completable(int32_t token, int64_t budget) const;

  // The fastest completion from the current state: the matcher's closing_bytes split greedily
  // into the longest vocabulary pieces. n_tokens 0 when complete(); nullopt when unknown (no
  // closing bytes found, or a byte no token starts with).
  struct Closing {
    int64_t n_tokens = 0;
    int32_t first = -1;  // the first token; -1 when n_tokens is 0
  };
  std::optional<Closing> closing() const;

  // Advances past `token`'s bytes. False when they do not continue the value (the state is then
  // unchanged); an end token is accepted when the value is complete.
  bool accept(int32_t token);
  // The value is complete and nothing but whitespace may follow: generation can stop.
  bool closed() const;
  bool complete() const;

  // One acceptor with the trie walk's scratch: levels[d] is the state after d bytes of the path.
  template <class Matcher>
  struct Walk {
    Matcher matcher;
    std::vector<Matcher> levels;
    std::vector<uint32_t> key;  // GbnfMatcher::state_key scratch
  };

 private:
  StructuredOutput spec_;
  std::variant<Walk<JsonMatcher>, Walk<GbnfMatcher>> walk_;
  std::vector<uint8_t> allowed_;  // per token, this step
};

}  // namespace tessera::engine
