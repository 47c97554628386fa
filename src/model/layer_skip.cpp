#include "tessera/model/layer_skip.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace tessera::model {

Result<std::shared_ptr<LayerSkipModel>> LayerSkipModel::create(std::shared_ptr<Model> base,
                                                               const std::vector<int32_t>& skipped) {
  if (!base) return invalid_argument("no model to skip layers of");
  const int64_t n = base->config().n_layers;
  std::vector<uint8_t> skip(static_cast<size_t>(n), 0);
  for (int32_t l : skipped) {
    if (l < 0 || l >= n) {
      return invalid_argument(fmt::format("layer {} to skip is outside [0, {})", l, n));
    }
    skip[static_cast<size_t>(l)] = 1;
  }
  const auto n_skip = std::count(skip.begin(), skip.end(), uint8_t{1});
  if (n_skip == 0) return invalid_argument("no layer to skip");
  if (n_skip == n) return invalid_argument("cannot skip every layer");
  if (!base->can_skip_layers()) {
    return unsupported(fmt::format("skipping layers of a '{}' model is not supported",
                                   base->config().architecture));
  }
  return std::shared_ptr<LayerSkipModel>(new LayerSkipModel(std::move(base), std::move(skip)));
}

int32_t LayerSkipModel::n_skipped() const {
  return static_cast<int32_t>(std::count(skip_.begin(), skip_.end(), uint8_t{1}));
}

Result<std::vector<int32_t>> parse_layer_list(const std::string& text) {
  std::vector<int32_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(pos, end - pos);
    const auto number = [&](std::string_view s, int32_t* v) {
      const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
      return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
    };
    int32_t a = 0;
    int32_t b = 0;
    const size_t dash = part.find('-');
    if (dash == std::string::npos ? !number(part, &a)
                                  : !(number(std::string_view(part).substr(0, dash), &a) &&
                                      number(std::string_view(part).substr(dash + 1), &b) && a <= b)) {
      return invalid_argument(fmt::format("'{}' in the layer list '{}' is not a layer or a range a-b",
                                          part, text));
    }
    if (dash == std::string::npos) b = a;
    for (int32_t l = a; l <= b; ++l) out.push_back(l);
    pos = end + 1;
  }
  return out;
}

}  // namespace tessera::model
