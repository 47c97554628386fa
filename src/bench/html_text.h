// Text for the self-contained HTML reports (bench serve's report.html, the simulator's report):
// escaping for element content and attributes, and for code or data inside <script>.
// Thread-safety: pure functions.
#pragma once

#include <string>

namespace tessera::bench {

// Escapes <, >, & and " for element content and attribute values.
std::string html_escape(const std::string& s);
// Makes `s` safe inside a <script> element: no "</" that could end it early.
std::string script_safe(std::string s);

}  // namespace tessera::bench
