#include "tessera/model/format/safetensors_index.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "tessera/model/format/hf_config.h"
#include "tessera/model/format/safetensors.h"

namespace tessera::model {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr std::string_view kIndexName = "model.safetensors.index.json";
constexpr std::string_view kSingleName = "model.safetensors";
constexpr size_t kMaxShards = 10000;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A shard name the index may use: a file directly in the checkpoint directory.
bool safe_shard_name(std::string_view n) {
  return !n.empty() && n.size() <= 255 && n[0] != '.' && n.find('/') == std::string_view::npos &&
         n.find('\\') == std::string_view::npos && n.find('\0') == std::string_view::npos &&
         ends_with(n, ".safetensors") && n.size() > std::string_view(".safetensors").size();
}

Result<ModelFile> read_shard(const fs::path& path) {
  auto mapped = MappedFile::open(path.string());
  if (!mapped.is_ok()) return mapped.status();
  auto f = read_safetensors(*mapped);
  if (!f.is_ok()) return f.status().with_context(path.string());
  return f;
}

// Moves `shard`'s tensors and mapping into `out`.
void append(ModelFile& out, ModelFile&& shard) {
  for (auto& t : shard.tensors) out.tensors.push_back(std::move(t));
  for (auto& b : shard.owned_buffers) out.owned_buffers.push_back(std::move(b));
  if (shard.mapping != nullptr) out.shard_mappings.push_back(std::move(shard.mapping));
}

}  // namespace

Result<SafetensorsIndex> parse_safetensors_index(std::string_view text) {
  const Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return corrupt_data(fmt::format("{} is not a JSON object", kIndexName));
  }
  const auto wm = j.find("weight_map");
  if (wm == j.end() || !wm->is_object() || wm->empty()) {
    return corrupt_data(fmt::format("{}: 'weight_map' must be a non-empty object mapping tensor "
                                    "names to shard files", kIndexName));
  }
  SafetensorsIndex index;
  std::map<std::string, bool, std::less<>> seen;
  for (const auto& [tensor, shard] : wm->items()) {
    if (tensor.empty()) return corrupt_data(fmt::format("{}: a tensor has an empty name", kIndexName));
    if (!shard.is_string() || !safe_shard_name(shard.get_ref<const std::string&>())) {
      return corrupt_data(fmt::format("{}: tensor '{}' maps to {}, expected a .safetensors file "
                                      "name in the same directory", kIndexName, tensor,
                                      shard.dump()));
    }
    const std::string& name = shard.get_ref<const std::string&>();
    if (seen.emplace(name, true).second) {
      if (index.shards.size() == kMaxShards) {
        return corrupt_data(fmt::format("{}: more than {} shards", kIndexName, kMaxShards));
      }
      index.shards.push_back(name);
    }
    index.weight_map.emplace_back(tensor, name);
  }
  return index;
}

Result<ModelFile> read_safetensors_dir(const std::string& dir) {
  const fs::path root(dir);
  std::error_code ec;
  ModelFile out;
  out.format = FileFormat::kSafetensors;
  out.path = dir;
  if (fs::exists(root / kIndexName, ec)) {
    const std::string index_path = (root / kIndexName).string();
    TS_ASSIGN_OR_RETURN(const std::string text, read_small_file(index_path));
    auto parsed = parse_safetensors_index(text);
    if (!parsed.is_ok()) return parsed.status().with_context(dir);
    const SafetensorsIndex& index = *parsed;
    std::map<std::string_view, std::string_view> shard_of(  // tensor -> shard
        index.weight_map.begin(), index.weight_map.end());
    std::map<std::string, std::string_view, std::less<>> found;  // tensor -> shard it is in
    for (const std::string& shard : index.shards) {
      const fs::path p = root / shard;
      if (!fs::exists(p, ec)) {
        return not_found(fmt::format("{}: shard {} listed in {} is missing", dir, shard,
                                     kIndexName));
      }
      TS_ASSIGN_OR_RETURN(ModelFile f, read_shard(p));
      for (const TensorInfo& t : f.tensors) {
        const auto it = shard_of.find(t.name);
        if (it == shard_of.end()) {
          return corrupt_data(fmt::format("{}: tensor '{}' in {} is not listed in {}", dir,
                                          t.name, shard, kIndexName));
        }
        if (it->second != shard) {
          return corrupt_data(fmt::format("{}: tensor '{}' is in {} but {} lists it in {}", dir,
                                          t.name, shard, kIndexName, it->second));
        }
        if (!found.emplace(t.name, it->second).second) {
          return corrupt_data(fmt::format("{}: tensor '{}' appears twice", dir, t.name));
        }
      }
      append(out, std::move(f));
    }
    for (const auto& [tensor, shard] : index.weight_map) {
      if (found.find(tensor) == found.end()) {
        return corrupt_data(fmt::format("{}: {} lists tensor '{}' in {}, which does not hold it",
                                        dir, kIndexName, tensor, shard));
      }
    }
    return out;
  }
  fs::path single = root / kSingleName;
  if (!fs::exists(single, ec)) {
    std::vector<fs::path> candidates;
    for (const auto& e : fs::directory_iterator(root, ec)) {
      if (e.is_regular_file(ec) && ends_with(e.path().filename().string(), ".safetensors")) {
        candidates.push_back(e.path());
      }
    }
    if (candidates.empty()) {
      return not_found(fmt::format("{}: no {}, {} or other .safetensors weights (a PyTorch .bin "
                                   "checkpoint must be saved with safe_serialization first)",
                                   dir, kSingleName, kIndexName));
    }
    if (candidates.size() > 1) {
      return invalid_argument(fmt::format("{}: {} .safetensors files but no {} saying which "
                                          "tensors each holds", dir, candidates.size(),
                                          kIndexName));
    }
    single = candidates[0];
  }
  TS_ASSIGN_OR_RETURN(ModelFile f, read_shard(single));
  append(out, std::move(f));
  return out;
}

}  // namespace tessera::model
