// The weights of a Hugging Face checkpoint directory: one model.safetensors, or shards listed by
// model.safetensors.index.json ({"metadata": {...}, "weight_map": {tensor: shard file}}).
// The index is trusted no more than the shards: shard names must be plain file names in the
// directory ending in .safetensors, every tensor the index lists must be in the shard it names,
// and every tensor of a shard must be listed for that shard; a tensor in two shards, a missing
// shard or an unlisted tensor is an error naming both.
// Thread-safety: pure functions; results are immutable.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/model/format/model_file.h"

namespace tessera::model {

struct SafetensorsIndex {
  std::vector<std::pair<std::string, std::string>> weight_map;  // tensor -> shard, as listed
  std::vector<std::string> shards;                              // distinct, first-listed order
};

// Parses model.safetensors.index.json text. Errors: kCorruptData (not JSON, no weight_map
// object, a non-string or unsafe shard name: empty, with '/' or '\', starting with '.', or not
// ending in .safetensors), naming the entry.
Result<SafetensorsIndex> parse_safetensors_index(std::string_view json_text);

// The tensors of the directory's safetensors weights, under their own (HF) names and in the
// shards' order, data pointing into the shards' mappings (kept in shard_mappings).
// With model.safetensors.index.json the shards it lists; otherwise model.safetensors, or the one
// *.safetensors file there is. Errors: kNotFound (no weights, a shard the index lists is
// missing), kCorruptData (index and shards disagree, a shard is malformed: the message names
// the shard), kUnsupported (a dtype other than F32/F16/BF16), kInvalidArgument (several
// .safetensors files and no index).
Result<ModelFile> read_safetensors_dir(const std::string& dir);

}  // namespace tessera::model
