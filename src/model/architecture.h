// The architecture registry: maps `general.architecture` names to builders that turn a
// ModelFile into a runnable Model. One file per architecture (llama.h/.cpp), one list here.
// Thread-safety: the registry is immutable; builders are pure.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/model.h"

namespace tessera::model {

struct Architecture {
  std::string_view name;
  // Builds the model; the Model keeps `file` alive. Errors name the offending tensor or key.
  Result<std::unique_ptr<Model>> (*build)(std::shared_ptr<const ModelFile> file);
};

// All registered architectures.
const std::vector<Architecture>& architectures();
// The architecture called `name`, or nullptr.
const Architecture* find_architecture(std::string_view name);

// Opens a model file (GGUF or llama2.c) and builds it with the architecture its metadata names.
// Errors: those of open_model_file, kUnsupported for an unknown architecture (naming it and
// the supported ones), and the builder's.
Result<std::unique_ptr<Model>> load_model(const std::string& path);
Result<std::unique_ptr<Model>> build_model(std::shared_ptr<const ModelFile> file);

}  // namespace tessera::model
