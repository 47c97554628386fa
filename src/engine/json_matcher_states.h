// The byte-level states JsonMatcher keeps in its frames (Frame::phase / Frame::aux), shared by
// the matcher's steps (json_matcher.cpp) and its closing (json_matcher_closing.cpp). Not a
// public header.
#pragma once

#include <cstdint>

namespace tessera::engine {
namespace {

// Object and array phases.
enum : uint8_t { kOpen = 0, kColon = 1, kInside = 2, kAfter = 3, kComma = 4 };
// String aux states.
enum : uint8_t { kPlain = 0, kEscape = 1, kUnicode = 2, kUtf8 = 3 };

}  // namespace
}  // namespace tessera::engine
