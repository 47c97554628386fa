// The small CSV reading the trace formats share (trace.h, servegen.h): one line into fields
// (no quoting: none of the traces quote), and a finite number from a field.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

namespace tessera::bench {

// Splits on every comma; a trailing '\r' (CRLF files) is dropped.
std::vector<std::string> split_csv_line(const std::string& line);

// True and `v` set when the whole of `s` is one finite number.
bool parse_finite_double(const std::string& s, double& v);

}  // namespace tessera::bench
