// TextStream: turns generated tokens into the visible text of a completion, incrementally. Bytes
// are released only once they form complete UTF-8 and can no longer be the start of a stop
// string; when a stop string appears, the text before it is released and the stream stops (the
// stop string itself is never output, as in OpenAI's API).
// Thread-safety: one stream per sequence; not synchronized.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::engine {

class TextStream {
 public:
  // Empty stop strings are ignored.
  explicit TextStream(std::vector<std::string> stop);

  // Appends `piece` (one token's bytes) and returns the text that became visible.
  std::string push(std::string_view piece);
  // Releases whatever is held back (an incomplete UTF-8 tail or a partial stop-string match);
  // empty after a stop string matched.
  std::string finish();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stop_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace tessera::engine
