// What OpenCL devices this machine has: one flat list over every platform (driver), in the
// order the ICD loader reports them, so "opencl:N" names the N-th entry. Reading the list needs
// no context and allocates nothing on a device.
// Thread-safety: list_devices() may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::device {

enum class DeviceType : uint8_t { kGpu, kCpu, kAccelerator, kOther };

// "gpu", "cpu", "accelerator", "other".
const char* device_type_name(DeviceType type);

struct DeviceInfo {
  int index = 0;                // position in list_devices(): the N of "opencl:N"
  std::string name;             // CL_DEVICE_NAME, e.g. "NVIDIA H100 80GB HBM3"
  std::string vendor;           // CL_DEVICE_VENDOR
  std::string platform;         // the platform (driver) name, e.g. "Portable Computing Language"
  std::string driver_version;   // CL_DRIVER_VERSION
  std::string opencl_version;   // CL_DEVICE_VERSION, e.g. "OpenCL 3.0 PoCL ..."
  DeviceType type = DeviceType::kOther;
  uint64_t global_mem_bytes = 0;   // CL_DEVICE_GLOBAL_MEM_SIZE
  uint64_t max_alloc_bytes = 0;    // CL_DEVICE_MAX_MEM_ALLOC_SIZE: the largest one buffer
  uint64_t local_mem_bytes = 0;    // CL_DEVICE_LOCAL_MEM_SIZE: per work-group scratch
  uint32_t compute_units = 0;      // CL_DEVICE_MAX_COMPUTE_UNITS
  uint32_t max_clock_mhz = 0;      // CL_DEVICE_MAX_CLOCK_FREQUENCY
  uint64_t max_work_group_size = 0;  // CL_DEVICE_MAX_WORK_GROUP_SIZE
};

// Every OpenCL device of every platform. Errors (kUnavailable), each one line: no OpenCL
// library (opencl_api()), or no platform ("OpenCL library found but no platform ...: no OpenCL
// driver is registered (/etc/OpenCL/vendors)"). A platform with no device contributes nothing; a
// list that ends up empty is an error too ("no OpenCL device").
Result<std::vector<DeviceInfo>> list_devices();

// Where a model runs, as flags and fleet configs name it: "cpu" -> -1, "opencl" -> 0,
// "opencl:N" -> N (the numbering of list_devices()). Errors: kInvalidArgument naming the
// accepted forms. The inverse: device_flag_name.
Result<int> parse_device_name(const std::string& name);
std::string device_flag_name(int device);

}  // namespace tessera::device
