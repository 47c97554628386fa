// OpenCL error codes as Status values: the code's name (CL_OUT_OF_RESOURCES, ...) with what was
// being done, so a failed call reads "clCreateBuffer(4096 bytes): CL_MEM_OBJECT_ALLOCATION_FAILURE
// (-4)". Internal to the device layer. Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "tessera/base/status.h"
#include "tessera/device/opencl_api.h"

namespace tessera::device {

// "CL_INVALID_VALUE" for -30, ...; "CL_UNKNOWN_ERROR" for codes OpenCL 1.2 does not name.
std::string_view cl_error_name(cl_int code);

// ok for CL_SUCCESS; otherwise "<what>: <name> (<code>)", kResourceExhausted for the
// out-of-memory codes and kInternal for the rest (a wrong argument is a bug in the device layer).
Status cl_status(cl_int code, std::string_view what);

}  // namespace tessera::device
