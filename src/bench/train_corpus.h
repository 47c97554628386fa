// The built-in training text of `tessera bench train` when no corpus is given or found: English-
// like sentences from a small seeded grammar (articles, adjectives, nouns, verbs, prepositions,
// with agreement between a subject and its verb), so a small model has structure to learn and a
// validation loss well below the unigram entropy is reachable in minutes. Deterministic in the
// seed on every platform (its own generator, no std distributions).
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <string>

namespace tessera::bench {

// About `bytes` bytes (whole sentences, at least one), paragraphs of a few sentences per line.
std::string synthetic_training_text(int64_t bytes, uint64_t seed);

}  // namespace tessera::bench
