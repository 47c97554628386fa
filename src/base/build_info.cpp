#include "tessera/base/build_info.h"

#include "tessera_git_commit.h"

namespace tessera {

const BuildInfo& build_info() {
  static const BuildInfo info{
      TESSERA_VERSION,
      TESSERA_GIT_COMMIT,
#if defined(__clang__)
      "clang " __clang_version__,
#elif defined(__GNUC__)
      "gcc " __VERSION__,
#else
      "unknown",
#endif
      TESSERA_BUILD_TYPE,
      TESSERA_SANITIZERS,
  };
  return info;
}

}  // namespace tessera
