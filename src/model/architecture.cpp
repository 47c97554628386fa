#include "tessera/model/architecture.h"

#include <fmt/format.h>

#include "tessera/model/llama.h"

namespace tessera::model {

const std::vector<Architecture>& architectures() {
  // Explicit list rather than self-registration: static libraries drop unreferenced
  // registration objects, and one list is easy to read.
  static const std::vector<Architecture> kArchitectures = {
      {"llama", &build_llama},
  };
  return kArchitectures;
}

const Architecture* find_architecture(std::string_view name) {
  for (const auto& a : architectures()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

Result<std::unique_ptr<Model>> build_model(std::shared_ptr<const ModelFile> file) {
  TS_ASSIGN_OR_RETURN(std::string arch, file->metadata.get_string("general.architecture"));
  const Architecture* a = find_architecture(arch);
  if (a == nullptr) {
    std::string known;
    for (const auto& x : architectures()) known += (known.empty() ? "" : ", ") + std::string(x.name);
    return unsupported(fmt::format("architecture '{}' is not supported (supported: {})", arch, known));
  }
  return a->build(std::move(file));
}

Result<std::unique_ptr<Model>> load_model(const std::string& path) {
  TS_ASSIGN_OR_RETURN(ModelFile f, open_model_file(path));
  auto model = build_model(std::make_shared<const ModelFile>(std::move(f)));
  if (!model.is_ok()) return model.status().with_context("loading " + path);
  return model;
}

}  // namespace tessera::model
