// Paths a client names, kept inside a directory the operator chose (tessera serve --lora-dir):
// the request's path is read relative to the directory (or as an absolute path under it),
// refused lexically when it climbs out ('..'), and resolved (symlinks followed) only to be
// checked again against the directory's own resolved path. What is outside - whether it
// exists or not - gets the same answer as a name that is not in the directory, so a client
// learns nothing about the rest of the file system.
// Thread-safety: pure functions over the file system.
#pragma once

#include <string>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::serve {

// The resolved path of `requested` inside `dir`. Each of `members` that exists (file names inside
// it when it is a directory, else beside it) must resolve inside `dir` too. Errors: kInvalidArgument
// for an empty path or one with a '..' component; kNotFound (one message, naming only
// `requested`) for a path that does not exist or resolves outside `dir`; kIoError when `dir`
// itself cannot be resolved.
Result<std::string> resolve_inside(const std::string& dir, const std::string& requested,
                                   const std::vector<std::string>& members = {});

}  // namespace tessera::serve
