// What this binary is: version, git commit (with "-dirty" for uncommitted changes), compiler and
// build type, for benchmark records that describe themselves. Thread-safety: constants.
#pragma once

#include <string>

namespace tessera {

struct BuildInfo {
  std::string version;
  std::string commit;
  std::string compiler;
  std::string build_type;
  std::string sanitizers;  // empty for normal builds
};

const BuildInfo& build_info();

}  // namespace tessera
