#include "tessera/device/opencl_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace tessera::device {
namespace {

constexpr const char* kDefaultLibrary = "libOpenCL.so.1";

Result<const OpenClApi*> load() {
  const char* env = std::getenv("TESSERA_OPENCL_LIBRARY");
  const std::string library = env != nullptr && *env != '\0' ? env : kDefaultLibrary;
  // Never dlclose'd: drivers keep threads and atexit handlers that outlive any unload.
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return Status(ErrorCode::kUnavailable,
                  "no OpenCL library (" + (why ? std::string(why) : library) +
                      "); install an OpenCL driver, e.g. Debian's ocl-icd-libopencl1 with "
                      "pocl-opencl-icd or a GPU vendor's");
  }
  static OpenClApi api;
#define TESSERA_CL_RESOLVE(name)                                                              \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib, #name));                        \
  if (api.name == nullptr) {                                                                  \
    return Status(ErrorCode::kUnavailable,                                                    \
                  library + " lacks " #name " (an OpenCL 1.2 library is needed)"); \
  }
  TESSERA_CL_FUNCTIONS(TESSERA_CL_RESOLVE)
#undef TESSERA_CL_RESOLVE
  return &api;
}

}  // namespace

Result<const OpenClApi*> opencl_api() {
  static const Result<const OpenClApi*> loaded = load();
  return loaded;
}

}  // namespace tessera::device
