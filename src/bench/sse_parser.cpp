#include "tessera/bench/sse_parser.h"

namespace tessera::bench {

void SseParser::end_line(std::vector<std::string>& events) {
  if (line_.empty()) {
    if (has_data_) events.push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line_.rfind("data", 0) == 0 && (line_.size() == 4 || line_[4] == ':')) {
    std::string_view v = std::string_view(line_).substr(line_.size() == 4 ? 4 : 5);
    if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    if (has_data_) data_ += '\n';
    data_.append(v);
    has_data_ = true;
  }
  line_.clear();
}

void SseParser::feed(std::string_view bytes, std::vector<std::string>& events) {
  for (char c : bytes) {
    if (c == '\n' && last_cr_) {  // the \n of a \r\n already ended its line
      last_cr_ = false;
      continue;
    }
    last_cr_ = c == '\r';
    if (c == '\n' || c == '\r') {
      end_line(events);
    } else {
      line_ += c;
    }
  }
}

}  // namespace tessera::bench
