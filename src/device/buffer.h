// A block of device memory (one cl_mem), owned: freed, and subtracted from its device's byte
// accounting (Device::memory()), when the Buffer is destroyed. Move-only; a moved-from or
// default Buffer is empty. Made by Device::alloc.
// Thread-safety: a Buffer is a value owned by one thread at a time; what the device reads and
// writes in it is ordered by the device's queue.
#pragma once

#include <cstddef>
#include <memory>

#include "tessera/device/opencl_api.h"

namespace tessera::device {

struct DeviceContext;

class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  size_t bytes() const { return bytes_; }
  bool empty() const { return mem_ == nullptr; }
  cl_mem handle() const { return mem_; }  // for the device layer's own calls

 private:
  friend class Device;
  Buffer(std::shared_ptr<DeviceContext> ctx, cl_mem mem, size_t bytes)
      : ctx_(std::move(ctx)), mem_(mem), bytes_(bytes) {}
  void release();

  std::shared_ptr<DeviceContext> ctx_;
  cl_mem mem_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace tessera::device
