#include "tessera/device/device_info.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "tessera/device/cl_error.h"
#include "tessera/device/device_context.h"
#include "tessera/device/opencl_api.h"

namespace tessera::device {
namespace {

std::string platform_string(const OpenClApi& cl, cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (cl.clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  if (cl.clGetPlatformInfo(p, what, n, s.data(), nullptr) != CL_SUCCESS) return "";
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string device_string(const OpenClApi& cl, cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (cl.clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  if (cl.clGetDeviceInfo(d, what, n, s.data(), nullptr) != CL_SUCCESS) return "";
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
T device_value(const OpenClApi& cl, cl_device_id d, cl_device_info what) {
  T v{};
  if (cl.clGetDeviceInfo(d, what, sizeof(T), &v, nullptr) != CL_SUCCESS) return T{};
  return v;
}

DeviceType to_type(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return DeviceType::kGpu;
  if (t & CL_DEVICE_TYPE_CPU) return DeviceType::kCpu;
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return DeviceType::kAccelerator;
  return DeviceType::kOther;
}

}  // namespace

const char* device_type_name(DeviceType type) {
  switch (type) {
    case DeviceType::kGpu: return "gpu";
    case DeviceType::kCpu: return "cpu";
    case DeviceType::kAccelerator: return "accelerator";
    case DeviceType::kOther: return "other";
  }
  return "other";
}

Result<std::vector<cl_device_id>> all_device_ids(const OpenClApi& cl) {
  cl_uint n_platforms = 0;
  const cl_int rc = cl.clGetPlatformIDs(0, nullptr, &n_platforms);
  // The ICD loader answers CL_PLATFORM_NOT_FOUND_KHR (-1001) when no driver is registered.
  if (rc != CL_SUCCESS || n_platforms == 0) {
    return Status(ErrorCode::kUnavailable,
                  fmt::format("OpenCL library found but no platform (clGetPlatformIDs: {}): no "
                              "OpenCL driver is registered ({})",
                              rc == CL_SUCCESS ? "0 platforms" : std::to_string(rc),
                              std::getenv("OCL_ICD_VENDORS") != nullptr
                                  ? "$OCL_ICD_VENDORS is " + std::string(std::getenv("OCL_ICD_VENDORS"))
                                  : std::string("/etc/OpenCL/vendors")));
  }
  std::vector<cl_platform_id> platforms(n_platforms);
  TS_RETURN_IF_ERROR(cl_status(cl.clGetPlatformIDs(n_platforms, platforms.data(), nullptr),
                               "clGetPlatformIDs"));
  std::vector<cl_device_id> out;
  for (cl_platform_id p : platforms) {
    cl_uint n_devices = 0;
    if (cl.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n_devices) != CL_SUCCESS ||
        n_devices == 0) {
      continue;  // CL_DEVICE_NOT_FOUND: a driver without a usable device here
    }
    std::vector<cl_device_id> ids(n_devices);
    if (cl.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n_devices, ids.data(), nullptr) != CL_SUCCESS) {
      continue;
    }
    out.insert(out.end(), ids.begin(), ids.end());
  }
  if (out.empty()) {
    return Status(ErrorCode::kUnavailable,
                  fmt::format("no OpenCL device: {} platform(s) found, none with a device",
                              n_platforms));
  }
  return out;
}

DeviceInfo describe_device(const OpenClApi& cl, cl_device_id d, int index) {
  DeviceInfo info;
  info.index = index;
  info.name = device_string(cl, d, CL_DEVICE_NAME);
  info.vendor = device_string(cl, d, CL_DEVICE_VENDOR);
  const auto platform = device_value<cl_platform_id>(cl, d, CL_DEVICE_PLATFORM);
  if (platform != nullptr) info.platform = platform_string(cl, platform, CL_PLATFORM_NAME);
  info.driver_version = device_string(cl, d, CL_DRIVER_VERSION);
  info.opencl_version = device_string(cl, d, CL_DEVICE_VERSION);
  info.type = to_type(device_value<cl_device_type>(cl, d, CL_DEVICE_TYPE));
  info.global_mem_bytes = device_value<cl_ulong>(cl, d, CL_DEVICE_GLOBAL_MEM_SIZE);
  info.max_alloc_bytes = device_value<cl_ulong>(cl, d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  info.local_mem_bytes = device_value<cl_ulong>(cl, d, CL_DEVICE_LOCAL_MEM_SIZE);
  info.compute_units = device_value<cl_uint>(cl, d, CL_DEVICE_MAX_COMPUTE_UNITS);
  info.max_clock_mhz = device_value<cl_uint>(cl, d, CL_DEVICE_MAX_CLOCK_FREQUENCY);
  info.max_work_group_size = device_value<size_t>(cl, d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  return info;
}

Result<std::vector<DeviceInfo>> list_devices() {
  TS_ASSIGN_OR_RETURN(const OpenClApi* cl, opencl_api());
  TS_ASSIGN_OR_RETURN(std::vector<cl_device_id> ids, all_device_ids(*cl));
  std::vector<DeviceInfo> out;
  for (size_t i = 0; i < ids.size(); ++i) {
    out.push_back(describe_device(*cl, ids[i], static_cast<int>(i)));
  }
  return out;
}

Result<int> parse_device_name(const std::string& name) {
  if (name == "cpu") return -1;
  if (name == "opencl") return 0;
  if (name.starts_with("opencl:")) {
    const std::string n = name.substr(7);
    if (!n.empty() && n.size() <= 4 && n.find_first_not_of("0123456789") == std::string::npos) {
      return std::stoi(n);
    }
  }
  return invalid_argument(fmt::format("device '{}': expected cpu, opencl or opencl:N (N from "
                                      "`tessera info --devices`)",
                                      name));
}

std::string device_flag_name(int device) {
  return device < 0 ? "cpu" : fmt::format("opencl:{}", device);
}

}  // namespace tessera::device
