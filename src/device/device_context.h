// The state one opened OpenCL device shares with everything made on it: the context, its one
// in-order queue and the byte accounting of its buffers. Buffers, programs, kernels and events
// hold a shared_ptr to it, so none outlives the context it was made in. Internal to the device
// layer. Thread-safety: the counters are atomic; the OpenCL handles are thread-safe objects
// (OpenCL 1.2, appendix A.2).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "tessera/device/device_info.h"
#include "tessera/device/opencl_api.h"

namespace tessera::device {

struct DeviceContext {
  const OpenClApi* cl = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  DeviceInfo info;
  std::atomic<uint64_t> bytes_in_use{0};
  std::atomic<uint64_t> peak_bytes{0};
  std::atomic<uint64_t> n_buffers{0};

  DeviceContext() = default;
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;
  ~DeviceContext();

  void add_bytes(uint64_t bytes);
  void sub_bytes(uint64_t bytes);
};

// The cl_device_id of every device, in list_devices()'s order (device_info.cpp).
Result<std::vector<cl_device_id>> all_device_ids(const OpenClApi& cl);
// The properties of `d`, reported as entry `index` of list_devices().
DeviceInfo describe_device(const OpenClApi& cl, cl_device_id d, int index);

}  // namespace tessera::device
