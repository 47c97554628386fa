#include "tessera/serve/byte_size.h"

#include <algorithm>
#include <cctype>

#include "tessera/engine/kv_manager.h"

namespace tessera::serve {

Result<int64_t> parse_byte_size(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (...) {
    return invalid_argument("'" + text + "' is not a size (e.g. 8G, 512M, 1073741824)");
  }
  std::string suffix = text.substr(used);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.ends_with("IB")) suffix.resize(suffix.size() - 2);
  else if (suffix.size() > 1 && suffix.ends_with("B")) suffix.resize(suffix.size() - 1);
  double scale = 1;
  if (suffix.empty() || suffix == "B") scale = 1;
  else if (suffix == "K") scale = 1024.0;
  else if (suffix == "M") scale = 1024.0 * 1024;
  else if (suffix == "G") scale = 1024.0 * 1024 * 1024;
  else if (suffix == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  else return invalid_argument("'" + text + "': unknown suffix (K, M, G or T)");
  if (v < 0) return invalid_argument("a size must be >= 0");
  return static_cast<int64_t>(v * scale);
}

Result<int64_t> parse_kv_memory(const std::string& text, int64_t weight_bytes,
                                int64_t available_bytes) {
  if (text.empty()) return int64_t{0};
  if (text.ends_with("%")) {
    double pct = 0;
    size_t used = 0;
    try {
      pct = std::stod(text.substr(0, text.size() - 1), &used);
    } catch (...) {
      used = 0;
    }
    if (used != text.size() - 1 || !(pct > 0 && pct <= 100)) {
      return invalid_argument("'" + text + "' is not a percentage in (0, 100]");
    }
    const int64_t b =
        available_bytes >= 0
            ? std::max<int64_t>(1, engine::kv_memory_share(available_bytes, weight_bytes, pct / 100.0))
            : engine::default_kv_memory_bytes(weight_bytes, pct / 100.0);
    if (b <= 0) return invalid_argument("available memory is unknown here: give bytes");
    return b;  // 1 when the weights leave nothing: the engine then names what one sequence needs
  }
  TS_ASSIGN_OR_RETURN(const int64_t b, parse_byte_size(text));
  if (b <= 0) return invalid_argument("the KV memory must be > 0");
  return b;
}

}  // namespace tessera::serve
