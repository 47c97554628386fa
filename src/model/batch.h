// Batch: the tokens of one forward step, from one or more sequences. Row i feeds token
// tokens[i] at position positions[i] of sequence seq_ids[i]; logits are produced for the rows
// with want_logits[i] set, in row order. Rows of one sequence must be in increasing position
// order and contiguous with what the KV cache already holds for it, so a whole prompt (prefill),
// one new token (decode) or several draft tokens to verify (speculation) are all just rows.
// adapter_ids carries a per-row adapter (LoRA) id for later use; -1 means none.
// Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::model {

struct Batch {
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;
  std::vector<int32_t> seq_ids;
  std::vector<uint8_t> want_logits;
  std::vector<int32_t> adapter_ids;

  void add(int32_t token, int32_t position, int32_t seq_id, bool logits, int32_t adapter = -1) {
    tokens.push_back(token);
    positions.push_back(position);
    seq_ids.push_back(seq_id);
    want_logits.push_back(logits ? 1 : 0);
    adapter_ids.push_back(adapter);
  }
  void clear() {
    tokens.clear();
    positions.clear();
    seq_ids.clear();
    want_logits.clear();
    adapter_ids.clear();
  }
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  int64_t n_logits() const {
    int64_t n = 0;
    for (uint8_t w : want_logits) n += w;
    return n;
  }
};

}  // namespace tessera::model
