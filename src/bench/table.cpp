#include "tessera/bench/table.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "tessera/base/check.h"

namespace tessera::bench {
namespace {
// Display width: count UTF-8 code points, not bytes ("±" is one column).
size_t width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}
}  // namespace

void Table::add_row(std::vector<std::string> cells) {
  TS_CHECK(cells.size() == header_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::to_string() const {
  std::vector<size_t> w(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) {
    w[c] = std::max<size_t>(3, width(header_[c]));
    for (const auto& r : rows_) w[c] = std::max(w[c], width(r[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s = "|";
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(w[c] - width(cells[c]), ' ');
      s += ' ';
      if (c == 0) s += cells[c];
      s += pad;
      if (c != 0) s += cells[c];
      s += " |";
    }
    return s + "\n";
  };
  std::string out = line(header_);
  out += "|";
  for (size_t c = 0; c < w.size(); ++c) {
    out += (c == 0 ? std::string(w[c] + 1, '-') + "-" : std::string(w[c] + 1, '-') + ":") + "|";
  }
  out += "\n";
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string strprintf(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  char buf[512];
  const int n = std::vsnprintf(buf, sizeof buf, format, ap);
  va_end(ap);
  if (n < static_cast<int>(sizeof buf)) return std::string(buf, n > 0 ? n : 0);
  std::string s(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, format);
  std::vsnprintf(s.data(), s.size(), format, ap);
  va_end(ap);
  s.resize(static_cast<size_t>(n));
  return s;
}

}  // namespace tessera::bench
