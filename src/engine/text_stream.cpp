#include "tessera/engine/text_stream.h"

#include <algorithm>

#include "tessera/engine/generator.h"

namespace tessera::engine {

TextStream::TextStream(std::vector<std::string> stop) {
  for (auto& s : stop) {
    if (!s.empty()) stop_.push_back(std::move(s));
  }
}

std::string TextStream::push(std::string_view piece) {
  if (stopped_) return {};
  pending_.append(piece);
  // A stop string anywhere in what is pending ends the stream at its earliest occurrence.
  size_t cut = std::string::npos;
  for (const std::string& s : stop_) cut = std::min(cut, pending_.find(s));
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, cut);
    pending_.clear();
    return out;
  }
  // Hold back the longest suffix that could still grow into a stop string.
  size_t hold = 0;
  for (const std::string& s : stop_) {
    const size_t max_len = std::min(s.size() - 1, pending_.size());
    for (size_t len = max_len; len > hold; --len) {
      if (std::string_view(pending_).substr(pending_.size() - len) ==
          std::string_view(s).substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  size_t n = pending_.size() - hold;
  n = complete_utf8_prefix(std::string_view(pending_).substr(0, n));
  std::string out = pending_.substr(0, n);
  pending_.erase(0, n);
  return out;
}

std::string TextStream::finish() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace tessera::engine
