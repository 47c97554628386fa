// The architecture registry: maps `general.architecture` names to builders that turn a
// ModelFile into a runnable Model. One file per family (llama.cpp, arch_qwen2.cpp, ...) over the
// shared decoder (decoder.h, driven by ArchTraits), one list here (architecture.cpp).
// Thread-safety: the registry is immutable; builders are pure.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/arch_traits.h"
#include "tessera/model/load_options.h"
#include "tessera/model/model.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::model {

struct Architecture {
  std::string_view name;
  // Builds the model; the Model keeps `file` alive. Errors name the offending tensor or key.
  Result<std::unique_ptr<Model>> (*build)(std::shared_ptr<const ModelFile> file,
                                          const LoadOptions& options);
  // How the family's GGUF files pair RoPE values (fixed per family, as in llama.cpp): loading a
  // PEFT adapter permutes its q/k rows into GGML's layout only for kNormal.
  RopeStyle rope = RopeStyle::kNormal;
};

// All registered architectures.
const std::vector<Architecture>& architectures();
// The architecture called `name`, or nullptr.
const Architecture* find_architecture(std::string_view name);

// Opens a model file (GGUF, llama2.c) or Hugging Face checkpoint directory (hf_checkpoint.h) and
// builds it with the architecture its metadata names.
// Errors: those of open_model_file, kUnsupported for an unknown architecture (naming it and
// the supported ones), and the builder's.
Result<std::unique_ptr<Model>> load_model(const std::string& path, const LoadOptions& options = {});

// The tokenizer for a loaded model: from `tokenizer_path` when non-empty (a GGUF file with
// tokenizer metadata, else a llama2.c tokenizer file), else from the model's own GGUF metadata.
// Errors: kInvalidArgument for a llama2.c checkpoint without a tokenizer path or a vocabulary
// size that does not match the model's; the tokenizer's load error, naming the file.
Result<std::unique_ptr<Tokenizer>> load_tokenizer_for(const Model& model,
                                                      const std::string& tokenizer_path);
Result<std::unique_ptr<Model>> build_model(std::shared_ptr<const ModelFile> file,
                                           const LoadOptions& options = {});

}  // namespace tessera::model
