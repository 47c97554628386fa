#include "tessera/serve/confined_path.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

namespace tessera::serve {
namespace {

namespace fs = std::filesystem;

// realpath(3): the canonical path with every symlink resolved, or "" when it does not exist.
std::string real_path(const std::string& p) {
  std::unique_ptr<char, decltype(&std::free)> r(::realpath(p.c_str(), nullptr), &std::free);
  return r ? std::string(r.get()) : std::string();
}

bool is_inside(const std::string& root, const std::string& p) {
  return p.size() > root.size() && p.compare(0, root.size(), root) == 0 && p[root.size()] == '/';
}

}  // namespace

Result<std::string> resolve_inside(const std::string& dir, const std::string& requested,
                                   const std::vector<std::string>& members) {
  if (requested.empty()) return invalid_argument("'path' is empty");
  for (const auto& part : fs::path(requested)) {
    if (part == "..") {
      return invalid_argument(fmt::format(
          "'path' must name an adapter inside the server's adapter directory, without '..'"));
    }
  }
  const std::string root = real_path(dir);
  if (root.empty()) return io_error("the server's adapter directory cannot be resolved");
  const auto not_here = [&] {
    return not_found(fmt::format("no adapter '{}' in the server's adapter directory", requested));
  };
  // An absolute path is taken only under the directory (as given or resolved); nothing outside
  // is looked at.
  const fs::path req(requested);
  std::string joined;
  if (req.is_absolute()) {
    const std::string given = fs::path(dir).lexically_normal().string();
    const std::string given_root = given.ends_with('/') ? given.substr(0, given.size() - 1) : given;
    if (!is_inside(root, requested) && !is_inside(given_root, requested)) return not_here();
    joined = requested;
  } else {
    joined = (fs::path(root) / req).string();
  }
  const std::string resolved = real_path(joined);
  if (resolved.empty() || !is_inside(root, resolved)) return not_here();
  // A file's companions sit beside it (a PEFT .safetensors and its adapter_config.json).
  std::error_code ec;
  const fs::path home = fs::is_directory(resolved, ec) ? fs::path(resolved) : fs::path(resolved).parent_path();
  for (const std::string& m : members) {
    const std::string member = real_path((home / m).string());
    if (!member.empty() && !is_inside(root, member)) return not_here();
  }
  return resolved;
}

}  // namespace tessera::serve
