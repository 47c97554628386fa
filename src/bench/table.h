// Table: the terminal printer every `tessera bench` command uses, a Markdown pipe table with
// columns sized to their contents (first column left-aligned, the rest right-aligned), so the
// output pastes straight into docs. Thread-safety: a plain value.
#pragma once

#include <string>
#include <vector>

namespace tessera::bench {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  // Precondition: cells.size() == the header's size.
  void add_row(std::vector<std::string> cells);
  std::string to_string() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// printf-style formatting into a std::string.
std::string strprintf(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace tessera::bench
