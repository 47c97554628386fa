// PrefixAffinity: the router's guess of which replica of a model holds a request's prompt prefix
// in its prefix cache (the approximate index that llm-d's and SGLang's cache-aware routers keep).
// The prompt text is cut into blocks of `block_chars` bytes; block k's key is a hash chained over
// blocks 0..k, so a key names a whole prefix. record() notes that a replica was sent a prompt
// (it will cache its prefix), match() counts for each replica the leading blocks of a prompt it
// was sent before. Entries are forgotten least recently used first beyond `max_blocks`, and all of
// a replica's at once when it goes down (forget()). Only whole blocks count: prompts shorter than
// one block have no affinity. Replica numbers are a model's slots, 0..63.
// Thread-safety: none; the owner serializes calls.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <string_view>
#include <unordered_map>

namespace tessera::cluster {

class PrefixAffinity {
 public:
  static constexpr int32_t kMaxReplicas = 64;

  explicit PrefixAffinity(size_t block_chars = 64, size_t max_blocks = 1u << 16);

  // out[r] = the number of leading blocks of `text` last sent to replica r (0 <= r < out.size()).
  void match(std::string_view text, std::span<int32_t> out) const;
  // `text` was sent to `replica`: its blocks are now (also) there, most recently used.
  void record(std::string_view text, int32_t replica);
  // `replica` lost its cache (stopped, restarted).
  void forget(int32_t replica);

  size_t blocks() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t replicas = 0;  // bit r: replica r holds this prefix
    std::list<uint64_t>::iterator lru;
  };
  size_t block_chars_;
  size_t max_blocks_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::list<uint64_t> lru_;  // keys, most recently used first
};

}  // namespace tessera::cluster
