// SseParser: incremental server-sent-events framing (the WHATWG EventSource rules that matter
// for OpenAI-style streams): bytes arrive in arbitrary pieces; lines end with \n, \r\n or \r; an
// empty line ends an event; "data:" lines (one optional space after the colon) are joined with
// \n; comment lines (":") and other fields are ignored. Thread-safety: one parser per stream.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::bench {

class SseParser {
 public:
  // Consumes `bytes` and appends the data of every event they complete to `events`.
  void feed(std::string_view bytes, std::vector<std::string>& events);
  // True when bytes of an unfinished event are buffered.
  bool has_partial() const { return !line_.empty() || has_data_; }

 private:
  void end_line(std::vector<std::string>& events);
  std::string line_;
  std::string data_;
  bool has_data_ = false;
  bool last_cr_ = false;
};

}  // namespace tessera::bench
